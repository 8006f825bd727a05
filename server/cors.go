package server

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/tadpole-llm/tadpole/server/dialect"
)

// DefaultCORSOrigins are the origins browsers may call the server from
// when Config.CORSOrigins is empty: local pages and apps (Ollama's list).
// A '*' in an origin matches anything ("http://localhost:*" is any port).
var DefaultCORSOrigins = []string{
	"http://localhost", "https://localhost", "http://localhost:*", "https://localhost:*",
	"http://127.0.0.1", "https://127.0.0.1", "http://127.0.0.1:*", "https://127.0.0.1:*",
	"http://0.0.0.0", "https://0.0.0.0", "http://0.0.0.0:*", "https://0.0.0.0:*",
	"app://*", "file://*", "tauri://*", "vscode-webview://*",
}

// origins decides which Origin headers are allowed. The CORS middleware
// and the origin guard share one, so a browser is never told an origin
// is allowed that the guard refuses, or the reverse.
type origins struct {
	any      bool
	exact    map[string]bool
	patterns []*regexp.Regexp
}

// newOrigins compiles the allowed origins: "*" alone allows every origin,
// '*' inside one matches any run of characters and '?' one character
// (echo's syntax). Empty means DefaultCORSOrigins.
func newOrigins(list []string) *origins {
	if len(list) == 0 {
		list = DefaultCORSOrigins
	}
	o := &origins{exact: map[string]bool{}}
	for _, s := range list {
		switch {
		case s == "*":
			o.any = true
		case strings.ContainsAny(s, "*?"):
			p := regexp.QuoteMeta(s)
			p = strings.ReplaceAll(p, `\*`, ".*")
			p = strings.ReplaceAll(p, `\?`, ".")
			o.patterns = append(o.patterns, regexp.MustCompile("^"+p+"$"))
		default:
			o.exact[s] = true
		}
	}
	return o
}

// allowed reports whether a browser page from origin may call the server.
func (o *origins) allowed(origin string) bool {
	if o.any || o.exact[origin] {
		return true
	}
	// Origins are short; a long one is no page's (and not worth a regexp).
	if len(origin) > 300 {
		return false
	}
	for _, re := range o.patterns {
		if re.MatchString(origin) {
			return true
		}
	}
	return false
}

// cors answers preflight requests and marks answers to the allowed
// origins readable by browser apps. Preflights are answered before any
// later middleware (authentication) runs; the request headers a browser
// asks for are allowed as asked.
func cors(o *origins) echo.MiddlewareFunc {
	return middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOriginFunc: func(origin string) (bool, error) { return o.allowed(origin), nil },
		AllowMethods:    []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions},
	})
}

// originGuard refuses (403) every request, of any method, that carries an
// Origin header not allowed: a web page the user happens to open must not
// reach the API, not even with a "simple" request (a form post or a
// no-cors fetch) whose answer it could not read but whose effect (a model
// copied, pulled, deleted) would still happen. Browsers send Origin on
// every cross-origin request and on every POST; clients outside a browser
// send none and are not affected.
//
// A page's own origin is allowed too (the web console at /ui/, reached
// as http://10.0.0.5:11434/ui/ or by the name given to --host), when
// the Host it names cannot be an attacker's name re-pointed at this
// server: an IP address, localhost, or one of names (see sameOrigin).
func originGuard(o *origins, names []string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			origin := c.Request().Header.Get(echo.HeaderOrigin)
			if origin == "" || o.allowed(origin) || sameOrigin(c.Request(), origin, names) {
				return next(c)
			}
			slog.Warn("refused a request from a browser origin that is not allowed", "origin", origin,
				"method", c.Request().Method, "path", c.Request().URL.Path)
			return dialect.Write(c, dialect.Error{
				Status: http.StatusForbidden, Code: "origin_not_allowed",
				Message: "origin " + quoteShort(origin) + " is not allowed to call this server; the operator can allow it with --origins (TADPOLE_ORIGINS)",
			})
		}
	}
}

// quoteShort quotes a header value for a message, cut to 100 bytes.
func quoteShort(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + strings.ToValidUTF8(strings.ReplaceAll(s, `"`, `\"`), "?") + `"`
}

// sameOrigin reports whether origin is the origin of the request itself
// (its scheme and Host) and that Host is an IP address, localhost or a
// name of names: a page this server served, not one of a DNS name
// re-pointed at it (whose Host would be the attacker's name).
func sameOrigin(r *http.Request, origin string, names []string) bool {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	if r.Host == "" || !strings.EqualFold(origin, scheme+r.Host) {
		return false
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return true
	}
	return hostAllowed(r.Host, names)
}
