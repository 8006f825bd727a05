package ollama

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/engine/grammar"
	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/chatparse"
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
	call, err := h.runner().PrepareChat(&req)
	if err != nil {
		return err
	}
	return serve(c, req.Stream, call, (*Stream).ChatFinal, func(d chatparse.Delta) any {
		return api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(),
			Message: api.Message{Role: "assistant", Content: d.Content, Thinking: d.Thinking, ToolCalls: apiToolCalls(d.ToolCalls)}}
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
