// Package anthropic serves Anthropic's Messages API: POST /v1/messages
// (answered as JSON or as Anthropic's Server-Sent Events) and
// POST /v1/messages/count_tokens.
//
// It decodes and validates Messages requests into infer.Requests
// (OpenAI's sampling defaults, as every non-Ollama door, then the
// model's parameters, then the request's fields), runs them through the
// one generation path (server/infer) and encodes the events back as
// Anthropic's content blocks: text, thinking (with a signature) and
// tool_use. Every error it answers is in Anthropic's shape,
// {"type": "error", "error": {"type", "message"}}, also inside a stream
// that has begun (an "error" event). It must not touch the engine or the
// runner, nor import another dialect (TestDialectsAreThin), and it knows
// nothing about API keys: x-api-key and Authorization are checked by
// middleware in front of its routes; anthropic-version and
// anthropic-beta are accepted and ignored.
package anthropic
