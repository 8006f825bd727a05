package openai

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// Error is an error answer in OpenAI's shape. Param names the request
// field at fault ("messages[0].content"); Code is a machine-readable code
// ("model_not_found"). Both are null in the body when empty.
type Error struct {
	Status  int
	Message string
	Type    string
	Param   string
	Code    string
}

func (e *Error) Error() string { return e.Message }

// retryAfterSeconds is the Retry-After hint of 503 answers.
const retryAfterSeconds = "5"

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// invalid is a 400 invalid_request_error about param ("" for the request
// as a whole).
func invalid(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Message: fmt.Sprintf(format, args...)}
}

// notSupported is a 400 for a valid OpenAI request that Tadpole does not
// serve (yet).
func notSupported(param, format string, args ...any) *Error {
	e := invalid(param, format, args...)
	e.Code = "unsupported_value"
	return e
}

// modelNotFound is OpenAI's 404 for a model that does not exist.
func modelNotFound(model string) *Error {
	return &Error{
		Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("The model '%s' does not exist or you do not have access to it.", model),
	}
}

// inferError maps the generation path's errors to OpenAI's.
func inferError(err error, model string) *Error {
	switch infer.KindOf(err) {
	case infer.BadRequest:
		return invalid("", "%v", err)
	case infer.NotFound:
		e := modelNotFound(model)
		if model == "" {
			e.Message = err.Error()
		}
		return e
	case infer.Unavailable:
		return &Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "server_overloaded", Message: err.Error()}
	}
	return &Error{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
}

// asError turns any error a handler or middleware returns into OpenAI's
// shape: the generation path's errors by their kind, echo's HTTP errors (unknown routes, wrong methods, body limits,
// authentication) keep their status.
func asError(err error, c echo.Context) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ie *infer.Error
	if errors.As(err, &ie) {
		return inferError(err, "")
	}
	var he *echo.HTTPError
	if !errors.As(err, &he) {
		return &Error{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
	}
	msg := fmt.Sprint(he.Message)
	req := c.Request()
	out := &Error{Status: he.Code, Type: "invalid_request_error", Message: msg}
	switch he.Code {
	case http.StatusNotFound:
		out.Code = "unknown_url"
		out.Message = fmt.Sprintf("Unknown request URL: %s %s.", req.Method, req.URL.Path)
	case http.StatusMethodNotAllowed:
		out.Code = "method_not_allowed"
		out.Message = fmt.Sprintf("Method %s is not allowed for %s.", req.Method, req.URL.Path)
	case http.StatusUnauthorized:
		out.Code = "invalid_api_key"
	case http.StatusRequestEntityTooLarge:
		out.Code = "request_too_large"
	case http.StatusTooManyRequests:
		out.Type, out.Code = "requests", "rate_limit_exceeded"
	default:
		if he.Code >= 500 {
			out.Type = "server_error"
		}
	}
	return out
}

// write answers c with e.
func write(c echo.Context, e *Error) error {
	if e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests {
		if c.Response().Header().Get("Retry-After") == "" {
			c.Response().Header().Set("Retry-After", retryAfterSeconds)
		}
	}
	return c.JSON(e.Status, dialect.OpenAIError{Error: dialect.OpenAIErrorBody{Message: e.Message, Type: e.Type, Param: nullable(e.Param), Code: nullable(e.Code)}})
}

// Errors is middleware that answers every error returned by the handlers
// (and middleware) after it in OpenAI's shape, so the server's global
// error handler (Ollama's) never sees them. Put it first on a group of
// OpenAI routes.
func Errors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return nil // an error after the answer began (a stream) has been reported in it
		}
		return write(c, asError(err, c))
	}
}

// methodNotAllowed answers a known path with the wrong method.
func methodNotAllowed(allow string) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderAllow, allow)
		return echo.ErrMethodNotAllowed
	}
}
