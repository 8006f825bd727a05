package server

import (
	"context"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
)

// The browser boundary: what a web page open in the user's browser can
// make the server do. Three guards, all before authentication:
//
//   - hostGuard: on a loopback listener, the Host header must name this
//     machine (DNS rebinding: attacker.example resolving to 127.0.0.1
//     would otherwise let the attacker's page read every answer).
//   - originGuard (cors.go): a present Origin must be allowed, for every
//     method.
//   - bodyTypeGuard: a request body must be declared as JSON, so an HTML
//     form (text/plain, multipart) cannot post one.

// listenerKey is the context key of the address of the listener that
// accepted a request's connection (set by Serve).
type listenerKey struct{}

// withListener is an http.Server's ConnContext that records addr, the
// listener's address, in each connection's context.
func withListener(addr net.Addr) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, listenerKey{}, addr)
	}
}

// loopbackListener reports whether the request came in on a listener
// bound to a loopback address. A handler served some other way (tests
// with httptest) goes by the local address of the connection.
func loopbackListener(r *http.Request) bool {
	addr, _ := r.Context().Value(listenerKey{}).(net.Addr)
	if addr == nil {
		addr, _ = r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	}
	if addr == nil {
		return false
	}
	ap, err := netip.ParseAddrPort(addr.String())
	return err == nil && ap.Addr().IsLoopback()
}

// hostAllowed reports whether host (a Host header) names this machine:
// localhost or a name under .localhost, a loopback IP literal, one of
// names (the name the server was told to listen on), or empty (HTTP/1.0;
// browsers always send one). Any port is allowed.
func hostAllowed(host string, names []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().IsLoopback()
	}
	for _, n := range names {
		if strings.EqualFold(host, strings.TrimSuffix(n, ".")) {
			return true
		}
	}
	return false
}

// hostGuard refuses (403) a request on a loopback listener whose Host
// does not name this machine (see hostAllowed). A listener on any other
// address (0.0.0.0, a LAN address) takes any Host: whoever binds it there
// chose to serve other names.
func hostGuard(names []string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if !loopbackListener(r) || hostAllowed(r.Host, names) {
				return next(c)
			}
			slog.Warn("refused a request for a host name that is not this machine's (DNS rebinding?)", "host", r.Host,
				"method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			return dialect.Write(c, dialect.Error{
				Status: http.StatusForbidden, Code: "host_not_allowed",
				Message: "host " + quoteShort(r.Host) + " is not allowed: this server listens on a loopback address and answers only " +
					"requests for localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding); to serve other names, listen on a non-loopback address with --host",
			})
		}
	}
}

// hostGuardHandler is hostGuard for a plain http.Handler (the metrics
// listener).
func hostGuardHandler(names []string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackListener(r) || hostAllowed(r.Host, names) {
			h.ServeHTTP(w, r)
			return
		}
		http.Error(w, "host "+quoteShort(r.Host)+" is not allowed on a loopback listener", http.StatusForbidden)
	})
}

// bodyTypes are the Content-Types a request body may have. JSON is what
// every client sends. application/x-www-form-urlencoded is what `curl -d`
// sends (Ollama's and our README's examples); an HTML form cannot put a
// JSON object in it (the form encoding escapes '{' and '"'), so it cannot
// carry an attack. A body with no type at all comes from scripts
// (Python's requests with data=); a browser sends one only from fetch,
// which always adds an Origin header that originGuard checks.
// text/plain and multipart/form-data, which a form posts without a
// preflight, and every other type are refused.
var bodyTypes = map[string]bool{"": true, "application/json": true, "application/x-www-form-urlencoded": true}

// blobTypes are the extra types of blob uploads (raw bytes checked
// against their digest): Ollama's client sends application/json, others
// application/octet-stream.
var blobTypes = map[string]bool{"application/octet-stream": true}

// bodyTypeGuard answers 415 in the dialect's shape to a POST, PUT, PATCH
// or DELETE whose body has a Content-Type not in bodyTypes (blobTypes too
// for /api/blobs/). A request without a body needs no type (Ollama's
// load-only requests, DELETE of a job).
func bodyTypeGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			return next(c)
		}
		if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
			return next(c)
		}
		ct := r.Header.Get(echo.HeaderContentType)
		mt, _, err := mime.ParseMediaType(ct)
		if ct == "" {
			mt, err = "", nil
		}
		if err == nil && (bodyTypes[mt] || strings.HasPrefix(r.URL.Path, "/api/blobs/") && blobTypes[mt]) {
			return next(c)
		}
		return dialect.Write(c, dialect.Error{
			Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
			Message: "unsupported Content-Type " + quoteShort(ct) + ": send the body as application/json",
		})
	}
}
