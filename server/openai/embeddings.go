package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/infer"
)

// embeddings serves POST /v1/embeddings: one pooled, normalised
// embedding per input text.
func (h *Handler) embeddings(c echo.Context) error {
	var req EmbeddingRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Model == "" {
		return invalid("model", "you must provide a model parameter")
	}
	c.Set("model", req.Model)
	inputs, err := embeddingInputs(req.Input)
	if err != nil {
		return err
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return invalid("encoding_format", "Invalid value for 'encoding_format': %q. Supported values are: 'float' and 'base64'.", req.EncodingFormat)
	}
	if req.Dimensions != nil && *req.Dimensions < 1 {
		return invalid("dimensions", "Invalid 'dimensions': %d. Expected a value >= 1.", *req.Dimensions)
	}
	opts, err := h.options(req.Model, -1)
	if err != nil {
		return err
	}
	embs, err := h.Infer.Embed(c.Request().Context(), infer.Target{Model: req.Model, Options: opts}, inputs, true)
	if err != nil {
		return inferError(err, req.Model)
	}
	out := EmbeddingList{Object: "list", Model: req.Model, Data: make([]Embedding, len(embs.Vectors))}
	for i, e := range embs.Vectors {
		if req.Dimensions != nil {
			if *req.Dimensions > len(e) {
				return invalid("dimensions", "Invalid 'dimensions': %d. Model '%s' has %d dimensions.", *req.Dimensions, req.Model, len(e))
			}
			e = infer.Renormalize(e[:*req.Dimensions])
		}
		var v any = e
		if req.EncodingFormat == "base64" {
			v = encodeBase64(e)
		}
		out.Data[i] = Embedding{Object: "embedding", Embedding: v, Index: i}
	}
	out.Usage.PromptTokens, out.Usage.TotalTokens = embs.Tokens, embs.Tokens
	return c.JSON(http.StatusOK, out)
}

// embeddingInputs reads input: a string or an array of strings, none
// empty. Token arrays are refused: the embedding path takes text.
func embeddingInputs(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("input", "Missing required parameter: 'input'.")
	}
	var texts []string
	var one string
	if json.Unmarshal(raw, &one) == nil {
		texts = []string{one}
	} else if json.Unmarshal(raw, &texts) != nil {
		var tokens []json.Number
		var lists [][]json.Number
		if json.Unmarshal(raw, &tokens) == nil || json.Unmarshal(raw, &lists) == nil {
			return nil, notSupported("input", "Token arrays as embedding input are not supported: send text.")
		}
		return nil, invalid("input", "Invalid type for 'input': expected a string or an array of strings.")
	}
	if len(texts) == 0 {
		return nil, invalid("input", "Invalid 'input': empty array. Expected an array with at least one string.")
	}
	for i, t := range texts {
		if t == "" {
			return nil, invalid("input", "Invalid 'input[%d]': empty string.", i)
		}
	}
	return texts, nil
}

// encodeBase64 is OpenAI's base64 encoding: the little-endian float32
// bytes.
func encodeBase64(e []float32) string {
	b := make([]byte, 4*len(e))
	for i, v := range e {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}
