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
)

func (d Dialect) String() string {
	switch d {
	case OpenAI:
		return "openai"
	case Anura:
		return "anura"
	}
	return "ollama"
}

// Of is the dialect of a request path.
func Of(path string) Dialect {
	switch {
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

// Error is an HTTP error answer: the status, a message and, for OpenAI's
// shape, a machine-readable code ("invalid_api_key"). RetryAfter (whole
// seconds) sets the Retry-After header when positive.
type Error struct {
	Status     int
	Message    string
	Code       string
	RetryAfter int
}

// Body is the error's body in dialect d's shape.
func (e Error) Body(d Dialect) any {
	switch d {
	case OpenAI:
		b := OpenAIErrorBody{Message: e.Message, Type: openAIType(e.Status)}
		if e.Code != "" {
			b.Code = &e.Code
		}
		return OpenAIError{Error: b}
	case Anura:
		return AnuraError{Error: e.Message, Message: e.Message, Status: e.Status}
	}
	return map[string]string{"error": e.Message}
}

// openAIType is OpenAI's error type for a status code.
func openAIType(status int) string {
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
	if e.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if c.Request().Method == http.MethodHead {
		return c.NoContent(e.Status)
	}
	return c.JSON(e.Status, e.Body(Of(c.Request().URL.Path)))
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
		e := Error{Status: http.StatusInternalServerError, Message: err.Error()}
		var he *echo.HTTPError
		if errors.As(err, &he) {
			e.Status, e.Message = he.Code, fmt.Sprint(he.Message)
		}
		switch e.Status {
		case http.StatusRequestEntityTooLarge:
			e.Code = "request_too_large"
		case http.StatusNotFound:
			e.Code = "not_found"
		}
		_ = Write(c, e)
	}
}
