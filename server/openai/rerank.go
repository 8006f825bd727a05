package openai

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/rerankapi"
)

// rerank serves POST /v1/rerank (llama-server's, Jina's and Cohere's
// request: model, query, documents as strings or {"text"}, top_n,
// return_documents): each document's relevance to the query scored by a
// reranker model, best first. A model that is not a reranker is a 400
// naming it, answered before the model is loaded.
func (h *Handler) rerank(c echo.Context) error {
	var req rerankapi.Request
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Model == "" {
		return invalid("model", "you must provide a model parameter")
	}
	c.Set("model", req.Model)
	if err := req.Check(); err != nil {
		return inferError(err, req.Model)
	}
	opts, err := h.options(req.Model, -1)
	if err != nil {
		return err
	}
	scores, tokens, err := h.Infer.Rerank(c.Request().Context(), infer.Target{Model: req.Model, Options: opts}, *req.Query, req.Texts())
	if err != nil {
		return inferError(err, req.Model)
	}
	return c.JSON(http.StatusOK, rerankapi.Results(&req, scores, tokens))
}
