package ollama

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/ollamagen"
)

func (h *Handler) chat(c echo.Context) error {
	var req ollamaapi.ChatRequest
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
	return serve(c, req.Stream, call, (*ollamagen.Stream).ChatFinal, func(d chatparse.Delta) any {
		return ollamaapi.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(),
			Message: ollamaapi.Message{Role: "assistant", Content: d.Content, Thinking: d.Thinking, ToolCalls: ollamagen.ToolCalls(d.ToolCalls)}}
	})
}
