package ollama

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/engine/grammar"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/api"
)

var chatRoles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

func (h *Handler) chat(c echo.Context) error {
	var req api.ChatRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Model != "" {
		c.Set("model", req.Model)
	}
	ctx := c.Request().Context()
	if req.Stream != nil && !*req.Stream {
		resp, err := h.runner().Chat(ctx, &req)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, resp)
	}
	call, err := h.runner().PrepareChat(&req)
	if err != nil {
		return err
	}
	s, err := call.Start(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if s.Events == nil {
		return c.JSON(http.StatusOK, s.ChatFinal(runner.Event{}, ""))
	}
	return streamNDJSON(c, s.Events, func(ev runner.Event) any {
		if ev.Done {
			if ev.Err != nil {
				return api.ErrorResponse{Error: ev.Err.Error()}
			}
			return s.ChatFinal(ev, ev.Text)
		}
		return api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(), Message: api.Message{Role: "assistant", Content: ev.Text}}
	})
}

// formatGrammar turns Ollama's format ("json" or a JSON schema) into a
// grammar.
func formatGrammar(format []byte) (string, error) {
	g, err := grammar.FromFormat(format)
	if err != nil {
		return "", errorf(http.StatusBadRequest, "%v", err)
	}
	return g, nil
}
