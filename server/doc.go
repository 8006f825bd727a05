// Package server is Tadpole's HTTP layer: an echo server with request IDs,
// logging and panic recovery, and the routes of every API dialect
// (server/ollama today). Handlers decode and validate requests into the
// runner's request type and go through the scheduler (server/sched); they
// never touch llama.cpp directly.
package server
