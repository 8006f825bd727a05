package openai

import (
	"bytes"
	"encoding/json"
	"errors"

	"net/http"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// llama-server's utility endpoints, which its users script against:
// POST /tokenize, /detokenize and /apply-template, in its request and
// answer shapes (tools/server/README.md), with OpenAI's error shape as
// llama-server has it. Tadpole serves many models, so each request names
// one in "model" (as llama-server's router mode asks); it is loaded if
// need be.

// MaxTokenizeTokens bounds the tokens one /tokenize answers (and one
// /detokenize reads): a 10 MiB body of bytes a vocabulary splits one by
// one would otherwise answer some 300 MB of JSON with its pieces. No
// model's context comes near it.
const MaxTokenizeTokens = 1 << 20

// RegisterLlamaServer adds llama-server's /tokenize, /detokenize and
// /apply-template, each a group with Errors first (OpenAI's shape for its
// errors, 404 and 405).
func (h *Handler) RegisterLlamaServer(e *echo.Echo) {
	dialect.Route(e.Group("/tokenize", Errors), http.MethodPost, "", h.tokenize)
	dialect.Route(e.Group("/detokenize", Errors), http.MethodPost, "", h.detokenize)
	dialect.Route(e.Group("/apply-template", Errors), http.MethodPost, "", h.applyTemplate)
}

// TokenizeRequest is the body of POST /tokenize.
type TokenizeRequest struct {
	Model string `json:"model"`
	// Content is a string, or an array of strings and token ids
	// (llama-server's mixed prompt); none: no tokens.
	Content    json.RawMessage `json:"content"`
	AddSpecial bool            `json:"add_special"`
	// ParseSpecial (default true, as llama-server) lets special tokens
	// written in the text become their ids.
	ParseSpecial *bool `json:"parse_special"`
	WithPieces   bool  `json:"with_pieces"`
}

// TokenPiece is a token of a with_pieces answer: its piece is a string
// when it is valid UTF-8, else its bytes.
type TokenPiece struct {
	ID    int `json:"id"`
	Piece any `json:"piece"`
}

// DetokenizeRequest is the body of POST /detokenize.
type DetokenizeRequest struct {
	Model  string `json:"model"`
	Tokens []int  `json:"tokens"`
}

// vocabOf loads model and runs f with it.
func (h *Handler) vocabOf(c echo.Context, model string, f func(m infer.Vocab) error) error {
	if model == "" {
		return invalid("model", "you must provide a model parameter")
	}
	c.Set("model", model)
	opts, err := h.options(model, -1)
	if err != nil {
		return err
	}
	err = h.Infer.WithVocab(c.Request().Context(), infer.Target{Model: model, Options: opts}, f)
	if e := (*dialect.Error)(nil); err != nil && !errors.As(err, &e) {
		return inferError(err, model) // not f's own answer
	}
	return err
}

func (h *Handler) tokenize(c echo.Context) error {
	var req TokenizeRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	parts, err := mixedContent(req.Content)
	if err != nil {
		return err
	}
	parse := req.ParseSpecial == nil || *req.ParseSpecial
	var toks []infer.Token
	var pieces []TokenPiece
	err = h.vocabOf(c, req.Model, func(m infer.Vocab) error {
		for i, p := range parts {
			if p.text == nil {
				if p.id < 0 || p.id >= m.VocabSize() {
					return invalid("content", "Invalid 'content[%d]': token %d is not in the model's vocabulary (0..%d).", i, p.id, m.VocabSize()-1)
				}
				toks = append(toks, infer.Token(p.id))
			} else {
				// Special tokens (BOS) only at the start, as llama-server
				// adds them to the first text part only.
				t, err := m.Tokenize(*p.text, req.AddSpecial && i == 0, parse)
				if err != nil {
					return inferError(infer.Errorf(infer.BadRequest, "%v", err), req.Model)
				}
				toks = append(toks, t...)
			}
			if len(toks) > MaxTokenizeTokens {
				return invalid("content", "Invalid 'content': it is more than %d tokens, the most one request may tokenize.", MaxTokenizeTokens)
			}
		}
		if req.WithPieces {
			pieces = make([]TokenPiece, len(toks))
			for i, t := range toks {
				b := m.TokenPiece(t, true)
				pieces[i] = TokenPiece{ID: int(t), Piece: pieceJSON(b)}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if req.WithPieces {
		return c.JSON(http.StatusOK, map[string]any{"tokens": pieces})
	}
	ids := make([]int, len(toks))
	for i, t := range toks {
		ids[i] = int(t)
	}
	return c.JSON(http.StatusOK, map[string]any{"tokens": ids})
}

// pieceJSON is a piece as llama-server writes it: a string when it is
// valid UTF-8, else the list of its bytes.
func pieceJSON(b []byte) any {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// mixedPart is a string or a token id of a mixed prompt.
type mixedPart struct {
	text *string
	id   int
}

// mixedContent reads /tokenize's content: a string, or an array of
// strings and token ids; absent or null is no parts.
func mixedContent(raw json.RawMessage) ([]mixedPart, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []mixedPart{{text: &s}}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, invalid("content", "Invalid type for 'content': expected a string or an array of strings and token ids.")
	}
	parts := make([]mixedPart, len(items))
	for i, it := range items {
		var s string
		var id int64
		switch {
		case json.Unmarshal(it, &s) == nil:
			parts[i].text = &s
		case json.Unmarshal(it, &id) == nil && id >= -1<<31 && id < 1<<31:
			parts[i].id = int(id)
		default:
			return nil, invalid("content", "Invalid 'content[%d]': expected a string or a token id.", i)
		}
	}
	return parts, nil
}

func (h *Handler) detokenize(c echo.Context) error {
	var req DetokenizeRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if len(req.Tokens) > MaxTokenizeTokens {
		return invalid("tokens", "Invalid 'tokens': %d tokens, at most %d.", len(req.Tokens), MaxTokenizeTokens)
	}
	var content string
	err := h.vocabOf(c, req.Model, func(m infer.Vocab) error {
		toks := make([]infer.Token, len(req.Tokens))
		for i, t := range req.Tokens {
			if t < 0 || t >= m.VocabSize() {
				return invalid("tokens", "Invalid 'tokens[%d]': token %d is not in the model's vocabulary (0..%d).", i, t, m.VocabSize()-1)
			}
			toks[i] = infer.Token(t)
		}
		// Special tokens as their text, as llama-server writes them.
		content = m.Detokenize(toks, true)
		return nil
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"content": content})
}

// applyTemplate renders a chat request (/v1/chat/completions' body:
// messages, tools, chat_template_kwargs, reasoning_effort, …) through
// the model's chat template, as the generation would, without
// generating: {"prompt": "…"}.
func (h *Handler) applyTemplate(c echo.Context) error {
	var req ChatRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	c.Set("model", req.Model)
	reqs, _, err := h.prepareChat(c.Request().Context(), &req)
	if err != nil {
		return err
	}
	prompt, err := h.Infer.ApplyTemplate(c.Request().Context(), reqs[0])
	if err != nil {
		return inferError(err, req.Model)
	}
	return c.JSON(http.StatusOK, map[string]string{"prompt": prompt})
}
