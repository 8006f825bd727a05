package responses

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/jobs"
)

// invalid is a 400 invalid_request_error about param ("" for the request
// as a whole), in OpenAI's shape (the server's error handler writes every
// error of a /v1/ path so).
func invalid(param, format string, args ...any) *dialect.Error {
	return dialect.Invalid(param, format, args...)
}

// notSupported is a 400 for a valid request Tadpole does not serve (yet).
func notSupported(param, format string, args ...any) *dialect.Error {
	e := invalid(param, format, args...)
	e.Code = "unsupported_value"
	return e
}

// notFound is OpenAI's 404 for a response id.
func notFound(id string) *dialect.Error {
	e := dialect.Errorf(http.StatusNotFound, "Response with id '%s' not found.", id)
	e.Code = "not_found"
	return e
}

// internal is a 500, or a 503 with Retry-After while the response
// store's database cannot be reached.
func internal(err error) *dialect.Error {
	if errors.Is(err, jobs.ErrUnavailable) {
		// The driver's message (hosts, users) stays in the server's log.
		slog.Warn("response store", "error", err)
		e := dialect.Unavailable("%v; try again later", jobs.ErrUnavailable)
		e.Err = err
		return e
	}
	return &dialect.Error{Status: http.StatusInternalServerError, Message: err.Error(), Err: err}
}

// inferError maps the generation path's errors to OpenAI's, as the chat
// dialect does.
func inferError(err error, model string) *dialect.Error {
	return dialect.OpenAICodes(dialect.FromInfer(err), model)
}
