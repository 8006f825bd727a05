package server

import (
	"context"
	"errors"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/flight"
)

// StatusClientClosedRequest is the status logged and counted for a
// request whose client went away before it was answered: Nginx's 499.
// It is never sent (there is no one to send it to).
const StatusClientClosedRequest = 499

// clientGone reports whether the client of a request closed its
// connection (or its HTTP/2 stream) before it got its answer: the
// request's own context (ctx, net/http's) is cancelled while the handler
// runs, and nothing was written, or what was written is an error the
// cancellation caused, or the request never got to its first token
// (slot's phase: waiting for its model, rendered, or queued on the
// runner; a stream's headers and OpenAI's first chunk go out before
// that). Such a request would otherwise count as the 500 its handler
// made of the cancellation, or as an answered 200, and anyone could
// inflate the server's error rate. A stream cut after its first token
// keeps its 200: the client got part of an answer.
func clientGone(ctx context.Context, res *echo.Response, slot *flight.Slot) bool {
	if !errors.Is(ctx.Err(), context.Canceled) || bodyCut(ctx) {
		return false
	}
	switch slot.Phase() {
	case flight.Queued, flight.Rendering, flight.Prefill:
		return true
	}
	return !res.Committed || res.Size == 0 || res.Status >= 500
}
