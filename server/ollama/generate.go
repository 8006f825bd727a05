package ollama

import (
	"encoding/json"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// prepare checks the model name of a decoded request, notes it for the
// request log and metrics, and applies its options over the model's
// (Ollama's defaults with the model's PARAMETER values).
func (h *Handler) prepare(c echo.Context, model string, m map[string]any) (api.Options, error) {
	if model != "" {
		c.Set("model", model)
	}
	return options(h.Infer, model, m)
}

func keepAlive(d *api.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	return &d.Duration
}

// runner runs the handler's requests at interactive priority.
func (h *Handler) runner() Runner { return Runner{Infer: h.Infer} }

func (h *Handler) generate(c echo.Context) error {
	var req api.GenerateRequest
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
	return serve(c, req.Stream, call, (*Stream).GenerateFinal, func(d chatparse.Delta) any {
		return api.GenerateResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Response: d.Content, Thinking: d.Thinking}
	})
}

// loadReason is the done_reason of a load-only request.
func loadReason(keepAlive *time.Duration) string {
	if keepAlive != nil && *keepAlive == 0 {
		return "unload"
	}
	return "load"
}

// metrics are Ollama's statistics of a finished request.
func metrics(ev infer.Event, start time.Time, load time.Duration) api.Metrics {
	return api.Metrics{
		TotalDuration: time.Since(start), LoadDuration: load,
		PromptEvalCount: ev.Stats.PromptEvalCount, PromptEvalDuration: ev.Stats.PromptEvalDuration,
		EvalCount: ev.Stats.EvalCount, EvalDuration: ev.Stats.EvalDuration,
	}
}

// streamNDJSON writes one JSON line per event (none where line returns
// nil). The lines of all events queued since the last write go out in
// one write and one flush: when the client (or this goroutine) is slower
// than the model, tokens are coalesced instead of queuing up behind one
// flush each.
func streamNDJSON(c echo.Context, s *Stream, line func(infer.Event) any) error {
	w := dialect.NewStreamWriter(c, "application/x-ndjson")
	enc := json.NewEncoder(w.Buffer())
	var buf []infer.Event
	for {
		var err error
		buf, err = s.Recv(buf[:0])
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
