// Package dialect tells which API dialect a request path belongs to and
// writes errors in that dialect's shape, for the code that answers before
// (or instead of) a dialect's own handler: authentication, rate limits,
// body limits, unknown routes. Paths under /v1/ and Open WebUI's
// /api/chat/completions are OpenAI's ({"error": {"message", "type",
// "param", "code"}}), paths under /api/v1/ Anura's ({"error", "message",
// "status"}), and everything else Ollama's ({"error": "..."}). It must
// not import the dialect packages.
package dialect
