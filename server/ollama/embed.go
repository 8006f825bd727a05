package ollama

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/ollamagen"
)

func (h *Handler) embed(c echo.Context) error {
	start := time.Now()
	var req ollamaapi.EmbedRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	opts, err := h.prepare(c, req.Model, req.Options)
	if err != nil {
		return err
	}
	inputs, err := embedInputs(req.Input)
	if err != nil {
		return err
	}
	if req.Dimensions < 0 {
		return errorf(http.StatusBadRequest, "dimensions must be positive")
	}
	target := infer.Target{Model: req.Model, Options: opts, KeepAlive: ollamagen.KeepAlive(req.KeepAlive)}
	embs, err := h.Infer.Embed(c.Request().Context(), target, inputs, req.Truncate == nil || *req.Truncate)
	if err != nil {
		return inferError(err)
	}
	// load_duration as Ollama has it: until the model was ready, loaded
	// by this request or not (always sent: the Vercel AI SDK requires it).
	resp := ollamaapi.EmbedResponse{Model: req.Model, Embeddings: [][]float32{}, LoadDuration: embs.Ready.Sub(start), PromptEvalCount: embs.Tokens}
	for _, e := range embs.Vectors {
		if req.Dimensions > 0 {
			if req.Dimensions > len(e) {
				return errorf(http.StatusBadRequest, "dimensions %d is more than the model's %d", req.Dimensions, len(e))
			}
			e = infer.Renormalize(e[:req.Dimensions])
		}
		resp.Embeddings = append(resp.Embeddings, e)
	}
	resp.TotalDuration = time.Since(start)
	return c.JSON(http.StatusOK, resp)
}

// embedInputs accepts a string or a list of strings; an empty string or
// list means "load the model only".
func embedInputs(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid input: want a string or a list of strings")
	}
	return many, nil
}

// embeddings is the legacy endpoint: one prompt, one embedding.
func (h *Handler) embeddings(c echo.Context) error {
	var req ollamaapi.EmbeddingRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	opts, err := h.prepare(c, req.Model, req.Options)
	if err != nil {
		return err
	}
	var prompts []string // none: load the model only
	if req.Prompt != "" {
		prompts = []string{req.Prompt}
	}
	target := infer.Target{Model: req.Model, Options: opts, KeepAlive: ollamagen.KeepAlive(req.KeepAlive)}
	embs, err := h.Infer.Embed(c.Request().Context(), target, prompts, true)
	if err != nil {
		return inferError(err)
	}
	resp := ollamaapi.EmbeddingResponse{Embedding: []float64{}}
	for _, e := range embs.Vectors {
		for _, v := range e {
			resp.Embedding = append(resp.Embedding, float64(v))
		}
	}
	return c.JSON(http.StatusOK, resp)
}
