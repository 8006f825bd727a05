// Package anura serves the job and streaming API of hosted inference
// networks, after Lilypad's "Anura" API: durable jobs (cowsay, the
// built-in smoke test, and ollama, one Ollama generate or chat request run
// to completion) with their status and results, a chat that streams
// Server-Sent Events, and the model list. JSON answers are wrapped as
// {"data", "message", "status"}; errors are {"error", "message",
// "status"} (server/dialect).
//
// Jobs are stored and run by server/jobs; an ollama job runs through
// server/ollamagen, the same translation /api/generate and /api/chat use,
// so its result is exactly Ollama's non-streamed answer. The chat builds
// its infer.Request itself (OpenAI-style fields through
// openaisampling.Fields) and reads infer's stream. It must not touch the
// engine, the scheduler or another dialect.
package anura
