package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"text/template"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/sched"
)

func (h *Handler) generate(c echo.Context) error {
	start := time.Now()
	var req api.GenerateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Model == "" {
		return errorf(http.StatusBadRequest, "model is required")
	}
	opts := api.DefaultOptions()
	unknown, err := opts.Apply(req.Options)
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	if len(unknown) > 0 {
		slog.Warn("ignoring unknown options", "options", unknown)
	}
	if len(req.Images) > 0 {
		return errorf(http.StatusBadRequest, "model %q does not support images", req.Model)
	}
	if f := bytes.TrimSpace(req.Format); len(f) > 0 && string(f) != `""` && string(f) != "null" {
		return errorf(http.StatusBadRequest, "format is not supported yet")
	}
	entry, err := h.Store.Resolve(req.Model)
	if err != nil {
		return modelError(req.Model, err)
	}
	keepAlive := h.Sched.Config().KeepAlive
	if req.KeepAlive != nil {
		keepAlive = req.KeepAlive.Duration
	}
	name := entry.Name.String()
	in, loadDur, err := h.Sched.Acquire(c.Request().Context(), name, sched.KeyFor(entry.Path, opts))
	if err != nil {
		return modelError(req.Model, err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			h.Sched.Release(in, keepAlive)
		}
	}
	defer release()

	if req.Prompt == "" && len(req.Context) == 0 {
		reason := "load"
		if keepAlive == 0 {
			reason = "unload"
		}
		return c.JSON(http.StatusOK, api.GenerateResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: reason})
	}
	tokens, err := h.generatePrompt(in.Model, &req)
	if err != nil {
		return err
	}
	rreq := runner.Request{
		Prompt:     tokens,
		Sampling:   samplerParams(opts),
		NumPredict: opts.NumPredict,
		NumKeep:    opts.NumKeep,
		Stop:       opts.Stop,
		NoTruncate: req.Truncate != nil && !*req.Truncate,
		NoShift:    req.Shift != nil && !*req.Shift,
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	events, err := in.Runner.Generate(ctx, rreq)
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	final := func(ev runner.Event) api.GenerateResponse {
		ctxTokens := make([]int, len(ev.Tokens))
		for i, t := range ev.Tokens {
			ctxTokens[i] = int(t)
		}
		return api.GenerateResponse{
			Model: req.Model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: ev.DoneReason, Context: ctxTokens,
			Metrics: api.Metrics{
				TotalDuration: time.Since(start), LoadDuration: loadDur,
				PromptEvalCount: ev.Stats.PromptEvalCount, PromptEvalDuration: ev.Stats.PromptEvalDuration,
				EvalCount: ev.Stats.EvalCount, EvalDuration: ev.Stats.EvalDuration,
			},
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

// generatePrompt renders and tokenizes /api/generate's prompt: raw prompts
// as given; otherwise through the request's template (Ollama's Go-template
// syntax), else the model's chat template as one user turn (after the
// system prompt), else the plain prompt (Ollama's default "{{ .Prompt }}"
// for models without a template). A context from an earlier answer goes
// first.
func (h *Handler) generatePrompt(m *engine.Model, req *api.GenerateRequest) ([]engine.Token, error) {
	text := req.Prompt
	switch {
	case req.Raw:
	case req.Template != "":
		t, err := template.New("prompt").Option("missingkey=zero").Parse(req.Template)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "invalid template: %v", err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, map[string]any{"System": req.System, "Prompt": req.Prompt, "Response": ""}); err != nil {
			return nil, errorf(http.StatusBadRequest, "template: %v", err)
		}
		text = b.String()
	case m.Meta.ChatTemplate != "":
		var msgs []engine.ChatMessage
		if req.System != "" {
			msgs = append(msgs, engine.ChatMessage{Role: "system", Content: req.System})
		}
		msgs = append(msgs, engine.ChatMessage{Role: "user", Content: req.Prompt})
		s, err := m.ApplyChatTemplate("", msgs, true)
		if err != nil {
			return nil, errorf(http.StatusInternalServerError, "%v", err)
		}
		text = s
	case req.System != "":
		text = req.System + "\n\n" + req.Prompt
	}
	var tokens []engine.Token
	for _, t := range req.Context {
		tokens = append(tokens, engine.Token(t))
	}
	more, err := m.Tokenize(text, len(tokens) == 0, true)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	return append(tokens, more...), nil
}

// samplerParams maps Ollama's options to the engine's sampler.
func samplerParams(o api.Options) engine.SamplerParams {
	return engine.SamplerParams{
		Seed: int64(o.Seed), Temperature: o.Temperature, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP,
		TypicalP: o.TypicalP, RepeatLastN: o.RepeatLastN, RepeatPenalty: o.RepeatPenalty,
		PresencePenalty: o.PresencePenalty, FrequencyPenalty: o.FrequencyPenalty,
		Mirostat: o.Mirostat, MirostatTau: o.MirostatTau, MirostatEta: o.MirostatEta,
	}
}
