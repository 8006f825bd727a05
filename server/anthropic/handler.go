package anthropic

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// Handler serves Anthropic's Messages API.
type Handler struct {
	Infer Inference
}

// Inference is what the dialect calls of the generation path: an
// *infer.Service, or a fake of it in the package's own tests
// (server/infer/infertest).
type Inference interface {
	Generate(ctx context.Context, reqs ...*infer.Request) (*infer.Generation, error)
	ModelOptions(model string) (ollamaapi.Options, error)
	ModelOptionsFrom(model string, base ollamaapi.Options) (ollamaapi.Options, error)
	CountTokens(ctx context.Context, req *infer.Request) (int, error)
	Limits() infer.MediaLimits
}

var _ Inference = (*infer.Service)(nil)

// Register adds POST /v1/messages and POST /v1/messages/count_tokens on
// a group at /v1/messages with Errors first, so that every answer under
// that path — unknown sub-paths and wrong methods included — is in
// Anthropic's shape. (The server's /v1 group, OpenAI's, has its own
// error middleware; echo routes these static paths here.)
func (h *Handler) Register(e *echo.Echo) {
	g := e.Group("/v1/messages", Errors)
	dialect.Route(g, http.MethodPost, "", h.messages)
	dialect.Route(g, http.MethodPost, "/count_tokens", h.countTokens)
}

// decode reads a JSON object into v (dialect.Decode). Bad JSON is a 400;
// a value of the wrong type or out of its Go type's range (2^63, 1e400,
// "NaN") a 400 naming its field.
func decode(c echo.Context, v any) error {
	return dialect.Decode(c, v, func(f dialect.BodyFault) error {
		switch {
		case f.Read != nil:
			return invalid("could not read the request body: %v", f.Read)
		case f.Empty, f.NotObject:
			return invalid("the request body must be a JSON object")
		case f.TypeError && f.Field != "":
			return invalid("%s: expected a value of type %s, got %s", f.Field, f.Want, f.Got)
		}
		return invalid("the request body is not valid JSON: %v", f.JSON)
	})
}
