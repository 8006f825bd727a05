// Package runner is Tadpole's continuous-batching generation loop: one
// llama.cpp context per loaded model instance, shared by N slots (parallel
// sequences, each with its own stream of KV cells), and one goroutine that
// builds every batch.
//
// Each step puts one token of every generating slot plus chunks of waiting
// prompts (chunked prefill, bounded by n_batch) into a single batch,
// decodes once, samples every slot with its own sampler and hands the
// text to each request's Stream, never waiting on its reader. Every phase
// of a step is timed (Timings; tadpole_step_seconds in /metrics). Requests join and leave between
// steps; a slot keeps its tokens and KV after a request ends, so the next
// request sharing a prefix skips that part of the prefill.
//
// A request's prompt may hold spans fed as embeddings instead of tokens
// (Request.Embeds: an image or audio clip encoded by a projector): text
// is batched as above, a span is decoded in decodes of its own (at most
// one per step), and the prefix cache, truncation and context shifts
// treat each span as a whole (see Embeds).
//
// The runner is the only generation path: every API dialect goes through
// it. It knows nothing about HTTP; it never drops an accepted request: a
// request that finds no free slot waits for one.
package runner
