package ollama

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/ollamagen"
)

// Handler serves the Ollama routes.
type Handler struct {
	Store *models.Store
	Infer Inference
	// AllowRegistries are the registries ("host" or "host:port") pulls
	// and pushes may reach at non-public addresses (--allow-registry).
	AllowRegistries []string
}

// Inference is what the Ollama routes call of the generation path:
// generate and chat through ollamagen, embeddings and rerank on an
// acquired instance, and the loaded models for /api/ps and
// /api/delete. *infer.Service is one; server/infer/infertest fakes it
// for the package's own tests.
type Inference interface {
	ollamagen.Inference
	Embed(ctx context.Context, t infer.Target, texts []string, truncate bool) (*infer.Embeddings, error)
	Rerank(ctx context.Context, t infer.Target, query string, docs []string) ([]float32, int, error)
	Loaded() []infer.Loaded
	KeepAlive() time.Duration
	PromptCache() (infer.CacheStats, bool)
	Unload(path string) (requests int)
}

var _ Inference = (*infer.Service)(nil)

// Register adds the routes to e.
func (h *Handler) Register(e *echo.Echo) {
	root := func(c echo.Context) error { return c.String(http.StatusOK, "Tadpole is running") }
	e.GET("/", root)
	e.HEAD("/", root)
	e.GET("/api/version", func(c echo.Context) error {
		return c.JSON(http.StatusOK, ollamaapi.VersionResponse{Version: infer.Version()})
	})
	e.POST("/api/generate", h.generate)
	e.POST("/api/chat", h.chat)
	e.POST("/api/embed", h.embed)
	e.POST("/api/embeddings", h.embeddings)
	e.POST("/api/rerank", h.rerank)
	e.GET("/api/ps", h.ps)
	e.GET("/api/tags", h.tags)
	e.HEAD("/api/tags", h.tags)
	e.POST("/api/show", h.show)
	e.POST("/api/create", h.create)
	e.POST("/api/copy", h.copyModel)
	e.DELETE("/api/delete", h.deleteModel)
	e.HEAD("/api/blobs/:digest", h.headBlob)
	e.POST("/api/blobs/:digest", h.postBlob)
	e.POST("/api/pull", h.pull)
	e.POST("/api/push", h.push)
}

// ErrorHandler writes every error as Ollama's {"error": "..."} with its
// status code (and Retry-After where the error has one).
func ErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	_ = dialect.WriteAs(c, dialect.Ollama, dialect.From(err))
}

func errorf(code int, format string, args ...any) error {
	return dialect.Errorf(code, format, args...)
}

// decode reads a JSON body into v (dialect.Decode), answering 400 with
// a readable message.
func decode(c echo.Context, v any) error {
	return dialect.Decode(c, v, dialect.OllamaWords)
}

// inferError maps the generation path's errors to Ollama's status codes.
func inferError(err error) error {
	return dialect.FromInfer(err)
}
