package ollama

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/ollamagen"
)

// prepare checks the model name of a decoded request, notes it for the
// request log and metrics, and applies its options over the model's
// (Ollama's defaults with the model's PARAMETER values).
func (h *Handler) prepare(c echo.Context, model string, m map[string]any) (ollamaapi.Options, error) {
	if model != "" {
		c.Set("model", model)
	}
	return ollamagen.Options(h.Infer, model, ollamaapi.DefaultOptions(), m)
}

// runner runs the handler's requests at interactive priority.
func (h *Handler) runner() ollamagen.Runner { return ollamagen.Runner{Infer: h.Infer} }

func (h *Handler) generate(c echo.Context) error {
	var req ollamaapi.GenerateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Model != "" {
		c.Set("model", req.Model)
	}
	call, err := h.runner().PrepareGenerate(&req)
	if err != nil {
		return err
	}
	return serve(c, req.Stream, call, (*ollamagen.Stream).GenerateFinal, func(d chatparse.Delta) any {
		return ollamaapi.GenerateResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Response: d.Content, Thinking: d.Thinking}
	})
}

// streamNDJSON writes one JSON line per event (none where line returns
// nil). The lines of all events queued since the last write go out in
// one write and one flush: when the client (or this goroutine) is slower
// than the model, tokens are coalesced instead of queuing up behind one
// flush each.
func streamNDJSON(c echo.Context, s *ollamagen.Stream, line func(infer.Event) any) error {
	w := dialect.NewStreamWriter(c, "application/x-ndjson")
	enc := json.NewEncoder(w.Buffer())
	var buf []infer.Event
	for {
		var err error
		buf, err = s.Next(buf[:0])
		for _, ev := range buf {
			if l := line(ev); l != nil {
				if err := enc.Encode(l); err != nil {
					return err
				}
			}
		}
		if w.Flush() != nil {
			return nil // the client went away or stopped reading; closing the stream cancels the generation
		}
		if err != nil {
			return nil // the final event was written, or the client went away
		}
	}
}

// serve answers a call over HTTP: the whole answer when not streaming,
// else NDJSON lines (chunk for each decided piece, the final answer last,
// or an error line).
func serve[T any](c echo.Context, stream *bool, call *ollamagen.Call, final func(*ollamagen.Stream, infer.Event, chatparse.Delta) T, chunk func(chatparse.Delta) any) error {
	ctx := c.Request().Context()
	if stream != nil && !*stream {
		resp, err := ollamagen.RunToEnd(ctx, call, final)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, resp)
	}
	s, err := call.Start(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if s.LoadOnly() {
		return c.JSON(http.StatusOK, final(s, infer.Event{}, chatparse.Delta{}))
	}
	return streamNDJSON(c, s, func(ev infer.Event) any {
		d := ev.Delta
		if !ev.Done {
			if d.Empty() {
				return nil // held back by the parser: nothing decided yet
			}
			return chunk(d)
		}
		if ev.Err != nil {
			return ollamaapi.ErrorResponse{Error: ev.Err.Error()}
		}
		return final(s, ev, d)
	})
}
