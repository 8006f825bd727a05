package ollama

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/ollamarun"
)

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
	return serve(c, req.Stream, call, (*ollamarun.Stream).ChatFinal, func(d chatparse.Delta) any {
		return api.ChatResponse{Model: req.Model, CreatedAt: time.Now().UTC(),
			Message: api.Message{Role: "assistant", Content: d.Content, Thinking: d.Thinking, ToolCalls: ollamarun.ToolCalls(d.ToolCalls)}}
	})
}
