package dialect

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// Dialect is an API dialect.
type Dialect int

const (
	Ollama Dialect = iota
	OpenAI
	Anura
	Anthropic
)

func (d Dialect) String() string {
	switch d {
	case OpenAI:
		return "openai"
	case Anura:
		return "anura"
	case Anthropic:
		return "anthropic"
	}
	return "ollama"
}

// Of is the dialect of a request path: Anthropic's Messages API under
// /v1/messages, OpenAI's under the rest of /v1/ (the Responses API and
// /v1/rerank included) and at /api/chat/completions, Anura's under
// /api/v1/, Ollama's elsewhere (/api/rerank included).
func Of(path string) Dialect {
	switch {
	case path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/"):
		return Anthropic
	case strings.HasPrefix(path, "/v1/"), path == "/api/chat/completions":
		return OpenAI
	case strings.HasPrefix(path, "/api/v1/"):
		return Anura
	}
	return Ollama
}

// AnuraError is the body of Anura's errors: the message (twice, as
// clients read either field) and the HTTP status.
type AnuraError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// OpenAIError is the body of OpenAI's errors.
type OpenAIError struct {
	Error OpenAIErrorBody `json:"error"`
}

// OpenAIErrorBody is the inside of an OpenAI error.
type OpenAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// RetryAfterSeconds is the Retry-After of 503 answers (the server is
// busy: the wait queue is full, a quantization is running). Rate limits
// and job quotas set their own.
const RetryAfterSeconds = 5

// Error is the server's one error answer, whatever the dialect: the
// status, a message, the request field at fault (Param, OpenAI's shape
// only), a machine-readable code ("invalid_api_key", OpenAI's shape only)
// and RetryAfter (whole seconds), sent as the Retry-After header when
// positive. Err is the cause, if any, for errors.Is and errors.As.
type Error struct {
	Status     int
	Message    string
	Param      string
	Code       string
	RetryAfter int
	Err        error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an Error of a status with a formatted message.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// Unavailable is a 503 with the Retry-After of busy answers.
func Unavailable(format string, args ...any) *Error {
	e := Errorf(http.StatusServiceUnavailable, format, args...)
	e.RetryAfter = RetryAfterSeconds
	return e
}

// From is err as an Error: an Error as it is, echo's HTTP errors with
// their status and message, anything else a 500 with err's text.
func From(err error) Error {
	var e *Error
	if errors.As(err, &e) {
		return *e
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return Error{Status: he.Code, Message: fmt.Sprint(he.Message), Err: err}
	}
	return Error{Status: http.StatusInternalServerError, Message: err.Error(), Err: err}
}

// AnthropicError is the body of Anthropic's errors (and the data of its
// streamed "error" event).
type AnthropicError struct {
	Type  string             `json:"type"` // "error"
	Error AnthropicErrorBody `json:"error"`
}

// AnthropicErrorBody is the inside of an Anthropic error.
type AnthropicErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// AnthropicType is Anthropic's error type for a status code.
func AnthropicType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// Anthropic is the error's body in Anthropic's shape.
func (e Error) Anthropic() AnthropicError {
	return AnthropicError{Type: "error", Error: AnthropicErrorBody{Type: AnthropicType(e.Status), Message: e.Message}}
}

// Body is the error's body in dialect d's shape: Ollama's {"error"},
// OpenAI's {"error": {message, type, param, code}}, Anura's {"error",
// "message", "status"}, Anthropic's {"type": "error", "error": {type,
// message}}.
func (e Error) Body(d Dialect) any {
	switch d {
	case OpenAI:
		return e.OpenAI()
	case Anthropic:
		return e.Anthropic()
	case Anura:
		return AnuraError{Error: e.Message, Message: e.Message, Status: e.Status}
	}
	return map[string]string{"error": e.Message}
}

// OpenAI is the error's body in OpenAI's shape; Param and Code are null
// when empty.
func (e Error) OpenAI() OpenAIError {
	return OpenAIError{Error: OpenAIErrorBody{Message: e.Message, Type: OpenAIType(e.Status), Param: nullable(e.Param), Code: nullable(e.Code)}}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// OpenAIType is OpenAI's error type for a status code.
func OpenAIType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "requests"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// Write answers c with e in the shape of the dialect of c's path.
func Write(c echo.Context, e Error) error {
	return WriteAs(c, Of(c.Request().URL.Path), e)
}

// WriteAs answers c with e in dialect d's shape. A Retry-After already
// set (by a rate limit) is kept.
func WriteAs(c echo.Context, d Dialect, e Error) error {
	if e.RetryAfter > 0 && c.Response().Header().Get("Retry-After") == "" {
		c.Response().Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if c.Request().Method == http.MethodHead {
		return c.NoContent(e.Status)
	}
	return c.JSON(e.Status, e.Body(d))
}

// ErrorHandler answers errors of OpenAI and Anura paths in their shape
// and passes the others (Ollama's) to fallback.
func ErrorHandler(fallback echo.HTTPErrorHandler) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		d := Of(c.Request().URL.Path)
		if d == Ollama {
			fallback(err, c)
			return
		}
		if c.Response().Committed {
			return
		}
		e := From(err)
		switch {
		case e.Code != "":
		case e.Status == http.StatusRequestEntityTooLarge:
			e.Code = "request_too_large"
		case e.Status == http.StatusNotFound:
			e.Code = "not_found"
		}
		_ = Write(c, e)
	}
}
