// Package ollamagen translates Ollama's generate and chat requests
// (server/ollamaapi) into generations on the one generation path
// (server/infer), and infer's events back into Ollama's answers. It is
// not a dialect: it serves no route, and it runs nothing itself (it was
// named ollamarun; infer and the scheduler run the generations). The
// Ollama dialect (server/ollama) frames its results as NDJSON or one
// JSON answer; Anura (server/anura) runs its jobs through it, because a
// job carries an Ollama request and its result is Ollama's answer, and
// converts its chat's messages with it.
package ollamagen
