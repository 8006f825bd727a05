package openai

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/openaisampling"
)

// Handler serves the OpenAI routes.
type Handler struct {
	Infer Inference
	Store *models.Store
}

// Inference is what the OpenAI routes call of the generation path:
// generations (chat, completions), instances for embeddings and rerank,
// the model's options and media limits, llama-server's template and
// LoRA routes. *infer.Service is one; server/infer/infertest fakes it
// for the package's own tests.
type Inference interface {
	Generate(ctx context.Context, reqs ...*infer.Request) (*infer.Generation, error)
	Embed(ctx context.Context, t infer.Target, texts []string, truncate bool) (*infer.Embeddings, error)
	Rerank(ctx context.Context, t infer.Target, query string, docs []string) ([]float32, int, error)
	WithVocab(ctx context.Context, t infer.Target, f func(infer.Vocab) error) error
	ModelOptionsFrom(model string, base ollamaapi.Options) (ollamaapi.Options, error)
	Limits() infer.MediaLimits
	ApplyTemplate(ctx context.Context, req *infer.Request) (string, error)
	LoRAAdapters(ctx context.Context, model string) ([]infer.LoRAAdapter, error)
	SetLoRAScales(ctx context.Context, model string, scales map[int]float32) ([]infer.LoRAAdapter, error)
	LoadLoRA(ctx context.Context, model, name string) ([]infer.LoRAAdapter, error)
}

var _ Inference = (*infer.Service)(nil)

// RegisterV1 adds the OpenAI API to a group at /v1 made with Errors as
// its first middleware: unknown paths under it then answer 404, and wrong
// methods 405, in OpenAI's shape too.
func (h *Handler) RegisterV1(g *echo.Group) {
	dialect.Route(g, http.MethodPost, "/chat/completions", func(c echo.Context) error { return h.chat(c, false) })
	dialect.Route(g, http.MethodPost, "/completions", h.completions)
	dialect.Route(g, http.MethodPost, "/embeddings", h.embeddings)
	dialect.Route(g, http.MethodPost, "/rerank", h.rerank)
	dialect.Route(g, http.MethodGet, "/models", h.listModels)
	// Model names hold slashes and colons ("hf.co/someone/model:Q4_0"),
	// escaped or not.
	dialect.Route(g, http.MethodGet, "/models/*", h.getModel)
}

// RegisterWebUI adds POST to a group at /api/chat/completions (Open
// WebUI's path): the OpenAI chat request, answered with ids
// "<model>-<uuid>" and Ollama's statistics in usage. The group, too, must
// have Errors first; middleware only this route needs goes after it, so
// its errors come back in OpenAI's shape as well.
func (h *Handler) RegisterWebUI(g *echo.Group) {
	dialect.Route(g, http.MethodPost, "", func(c echo.Context) error { return h.chat(c, true) })
}

// decode reads a JSON object into v (dialect.DecodeOpenAI).
func decode(c echo.Context, v any) error { return dialect.DecodeOpenAI(c, v) }

// options are the options a request to model starts from: Ollama's
// defaults with OpenAI's sampling defaults where they differ
// (temperature 1, top_p 1, no repeat penalty), then the model's
// own parameters (its Modelfile's PARAMETER lines). The request's fields
// go on top. numPredict is the endpoint's default token limit, which the
// model's num_predict parameter overrides. The model is resolved, and its
// parameters checked, by infer as for every door.
func (h *Handler) options(model string, numPredict int) (ollamaapi.Options, error) {
	base := ollamaapi.DefaultOptions()
	openaisampling.Defaults(&base)
	base.NumPredict = numPredict
	opts, err := h.Infer.ModelOptionsFrom(model, base)
	if err != nil {
		return opts, inferError(err, model)
	}
	return opts, nil
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
