// Package ollama serves Ollama's native API (docs/api.md is the contract):
// request decoding and validation, NDJSON streaming, and errors in
// Ollama's {"error": "..."} shape. Model management reads the loaded
// models and the engine's checks (architecture, quantization, version)
// through server/infer: like every dialect it imports neither the engine
// nor the scheduler (TestDialectsAreThin).
package ollama
