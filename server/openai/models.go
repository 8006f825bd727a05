package openai

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/models"
)

// model is the /v1/models entry of a store entry: its display name
// ("llama3:latest", "hf.co/someone/model:Q4_0") as id, its modification
// time as created, its namespace as owner.
func model(e models.Entry) Model {
	owner := e.Name.Namespace
	if owner == "" {
		owner = models.DefaultNamespace
	}
	return Model{ID: e.Name.String(), Object: "model", Created: e.Modified.Unix(), OwnedBy: owner}
}

// listModels serves GET /v1/models.
func (h *Handler) listModels(c echo.Context) error {
	entries, err := h.Store.List()
	if err != nil {
		return &Error{Status: http.StatusInternalServerError, Message: err.Error()}
	}
	out := ModelList{Object: "list", Data: make([]Model, 0, len(entries))}
	for _, e := range entries {
		out.Data = append(out.Data, model(e))
	}
	return c.JSON(http.StatusOK, out)
}

// getModel serves GET /v1/models/{model}; the name may hold slashes and
// colons, escaped or not.
func (h *Handler) getModel(c echo.Context) error {
	name := c.Param("*")
	if n, err := url.PathUnescape(name); err == nil {
		name = n
	}
	name = strings.TrimSuffix(name, "/")
	if name == "" {
		return h.listModels(c)
	}
	c.Set("model", name)
	e, err := h.Store.Resolve(name)
	if err != nil {
		return modelNotFound(name)
	}
	return c.JSON(http.StatusOK, model(e))
}
