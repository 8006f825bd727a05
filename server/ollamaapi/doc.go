// Package ollamaapi holds the request and response types of Ollama's
// native API, as Tadpole serves it (server/ollama) and as its command
// line speaks it (server/client), and Options, Ollama's generation
// options, which every dialect resolves its requests onto and
// server/infer takes. JSON field names are the wire contract: they
// follow Ollama's docs/api.md.
//
// The name says whose wire types these are: the package was "api",
// which told a reader nothing among the server's five APIs (Ollama's
// own Go package is github.com/ollama/ollama/api).
package ollamaapi
