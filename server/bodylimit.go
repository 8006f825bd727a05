package server

import (
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// DefaultMaxBody is the largest request body by default: 10 MiB.
const DefaultMaxBody = 10 << 20

// bodyLimit answers 413 (in the dialect's shape, through the error
// handler) to bodies over n bytes. Model blob uploads are exempt: they
// are as large as the models.
func bodyLimit(n int64) echo.MiddlewareFunc {
	if n <= 0 {
		n = DefaultMaxBody
	}
	return middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{
		Limit:   strconv.FormatInt(n, 10),
		Skipper: func(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/blobs/") },
	})
}
