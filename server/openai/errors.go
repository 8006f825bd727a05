package openai

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// Error is the server's error answer (dialect.Error), written in
// OpenAI's shape: Param names the request field at fault
// ("messages[0].content"), Code is a machine-readable code
// ("model_not_found"); both are null in the body when empty, and the type
// follows the status (dialect.OpenAIType).
type Error = dialect.Error

// invalid is a 400 invalid_request_error about param ("" for the request
// as a whole).
func invalid(param, format string, args ...any) *Error {
	return dialect.Invalid(param, format, args...)
}

// notSupported is a 400 for a valid OpenAI request that Tadpole does not
// serve (yet).
func notSupported(param, format string, args ...any) *Error {
	e := invalid(param, format, args...)
	e.Code = "unsupported_value"
	return e
}

// modelNotFound is OpenAI's 404 for a model that does not exist.
func modelNotFound(model string) *Error { return dialect.OpenAIModelNotFound(model) }

// inferError maps the generation path's errors to OpenAI's: infer's
// status and message, with OpenAI's codes and its words for an unknown
// model.
func inferError(err error, model string) *Error {
	return dialect.OpenAICodes(dialect.FromInfer(err), model)
}

// asError turns any error a handler or middleware returns into OpenAI's
// shape: the generation path's errors by their kind, echo's HTTP errors
// (unknown routes, wrong methods, body limits, authentication) keep their
// status. 503 and 429 answers carry Retry-After.
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
		return dialect.Errorf(http.StatusInternalServerError, "%s", err.Error())
	}
	req := c.Request()
	out := dialect.Errorf(he.Code, "%v", he.Message)
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
		out.Code = "rate_limit_exceeded"
		out.RetryAfter = dialect.RetryAfterSeconds
	case http.StatusServiceUnavailable:
		out.RetryAfter = dialect.RetryAfterSeconds
	}
	return out
}

// write answers c with e.
func write(c echo.Context, e *Error) error {
	return dialect.WriteAs(c, dialect.OpenAI, *e)
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
