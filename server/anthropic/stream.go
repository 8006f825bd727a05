package anthropic

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// pingEvery is how often a stream waiting for the model (a long prompt
// being read, a queue) sends a ping event, so that proxies and clients
// see it alive.
const pingEvery = 10 * time.Second

// stream answers with Anthropic's Server-Sent Events: message_start
// (the message with no content, the prompt's tokens in its usage), a
// ping, then per content block content_block_start, its
// content_block_deltas and content_block_stop, then message_delta (the
// stop reason, the stop sequence and the final usage) and message_stop.
// Pings go out while nothing else does. An error after the start is an
// "error" event, which ends the stream.
func (a *answer) stream(c echo.Context, st *infer.Stream, prompt int) error {
	w := newEvents(c)
	start := Message{ID: a.id, Type: "message", Role: "assistant", Model: a.model, Content: []ContentBlock{},
		Usage: Usage{InputTokens: prompt}}
	w.add("message_start", messageStart{Type: "message_start", Message: start})
	w.add("ping", typeOnly{Type: "ping"})
	if w.flush() != nil {
		return nil // the client left; the deferred cancel ends the generation
	}
	b := &blocks{out: w}
	tick := time.NewTicker(pingEvery)
	defer tick.Stop()
	var evs []infer.Event
	for {
		var err error
		var gone bool
		evs, gone, err = a.next(st, evs[:0], w, tick.C)
		if gone {
			return nil
		}
		for _, ev := range evs {
			b.add(ev.Delta)
			if !ev.Done {
				continue
			}
			if ev.Err != nil {
				w.fail(dialect.GenerationError(ev.Err))
				return nil
			}
			b.end()
			reason, seq := a.stopReason(ev, b.calls)
			w.add("message_delta", messageDelta{Type: "message_delta",
				Delta: messageDeltaBody{StopReason: &reason, StopSequence: seq}, Usage: usage(ev)})
			w.add("message_stop", typeOnly{Type: "message_stop"})
			_ = w.flush()
			return nil
		}
		if w.flush() != nil {
			return nil
		}
		if err != nil { // io.EOF before a final event
			w.fail(dialect.GenerationError(errEnded))
			return nil
		}
	}
}

// next appends the events queued on the generation, waiting for one if
// none is; while it waits it sends a ping at each tick. gone reports
// that the client left (its context ended, or a write failed).
func (a *answer) next(st *infer.Stream, dst []infer.Event, w *events, tick <-chan time.Time) ([]infer.Event, bool, error) {
	for {
		var err error
		if dst, err = st.TryNext(dst); len(dst) > 0 || err != nil {
			return dst, false, err
		}
		select {
		case <-st.Ready():
		case <-tick:
			w.add("ping", typeOnly{Type: "ping"})
			if w.flush() != nil {
				return dst, true, nil
			}
		case <-a.ctx.Done():
			return dst, true, nil
		}
	}
}

// events writes Anthropic's Server-Sent Events ("event: <type>",
// "data: <json>") through dialect.StreamWriter: add queues one, flush
// sends what is queued in one write. It is the stream's sink of content
// blocks.
type events struct {
	w   *dialect.StreamWriter
	enc *json.Encoder
	js  bytes.Buffer
}

func newEvents(c echo.Context) *events {
	e := &events{w: dialect.NewStreamWriter(c, "text/event-stream")}
	e.enc = json.NewEncoder(&e.js)
	e.enc.SetEscapeHTML(false)
	return e
}

// add queues the event name with v as its data. The event types cannot
// fail to encode.
func (e *events) add(name string, v any) {
	e.js.Reset()
	_ = e.enc.Encode(v)
	e.w.Event(name, bytes.TrimSuffix(e.js.Bytes(), []byte("\n")))
}

// flush sends the queued events; an error means the client left or
// stopped reading.
func (e *events) flush() error { return e.w.Flush() }

// fail ends a stream that has begun with an "error" event in Anthropic's
// shape.
func (e *events) fail(err *Error) {
	e.add("error", err.Anthropic())
	_ = e.flush()
}

func (e *events) start(i int, b ContentBlock) {
	e.add("content_block_start", blockStart{Type: "content_block_start", Index: i, ContentBlock: b})
}

func (e *events) delta(i int, d Delta) {
	e.add("content_block_delta", blockDelta{Type: "content_block_delta", Index: i, Delta: d})
}

func (e *events) stop(i int) {
	e.add("content_block_stop", blockStop{Type: "content_block_stop", Index: i})
}
