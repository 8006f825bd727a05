package infer

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/dialect"
)

// ParamError is a request field out of its range or of the wrong shape:
// Param names the field, Message says what was wrong (in OpenAI's words);
// each dialect answers it in its own error shape.
type ParamError struct {
	Param   string
	Message string
}

func (e *ParamError) Error() string { return e.Message }

func paramErrorf(param, format string, args ...any) *ParamError {
	return &ParamError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// HTTPError is err as the server's error answer, which every dialect
// writes in its shape: a ParamError is a 400 about its field; by Kind,
// BadRequest is a 400, NotFound a 404, Unavailable a 503 with the busy
// Retry-After, RateLimited a 429 with Retry-After 1, and LoadFailed, Internal and errors without a Kind a 500.
// A prompt past the context (runner.ContextError) has the code
// "context_length_exceeded".
// The message is err's text; err stays the cause.
func HTTPError(err error) *dialect.Error {
	var pe *ParamError
	if errors.As(err, &pe) {
		return &dialect.Error{Status: http.StatusBadRequest, Message: pe.Message, Param: pe.Param, Err: err}
	}
	e := &dialect.Error{Status: http.StatusInternalServerError, Message: err.Error(), Err: err}
	switch KindOf(err) {
	case BadRequest:
		e.Status = http.StatusBadRequest
	case NotFound:
		e.Status = http.StatusNotFound
	case Unavailable:
		e.Status, e.RetryAfter = http.StatusServiceUnavailable, dialect.RetryAfterSeconds
	case RateLimited:
		e.Status, e.RetryAfter, e.Code = http.StatusTooManyRequests, 1, "rate_limit_exceeded"
	}
	var ce *runner.ContextError
	if errors.As(err, &ce) {
		e.Code = "context_length_exceeded" // OpenAI's code for it
	}
	return e
}
