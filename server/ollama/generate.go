package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// prepare checks the model name of a decoded request, notes it for the
// request log and metrics, and applies its options over the model's
// (Ollama's defaults with the model's PARAMETER values).
func (h *Handler) prepare(c echo.Context, model string, m map[string]any) (api.Options, error) {
	if model == "" {
		return api.Options{}, errorf(http.StatusBadRequest, "model is required")
	}
	c.Set("model", model)
	opts, err := h.Infer.ModelOptions(model)
	if err != nil {
		return opts, inferError(err)
	}
	unknown, err := opts.Apply(m)
	if err != nil {
		return opts, errorf(http.StatusBadRequest, "%v", err)
	}
	if len(unknown) > 0 {
		slog.Warn("ignoring unknown options", "options", unknown)
	}
	return opts, nil
}

func keepAlive(d *api.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	return &d.Duration
}

func (h *Handler) generate(c echo.Context) error {
	start := time.Now()
	var req api.GenerateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	opts, err := h.prepare(c, req.Model, req.Options)
	if err != nil {
		return err
	}
	if len(req.Images) > 0 {
		return errorf(http.StatusBadRequest, "model %q does not support images", req.Model)
	}
	grammar, err := formatGrammar(req.Format)
	if err != nil {
		return err
	}
	ireq := &infer.Request{
		Model: req.Model, Prompt: req.Prompt, System: req.System, Template: req.Template, Raw: req.Raw, Grammar: grammar,
		Context: req.Context, Options: opts, KeepAlive: keepAlive(req.KeepAlive), Truncate: req.Truncate, Shift: req.Shift,
	}
	in, err := h.Infer.Acquire(c.Request().Context(), req.Model, opts, ireq.KeepAlive)
	if err != nil {
		return inferError(err)
	}
	defer in.Release()
	if req.Prompt == "" && len(req.Context) == 0 {
		return c.JSON(http.StatusOK, api.GenerateResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: loadReason(ireq.KeepAlive)})
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	events, err := h.Infer.Start(ctx, in, ireq)
	if err != nil {
		return inferError(err)
	}
	final := func(ev runner.Event) api.GenerateResponse {
		ctxTokens := make([]int, len(ev.Tokens))
		for i, t := range ev.Tokens {
			ctxTokens[i] = int(t)
		}
		return api.GenerateResponse{
			Model: req.Model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: ev.DoneReason, Context: ctxTokens,
			Metrics: metrics(ev, start, in.LoadDuration),
		}
	}
	if req.Stream != nil && !*req.Stream {
		var text bytes.Buffer
		for ev := range events {
			text.WriteString(ev.Text)
			if ev.Done {
				if ev.Err != nil {
					return errorf(http.StatusInternalServerError, "%v", ev.Err)
				}
				resp := final(ev)
				resp.Response = text.String()
				return c.JSON(http.StatusOK, resp)
			}
		}
		return errorf(http.StatusInternalServerError, "generation ended without a result")
	}
	return streamNDJSON(c, events, func(ev runner.Event) any {
		if ev.Done {
			if ev.Err != nil {
				return api.ErrorResponse{Error: ev.Err.Error()}
			}
			resp := final(ev)
			resp.Response = ev.Text
			return resp
		}
		return api.GenerateResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Response: ev.Text}
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
func metrics(ev runner.Event, start time.Time, load time.Duration) api.Metrics {
	return api.Metrics{
		TotalDuration: time.Since(start), LoadDuration: load,
		PromptEvalCount: ev.Stats.PromptEvalCount, PromptEvalDuration: ev.Stats.PromptEvalDuration,
		EvalCount: ev.Stats.EvalCount, EvalDuration: ev.Stats.EvalDuration,
	}
}

// streamNDJSON writes one JSON line per event and flushes it at once.
func streamNDJSON(c echo.Context, events <-chan runner.Event, line func(runner.Event) any) error {
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for ev := range events {
		if err := enc.Encode(line(ev)); err != nil {
			return nil // client went away; the runner sees the cancelled context
		}
		w.Flush()
	}
	return nil
}
