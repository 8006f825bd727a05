package dialect

import (
	"crypto/rand"
	"net/http"

	"github.com/labstack/echo/v4"
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
// and Anthropic's ids ("chatcmpl-…", "resp_…", "msg_…", "toolu_…").
func NewID(prefix string) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return prefix + string(b)
}
