// Package ollamarun translates Ollama's generate and chat requests
// (server/api) into infer requests and infer's events back into Ollama's
// answers. It is not a dialect: it serves no route. The Ollama dialect
// (server/ollama) frames its results as NDJSON or one JSON answer; Anura
// (server/anura) runs its jobs through it, because a job carries an
// Ollama request and its result is Ollama's answer, and converts its
// chat's messages with it.
package ollamarun
