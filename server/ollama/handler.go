package ollama

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// Handler serves the Ollama routes.
type Handler struct {
	Store *models.Store
	Sched *sched.Scheduler
	Infer *infer.Service
	// AllowRegistries are the registries ("host" or "host:port") pulls
	// and pushes may reach at non-public addresses (--allow-registry).
	AllowRegistries []string
}

// Register adds the routes to e.
func (h *Handler) Register(e *echo.Echo) {
	root := func(c echo.Context) error { return c.String(http.StatusOK, "Tadpole is running") }
	e.GET("/", root)
	e.HEAD("/", root)
	e.GET("/api/version", func(c echo.Context) error {
		return c.JSON(http.StatusOK, api.VersionResponse{Version: engine.Version})
	})
	e.POST("/api/generate", h.generate)
	e.POST("/api/chat", h.chat)
	e.POST("/api/embed", h.embed)
	e.POST("/api/embeddings", h.embeddings)
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
// status code.
func ErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code := http.StatusInternalServerError
	msg := err.Error()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		msg = fmt.Sprint(he.Message)
	}
	var ra *retryAfter
	if errors.As(err, &ra) {
		c.Response().Header().Set("Retry-After", RetryAfterSeconds)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(code)
		return
	}
	_ = c.JSON(code, api.ErrorResponse{Error: msg})
}

// RetryAfterSeconds is the Retry-After hint of 503 answers.
const RetryAfterSeconds = "5"

// retryAfter is a 503 whose answer carries a Retry-After header.
type retryAfter struct{ *echo.HTTPError }

func (r *retryAfter) Unwrap() error { return r.HTTPError }

func errorf(code int, format string, args ...any) error {
	return echo.NewHTTPError(code, fmt.Sprintf(format, args...))
}

// decode reads a JSON body into v, answering 400 with a readable message.
func decode(c echo.Context, v any) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, 64<<20))
	if err != nil {
		if errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return err // the server's body limit (413)
		}
		return errorf(http.StatusBadRequest, "read body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return errorf(http.StatusBadRequest, "missing request body")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errorf(http.StatusBadRequest, "invalid value for %q: expected %s", te.Field, te.Type)
		}
		return errorf(http.StatusBadRequest, "invalid JSON: %v", err)
	}
	return nil
}

// inferError maps the generation path's errors to Ollama's status codes.
func inferError(err error) error {
	code := http.StatusInternalServerError
	switch infer.KindOf(err) {
	case infer.BadRequest:
		code = http.StatusBadRequest
	case infer.NotFound:
		code = http.StatusNotFound
	case infer.Unavailable:
		code = http.StatusServiceUnavailable
		he := echo.NewHTTPError(code, err.Error())
		he.SetInternal(err)
		return &retryAfter{he}
	}
	return errorf(code, "%v", err)
}
