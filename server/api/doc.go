// Package api holds the request and response types of Tadpole's
// Ollama-compatible API, shared by the server and the command-line client.
// JSON field names are the wire contract: they follow Ollama's docs/api.md.
package api
