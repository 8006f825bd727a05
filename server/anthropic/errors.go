package anthropic

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// Error is the server's error answer (dialect.Error), written in
// Anthropic's shape: {"type": "error", "error": {"type", "message"}},
// the type following the status (dialect.AnthropicType: 400
// invalid_request_error, 401 authentication_error, 404 not_found_error,
// 413 request_too_large, 429 rate_limit_error, 503 overloaded_error,
// other 5xx api_error).
type Error = dialect.Error

// invalid is a 400 invalid_request_error; messages start with the field
// at fault, as Anthropic's do ("max_tokens: …").
func invalid(format string, args ...any) *Error {
	return dialect.Errorf(http.StatusBadRequest, format, args...)
}

// inferError maps the generation path's errors (dialect.FromInfer: its
// field errors and kinds) to their status.
func inferError(err error) *Error {
	return dialect.FromInfer(err)
}

// asError turns any error a handler or middleware returns into the
// server's error: the generation path's by their kind, echo's HTTP
// errors (unknown routes, wrong methods, body limits) with their status.
func asError(err error, c echo.Context) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ie *infer.Error
	var pe *infer.ParamError
	if errors.As(err, &ie) || errors.As(err, &pe) {
		return inferError(err)
	}
	var he *echo.HTTPError
	if !errors.As(err, &he) {
		return dialect.Errorf(http.StatusInternalServerError, "%s", err.Error())
	}
	req := c.Request()
	out := dialect.Errorf(he.Code, "%v", he.Message)
	switch he.Code {
	case http.StatusNotFound:
		out.Message = fmt.Sprintf("Not found: %s %s", req.Method, req.URL.Path)
	case http.StatusMethodNotAllowed:
		out.Message = fmt.Sprintf("Method %s is not allowed for %s.", req.Method, req.URL.Path)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		out.RetryAfter = dialect.RetryAfterSeconds
	}
	return out
}

// Errors is middleware that answers every error returned by the handlers
// after it in Anthropic's shape. An error after a stream began has been
// reported in it (an "error" event) and is dropped here.
func Errors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return nil
		}
		return dialect.WriteAs(c, dialect.Anthropic, *asError(err, c))
	}
}
