package ollama

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/infer"
)

var chatRoles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

func (h *Handler) chat(c echo.Context) error {
	start := time.Now()
	var req api.ChatRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	opts, err := h.prepare(c, req.Model, req.Options)
	if err != nil {
		return err
	}
	grammar, err := formatGrammar(req.Format)
	if err != nil {
		return err
	}
	ireq := &infer.Request{
		Model: req.Model, Chat: true, Options: opts, KeepAlive: keepAlive(req.KeepAlive),
		Grammar: grammar, Truncate: req.Truncate, Shift: req.Shift,
	}
	for i, m := range req.Messages {
		if !chatRoles[m.Role] {
			return errorf(http.StatusBadRequest, "messages[%d]: invalid role %q (system, user, assistant or tool)", i, m.Role)
		}
		if len(m.Images) > 0 {
			return errorf(http.StatusBadRequest, "model %q does not support images", req.Model)
		}
		ireq.Messages = append(ireq.Messages, infer.Message{Role: m.Role, Content: m.Content})
	}
	in, err := h.Infer.Acquire(c.Request().Context(), req.Model, opts, ireq.KeepAlive)
	if err != nil {
		return inferError(err)
	}
	defer in.Release()
	if len(req.Messages) == 0 {
		return c.JSON(http.StatusOK, api.ChatResponse{
			Model: req.Model, CreatedAt: time.Now().UTC(), Message: api.Message{Role: "assistant"},
			Done: true, DoneReason: loadReason(ireq.KeepAlive),
		})
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	events, err := h.Infer.Start(ctx, in, ireq)
	if err != nil {
		return inferError(err)
	}
	final := func(ev runner.Event, content string) api.ChatResponse {
		return api.ChatResponse{
			Model: req.Model, CreatedAt: time.Now().UTC(), Message: api.Message{Role: "assistant", Content: content},
			Done: true, DoneReason: ev.DoneReason, Metrics: metrics(ev, start, in.LoadDuration),
		}
	}
	if req.Stream != nil && !*req.Stream {
		var text strings.Builder
		for ev := range events {
			text.WriteString(ev.Text)
			if ev.Done {
				if ev.Err != nil {
					return errorf(http.StatusInternalServerError, "%v", ev.Err)
				}
				return c.JSON(http.StatusOK, final(ev, text.String()))
			}
		}
		return errorf(http.StatusInternalServerError, "generation ended without a result")
	}
	return streamNDJSON(c, events, func(ev runner.Event) any {
		if ev.Done {
			if ev.Err != nil {
				return api.ErrorResponse{Error: ev.Err.Error()}
			}
			return final(ev, ev.Text)
		}
		return api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Message: api.Message{Role: "assistant", Content: ev.Text}}
	})
}

// formatGrammar turns Ollama's format ("json" or a JSON schema) into a
// grammar.
func formatGrammar(format []byte) (string, error) {
	f := bytes.TrimSpace(format)
	if len(f) == 0 || string(f) == `""` || string(f) == "null" {
		return "", nil
	}
	return "", errorf(http.StatusBadRequest, "format is not supported yet")
}
