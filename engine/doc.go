// Package engine is Tadpole's binding to llama.cpp, linked into the process
// through cgo: llama.cpp's static libraries, built by scripts/llama.sh from
// the release the npm package node-llama-cpp ships (or LLAMA_CPP_DIR), over
// its public headers only (llama.h, ggml*.h).
//
// It is the only package tree that uses cgo. It offers a small, typed Go
// API over llama.h: backend initialisation and devices, Model (weights,
// metadata, vocabulary, chat template), Context (KV memory, batched
// decode, logits, embeddings), Batch and Sampler. Every C pointer is owned
// by exactly one Go value and released by its Close method; nothing here
// keeps global state beyond the one-time backend initialisation.
//
// The engine knows nothing about HTTP, requests or scheduling: the runner
// (engine/runner) drives it, and API dialects never call it directly.
package engine
