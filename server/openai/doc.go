// Package openai serves OpenAI's API (chat completions, completions,
// models, embeddings under /v1) and the Open WebUI-style
// POST /api/chat/completions, whose answers are OpenAI's with Ollama's
// timing statistics in usage.
//
// It decodes and validates OpenAI requests into infer.Requests (with
// OpenAI's sampling defaults, not Ollama's), runs them through the one
// generation path (server/infer), and encodes the events back as JSON or
// Server-Sent Events. Every error it answers is in OpenAI's shape,
// {"error": {"message", "type", "param", "code"}}. It must not touch the
// engine or the runner's request type, and it must not know about API
// keys: authentication is middleware in front of its routes. It takes
// the generation path as its Inference interface, which
// server/infer/infertest fakes for its own tests.
package openai
