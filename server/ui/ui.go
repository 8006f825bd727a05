// Package ui serves the web console at /ui/: plain ES modules and CSS
// embedded in the binary (no build step, nothing fetched from elsewhere).
// The page is static; everything it shows comes from the server's own
// API routes, called with the key the user types (kept in the browser's
// session storage), so the same keys, scopes and browser rules apply as
// to any client.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

//go:embed assets
var assets embed.FS

// Prefix is where the console is served.
const Prefix = "/ui/"

// CSP is the Content-Security-Policy of every console response: scripts,
// styles and connections from the console's own origin only, no inline
// script or style attribute handlers, no framing, no plugins. Images may
// be data: and blob: URLs (attached pictures shown before they are sent).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Assets is the embedded file tree (index.html at its root).
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	return sub
}

// Size is the embedded assets' total size in bytes.
func Size() int64 {
	var n int64
	fs.WalkDir(Assets(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Register serves the console on e: GET/HEAD /ui redirects to /ui/, and
// /ui/ serves index.html and its assets.
func Register(e *echo.Echo) {
	files := http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.FileServer(http.FS(Assets())))
	serve := func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-cache")
		p := c.Request().URL.Path
		// index.html is served as the directory; a request for it by
		// name would be redirected by http.FileServer.
		if name := path.Clean(strings.TrimPrefix(p, Prefix)); name != "." && name != "index.html" {
			if _, err := fs.Stat(Assets(), name); err != nil {
				return echo.NewHTTPError(http.StatusNotFound, "no such console file: "+name)
			}
		}
		files.ServeHTTP(c.Response(), c.Request())
		return nil
	}
	redirect := func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, Prefix) }
	e.GET("/ui", redirect)
	e.HEAD("/ui", redirect)
	e.GET(Prefix+"*", serve)
	e.HEAD(Prefix+"*", serve)
}
