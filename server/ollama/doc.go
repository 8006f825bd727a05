// Package ollama serves Ollama's native API (docs/api.md is the contract):
// request decoding and validation, NDJSON streaming, and errors in
// Ollama's {"error": "..."} shape. Model management reads the loaded
// models and the engine's checks (architecture, version) through
// server/infer, and /api/create's quantization is models/quantize's:
// like every dialect it imports neither the engine nor the scheduler
// (TestDialectsAreThin). It takes the generation path as its
// Inference interface, which server/infer/infertest fakes for its own
// tests.
package ollama
