package ollama

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/ollamagen"
	"github.com/tadpole-llm/tadpole/server/rerankapi"
)

// rerankRequest is rerankapi.Request with Ollama's keep_alive and
// options (its fields, not embedded, so decode errors name them plainly).
type rerankRequest struct {
	Model           string               `json:"model"`
	Query           *string              `json:"query"`
	Documents       []rerankapi.Document `json:"documents"`
	TopN            *int                 `json:"top_n,omitempty"`
	ReturnDocuments bool                 `json:"return_documents,omitempty"`
	KeepAlive       *ollamaapi.Duration  `json:"keep_alive,omitempty"`
	Options         map[string]any       `json:"options,omitempty"`
}

// rerank serves POST /api/rerank: the request and answer of /v1/rerank
// (Ollama has no rerank endpoint), errors in Ollama's shape.
func (h *Handler) rerank(c echo.Context) error {
	var raw rerankRequest
	if err := decode(c, &raw); err != nil {
		return err
	}
	req := rerankapi.Request{Model: raw.Model, Query: raw.Query, Documents: raw.Documents, TopN: raw.TopN, ReturnDocuments: raw.ReturnDocuments}
	if req.Model == "" {
		return errorf(http.StatusBadRequest, "model is required")
	}
	opts, err := h.prepare(c, req.Model, raw.Options)
	if err != nil {
		return err
	}
	if err := req.Check(); err != nil {
		return inferError(err)
	}
	target := infer.Target{Model: req.Model, Options: opts, KeepAlive: ollamagen.KeepAlive(raw.KeepAlive)}
	scores, tokens, err := h.Infer.Rerank(c.Request().Context(), target, *req.Query, req.Texts())
	if err != nil {
		return inferError(err)
	}
	return c.JSON(http.StatusOK, rerankapi.Results(&req, scores, tokens))
}
