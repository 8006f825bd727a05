package dialect

import (
	"errors"
	"net/http"

	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// FromInfer is err, an error of the generation path (server/infer), as
// the server's error answer, which every dialect writes in its shape: a
// ParamError is a 400 about its field; by Kind, BadRequest is a 400,
// NotFound a 404, Unavailable a 503 with the busy Retry-After,
// RateLimited a 429 with Retry-After 1, and LoadFailed, Internal and
// errors without a Kind a 500. A prompt past the context
// (runner.ContextError) has the code "context_length_exceeded". The
// message is err's text; err stays the cause.
func FromInfer(err error) *Error {
	var pe *infer.ParamError
	if errors.As(err, &pe) {
		return &Error{Status: http.StatusBadRequest, Message: pe.Message, Param: pe.Param, Err: err}
	}
	e := &Error{Status: http.StatusInternalServerError, Message: err.Error(), Err: err}
	switch infer.KindOf(err) {
	case infer.BadRequest:
		e.Status = http.StatusBadRequest
	case infer.NotFound:
		e.Status = http.StatusNotFound
	case infer.Unavailable:
		e.Status, e.RetryAfter = http.StatusServiceUnavailable, RetryAfterSeconds
	case infer.RateLimited:
		e.Status, e.RetryAfter, e.Code = http.StatusTooManyRequests, 1, "rate_limit_exceeded"
	}
	var ce *runner.ContextError
	if errors.As(err, &ce) {
		e.Code = "context_length_exceeded" // OpenAI's code for it
	}
	return e
}
