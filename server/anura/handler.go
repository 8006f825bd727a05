package anura

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/ollamagen"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// Handler serves the Anura routes.
type Handler struct {
	Store *models.Store
	Infer Inference
	// Jobs stores and runs the jobs; nil disables the job routes (503).
	Jobs *jobs.Store
	// Usage receives the tokens of jobs, under the id of the key that
	// submitted them (nil: not counted).
	Usage *usage.Table
	// JobMaxTokens is the most tokens an ollama job may generate: a job
	// asking for more, or for no limit, is refused at submission (400),
	// and a job that sets no num_predict gets at most this many (0: no
	// limit).
	JobMaxTokens int
}

// Inference is what Anura calls of the generation path (its jobs run
// through ollamagen): an *infer.Service, or a fake of it in tests
// (server/infer/infertest).
type Inference interface {
	ollamagen.Inference
	ModelOptions(model string) (ollamaapi.Options, error)
}

var _ Inference = (*infer.Service)(nil)

// Register adds the routes to e.
func (h *Handler) Register(e *echo.Echo) {
	g := e.Group("/api/v1")
	g.POST("/cowsay", handle(h.submitCowsay))
	g.POST("/ollama", handle(h.submitOllama))
	g.GET("/jobs", handle(h.listJobs))
	g.GET("/jobs/:id", handle(h.getJob))
	g.DELETE("/jobs/:id", handle(h.cancelJob))
	g.GET("/cowsay/:id/results", handle(h.results(typeCowsay)))
	g.GET("/ollama/:id/results", handle(h.results(typeOllama)))
	g.POST("/chat/completions", handle(h.chat))
	g.GET("/models", handle(h.models))
}

// envelope wraps Anura's JSON answers.
type envelope struct {
	Data    any    `json:"data"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// reply answers with data in the envelope.
func reply(c echo.Context, code int, message string, data any) error {
	return c.JSON(code, envelope{Data: data, Message: message, Status: code})
}

func errorf(code int, format string, args ...any) error {
	return dialect.Errorf(code, format, args...)
}

// handle answers a handler's dialect.Error in Anura's shape (whatever the
// server's error handler does).
func handle(f echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := f(c)
		var e *dialect.Error
		if errors.As(err, &e) {
			return dialect.Write(c, *e)
		}
		return err
	}
}

// decode reads a JSON object body into v (dialect.Decode, worded as
// Ollama's routes word it); a body over the server's limit is a 413 in
// Anura's shape.
func decode(c echo.Context, v any) error {
	err := dialect.Decode(c, v, dialect.OllamaWords)
	if errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
		return errorf(http.StatusRequestEntityTooLarge, "request body too large")
	}
	return err
}

// readBody reads a job's payload: a JSON object, kept as sent.
func readBody(c echo.Context) ([]byte, error) {
	var body json.RawMessage
	if err := decode(c, &body); err != nil {
		return nil, err
	}
	return body, nil
}

func (h *Handler) models(c echo.Context) error {
	entries, err := h.Store.List()
	if err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name.String())
	}
	return reply(c, http.StatusOK, "OK", map[string][]string{"models": names})
}
