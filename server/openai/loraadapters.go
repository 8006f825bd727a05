package openai

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// LoRAAdapter is one element of llama-server's /lora-adapters list, with
// the adapter's size.
type LoRAAdapter struct {
	ID    int     `json:"id"`
	Path  string  `json:"path"`
	Scale float32 `json:"scale"`
	Bytes uint64  `json:"bytes"`
}

// LoRAScale is one element of a POST /lora-adapters body.
type LoRAScale struct {
	ID    *int     `json:"id"`
	Scale *float64 `json:"scale"`
}

// LoRALoadRequest is the body of POST /lora-adapters/load.
type LoRALoadRequest struct {
	Model string `json:"model"`
	Name  string `json:"name"` // a model of the store made with ADAPTER over Model's base
}

// RegisterLoRA adds llama-server's GET and POST /lora-adapters (the
// adapters loaded on a model's instance, and the scales requests naming
// none get) and POST /lora-adapters/load (load a store model's adapter
// onto a loaded base while it serves). The model is the query's
// ?model=…, as llama-server serves one model and Tadpole many.
func (h *Handler) RegisterLoRA(e *echo.Echo) {
	g := e.Group("/lora-adapters", Errors)
	g.GET("", h.listLoRA)
	g.POST("", h.setLoRA)
	for _, m := range []string{http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		g.Add(m, "", dialect.MethodNotAllowed("GET, POST"))
	}
	dialect.Route(g, http.MethodPost, "/load", h.loadLoRA)
}

func loraList(l []infer.LoRAAdapter) []LoRAAdapter {
	out := make([]LoRAAdapter, len(l))
	for i, a := range l {
		out[i] = LoRAAdapter{ID: a.ID, Path: a.Path, Scale: a.Scale, Bytes: a.Bytes}
	}
	return out
}

func loraModel(c echo.Context) (string, error) {
	m := c.QueryParam("model")
	if m == "" {
		return "", invalid("model", "Missing query parameter 'model': /lora-adapters?model=NAME names the model whose instance's adapters to list or set.")
	}
	c.Set("model", m)
	return m, nil
}

func (h *Handler) listLoRA(c echo.Context) error {
	model, err := loraModel(c)
	if err != nil {
		return err
	}
	l, err := h.Infer.LoRAAdapters(c.Request().Context(), model)
	if err != nil {
		return inferError(err, model)
	}
	return c.JSON(http.StatusOK, loraList(l))
}

func (h *Handler) setLoRA(c echo.Context) error {
	model, err := loraModel(c)
	if err != nil {
		return err
	}
	var body []LoRAScale
	raw, err := io.ReadAll(c.Request().Body) // bounded by the server's body limit
	if err != nil {
		if errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return err
		}
		return invalid("", "could not read the request body: %v", err)
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return invalid("", `The body must be a list of {"id": N, "scale": S}: %v`, err)
	}
	scales := map[int]float32{}
	for i, s := range body {
		if s.ID == nil {
			return invalid("id", "Invalid '[%d]': an id is required (GET /lora-adapters lists them).", i)
		}
		sc := 1.0
		if s.Scale != nil {
			sc = *s.Scale
		}
		if _, dup := scales[*s.ID]; dup {
			return invalid("id", "Invalid '[%d]': adapter %d is in the list twice.", i, *s.ID)
		}
		if sc != sc || sc > infer.MaxLoRAScale || sc < -infer.MaxLoRAScale {
			return invalid("scale", "Invalid '[%d].scale': %v is out of range (-%d..%d).", i, sc, infer.MaxLoRAScale, infer.MaxLoRAScale)
		}
		scales[*s.ID] = float32(sc)
	}
	l, err := h.Infer.SetLoRAScales(c.Request().Context(), model, scales)
	if err != nil {
		return inferError(err, model)
	}
	return c.JSON(http.StatusOK, loraList(l))
}

func (h *Handler) loadLoRA(c echo.Context) error {
	var req LoRALoadRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Model == "" || req.Name == "" {
		return invalid("model", "Both 'model' (the loaded base) and 'name' (a model made with ADAPTER over it) are required.")
	}
	c.Set("model", req.Model)
	l, err := h.Infer.LoadLoRA(c.Request().Context(), req.Model, req.Name)
	if err != nil {
		return inferError(err, req.Model)
	}
	return c.JSON(http.StatusOK, loraList(l))
}
