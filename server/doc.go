// Package server is Tadpole's HTTP layer. New builds one echo server over
// one model store (models), one scheduler (server/sched) and the one
// generation path (server/infer), and registers every API dialect on it:
// Ollama's native API under /api/ (server/ollama, /api/rerank included),
// OpenAI's under /v1/ (server/openai: chat, completions, embeddings,
// models, /v1/rerank) and Open WebUI's POST /api/chat/completions,
// OpenAI's Responses API under /v1/responses (server/responses: stored
// responses and background runs in the job database), Anthropic's
// Messages API under /v1/messages (server/anthropic), and the Anura job
// and streaming API under /api/v1/ (server/anura), whose jobs server/jobs
// stores and runs (a background response is a job of type "response").
//
// The request path, the same for every dialect: the dialect decodes its
// wire format into an infer.Request (OpenAI-style sampling fields through
// openaisampling.Fields; Ollama's generate and chat requests, which Anura's
// jobs also carry, through server/ollamagen); infer.Service.Generate
// resolves the model, takes the API key's place (--max-streams), gets a
// loaded instance from the scheduler, renders and tokenizes the prompt,
// takes a place in the wait queue (--max-queue) and queues it on the
// instance's runner, and returns an infer.Generation, whose Close ends
// the generation and then gives the instance back (like database/sql's
// Rows); the dialect reads its streams (content, thinking and tool calls
// already split) and encodes them; errors are dialect.Errors written in
// the dialect's shape (dialect.FromInfer turns infer's errors into
// them). Embeddings, reranking and the vocabulary (llama-server's
// /tokenize and /detokenize) hold an instance for one call only:
// infer.Service's Embed, Rerank and WithVocab acquire and release it, so
// no dialect calls Acquire or Release. A
// dialect (and ollamagen) imports neither the engine (its runner
// included; engine/grammar, a pure translation, is allowed), nor the
// scheduler, nor another dialect: what it needs of them infer offers
// (TestDialectsAreThin). Each dialect takes the generation path as a
// small interface of its own, which *infer.Service satisfies and
// server/infer/infertest fakes for the dialect's own tests.
//
// Every request goes through, in order: a request ID; panic recovery;
// the browser boundary (boundary.go, cors.go): the Host guard on loopback
// listeners, the Origin guard and CORS; the request log, which also
// counts and traces the request (server/telemetry) and gives it a slot
// in the in-flight list (server/flight: Config.DataDir/inflight, which a
// death of any kind leaves for the next start to report, and the report
// printed if llama.cpp aborts the process); the body type guard
// (JSON or form-encoded bodies only); authentication (server/auth: API
// keys, the admin scope for model management, the per-key request rate,
// per-key counters and the per-key bound on concurrent requests, which
// infer enforces, in server/usage); and the body size limit
// (bodylimit.go; blob uploads are exempt). What is refused before a
// dialect's handler runs is answered in the shape of the path's dialect
// (server/dialect).
//
// Streamed answers (NDJSON or Server-Sent Events) of every dialect are
// written by dialect.StreamWriter, each write bounded by
// Config.WriteTimeout: a client that stops reading loses its request and
// frees its slot. server/chatparse splits a chat model's output into
// content, thinking and tool calls.
//
// Serve speaks HTTPS when Config.TLS is set (tls.go: a Certificate read
// again on SIGHUP). With Config.MetricsListener, /metrics leaves the API
// for the listener given to ServeMetrics, where it needs no key. Shutdown
// stops accepting, waits for the requests in flight, puts running jobs
// back in the queue and unloads every model.
//
// The package never touches the engine directly: handlers decode and
// validate requests and go through server/infer and the scheduler, which
// alone load, place and evict models. Its one use of package engine is
// registering that abort report (engine.OnAbort).
package server
