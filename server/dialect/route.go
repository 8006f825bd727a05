package dialect

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/tadpole-llm/tadpole/server/chatparse"
)

// Route adds a route to g and answers its other methods with 405 and an
// Allow header, through the group's middleware, so in the dialect's own
// error shape. OPTIONS is left to the CORS middleware.
func Route(g *echo.Group, method, path string, h echo.HandlerFunc) {
	g.Add(method, path, h)
	var others []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m != method {
			others = append(others, m)
		}
	}
	g.Match(others, path, MethodNotAllowed(method))
}

// MethodNotAllowed answers 405 with an Allow header naming allow.
func MethodNotAllowed(allow string) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderAllow, allow)
		return echo.ErrMethodNotAllowed
	}
}

// NewID is prefix and 24 random letters and digits, the shape of OpenAI's
// and Anthropic's ids ("chatcmpl-…", "resp_…", "msg_…", "toolu_…"): the
// parser's, which names tool calls the same way.
var NewID = chatparse.NewID

// GenerationError is a failure after a generation started (the model's
// decode failed): a 500 that says so.
func GenerationError(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Message: "generation failed: " + err.Error(), Err: err}
}

// OpenAIModelNotFound is OpenAI's answer for a model that does not exist.
func OpenAIModelNotFound(model string) *Error {
	return &Error{
		Status: http.StatusNotFound, Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("The model '%s' does not exist or you do not have access to it.", model),
	}
}

// OpenAICodes gives e, a generation path's error mapped to its status
// (FromInfer), OpenAI's codes and its words for an unknown model:
// the chat, completions, embeddings and Responses doors answer alike.
func OpenAICodes(e *Error, model string) *Error {
	switch e.Status {
	case http.StatusNotFound:
		e.Param, e.Code = "model", "model_not_found"
		if model != "" {
			e.Message = OpenAIModelNotFound(model).Message
		}
	case http.StatusServiceUnavailable:
		e.Code = "server_overloaded"
	}
	return e
}
