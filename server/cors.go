package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
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

// cors answers preflight requests and marks answers to the allowed
// origins readable by browser apps. Preflights are answered before any
// later middleware (authentication) runs; the request headers a browser
// asks for are allowed as asked.
func cors(origins []string) echo.MiddlewareFunc {
	if len(origins) == 0 {
		origins = DefaultCORSOrigins
	}
	return middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOrigins: origins,
		AllowMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions},
	})
}
