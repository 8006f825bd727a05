// Package auth guards every API dialect with bearer API keys: it loads
// keys (plain or as "sha256:<hex>" hashes, each with a scope: inference
// or admin) from a file and the environment, keeps only their SHA-256
// hashes, compares them in constant time, refuses model management to
// keys without the admin scope, and enforces the per-key request rate
// (requests per window; the bound on concurrent requests travels in the
// request's context to infer, which decides it with the queue bound). Refusals are answered in the
// shape of the dialect of the request's path (server/dialect). Each key's
// usage is counted in a usage.Table under the key's id (the first 12 hex
// digits of its hash). It must never log, store or echo a key itself.
package auth
