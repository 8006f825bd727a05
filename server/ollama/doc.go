// Package ollama serves Ollama's native API (docs/api.md is the contract):
// request decoding and validation, NDJSON streaming, and errors in
// Ollama's {"error": "..."} shape.
package ollama
