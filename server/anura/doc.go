// Package anura serves the job and streaming API of hosted inference
// networks, after Lilypad's "Anura" API: durable jobs (cowsay, the
// built-in smoke test, and ollama, one Ollama generate or chat request run
// to completion) with their status and results, a chat that streams
// Server-Sent Events, and the model list. JSON answers are wrapped as
// {"data", "message", "status"}; errors are {"error", "message",
// "status"} (server/dialect).
//
// Jobs are stored and run by server/jobs; generation goes through the
// Ollama dialect's Runner (server/ollama), so an ollama job's result is
// exactly Ollama's non-streamed answer. It must not touch the engine or
// the scheduler directly.
package anura
