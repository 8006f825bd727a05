package engine

import (
	"fmt"
	"math"
	"runtime"
)

// The engine contract: llama.cpp runs inside the server's process, so a
// GGML_ASSERT it hits aborts every request of every user. Every value the
// engine hands to llama.cpp is checked here first, against the limit
// llama.cpp asserts on (or the C type it is truncated to), and refused
// with an error naming the value and its range. Callers (the runner, the
// scheduler, the API layer) narrow these further with the names their
// users know; these checks are the last line, so they hold even when a
// caller forgets.
//
// The asserts and truncations guarded, as in the linked llama.cpp
// (v0.5.0, from node-llama-cpp@3.22.1; re-audited from b7437: the same
// decode/encode asserts, the new ones below are noted):
//
//   - llama-context.cpp decode: GGML_ASSERT(n_tokens_all <= cparams.n_batch)
//     and GGML_ASSERT(cparams.causal_attn || cparams.n_ubatch >= n_tokens_all);
//     encode: GGML_ASSERT(cparams.n_ubatch >= n_tokens) — Context.Decode
//     refuses a batch larger than the context's real n_batch/n_ubatch
//     (read back from llama.cpp, which pads n_ctx to 256 and clamps
//     n_batch to n_ctx for causal models). New in v0.5.0: outputs per
//     sequence past n_outputs_max_per_seq are an error return, not an
//     assert (the engine leaves n_outputs_max at n_batch, so a batch's
//     outputs never exceed it); n_rs_seq / MTP contexts (n_keep_tail's
//     GGML_ASSERT in llama-batch.cpp) are not used.
//   - llama_batch_init(int32 n_tokens_alloc): a capacity past MaxInt32 is
//     truncated while Go keeps the full length — NewBatch refuses it.
//   - llama_context_params n_ctx/n_batch/n_ubatch/n_seq_max are uint32 and
//     n_threads int32; ggml's thread pool asserts n_threads <=
//     GGML_MAX_N_THREADS (512) — ContextParams.check. A quantized K/V
//     cache whose block does not divide the head size is refused by
//     llama_init_from_model with an error (new in v0.5.0), not an assert.
//   - llama_sampler_init_penalties (now with n_vocab) allocates a ring
//     buffer of penalty_last_n tokens; top_k and penalty_last_n are int32;
//     its header asks for a finite, positive repeat penalty and finite
//     frequency/presence penalties (no assert: a NaN would poison the
//     logits) — SamplerParams.check refuses non-finite values.
//   - llama_sampler_sample: GGML_ASSERT(cur_p.selected in range) and the
//     softmax's GGML_ASSERT(cur_p->size > 0) — the sampler front end
//     (sampling.c) never hands llama.cpp's chain an empty candidate list.
//   - llama_sampler_init_logit_bias reads n_logit_bias entries of token ids
//     it indexes the logits with — NewSampler checks every id (v0.5.0's
//     backend sampling asserts the same range; it is not used).
//   - Grammar: llama_grammar_accept_impl aborts on an end-of-generation
//     token while no stack is empty (unchanged) — engine/grammar only
//     lets an EOG through where the grammar may end.
//   - Embedding input (EmbdBatch, DecodeEmbd): the same n_batch/n_ubatch
//     asserts (n_ubatch while SetCausal(false) holds, for token batches
//     too); rows of the model's input width, capacity × width within
//     MaxEmbdFloats, positions and sequence ids in range, finite values,
//     and room for M-RoPE's four positions per row (see embdbatch.go).
//   - Token ids in a batch past the vocabulary index the embedding
//     matrix — the runner refuses them before a request is queued.
//   - Rank pooling (rerankers) without a classifier output head: llama.cpp
//     reads n_cls_out floats per sequence at n_cls_out*seq_idx from the
//     pooled n_embd-wide output, and ggml_backend_tensor_get asserts
//     (offset + size <= nbytes) once that runs past it; newer llama.cpp
//     aborts at graph build — NewContext refuses a rank context on a
//     model without cls.output.weight (RerankError). (v0.5.0 also refuses
//     a BERT without tokenizer.ggml.token_type_count, by an exception
//     the loader turns into a load error.)
//   - Sequence states (prompt cache): llama_state_seq_set_data reads a
//     state of LLAMA_STATE_SEQ_VERSION 3 in v0.5.0 (2 in b7437); a state
//     written by another engine is never handed to it (StateVersion;
//     engine/runner's cache files carry it and others are removed).
//   - mtmd (engine/mtmd): mtmd_tokenize now throws (caught by the shim)
//     where markers and bitmaps disagree, and asserts that an image
//     reaches an image preprocessor — the marker count, the media kinds
//     the projector supports and the bitmaps' sizes are checked before;
//     mtmd no longer knows the legacy "<__image__>" marker, which Tokenize
//     rewrites to the media marker itself.
const (
	// MaxThreads is ggml's GGML_MAX_N_THREADS.
	MaxThreads = 512
	// MaxSeq is llama.cpp's LLAMA_MAX_SEQ: sequences of one context.
	MaxSeq = 256
	// MaxContext bounds a context's total KV tokens (n_ctx, uint32 in
	// llama.cpp; positions are int32).
	MaxContext = math.MaxInt32
	// MaxRepeatLastN bounds the penalty window (llama.cpp allocates a
	// ring buffer of that many tokens per sampler).
	MaxRepeatLastN = 1 << 20
)

// RangeError is a value outside the range the engine accepts.
type RangeError struct {
	Name     string
	Value    int64
	Min, Max int64
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s %d is out of range (%d..%d)", e.Name, e.Value, e.Min, e.Max)
}

// CheckRange returns a *RangeError naming the value when v is outside
// lo..hi.
func CheckRange(name string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return &RangeError{Name: name, Value: v, Min: lo, Max: hi}
	}
	return nil
}

// ThreadLimit is the most CPU threads a context may use: four per CPU,
// and never past ggml's MaxThreads. More threads than cores only make the
// spinning workers fight; thousands of them make the host unresponsive.
func ThreadLimit() int { return min(MaxThreads, 4*runtime.NumCPU()) }

// check refuses context parameters llama.cpp would truncate or assert on.
func (p ContextParams) check() error {
	checks := []error{
		CheckRange("n_ctx", int64(p.NumCtx), 0, MaxContext),
		CheckRange("n_batch", int64(p.NumBatch), 0, MaxContext),
		CheckRange("n_ubatch", int64(p.NumUBatch), 0, MaxContext),
		CheckRange("n_seq_max", int64(p.NumSeqMax), 0, MaxSeq),
		CheckRange("n_threads", int64(p.Threads), 0, int64(ThreadLimit())),
		CheckRange("n_threads_batch", int64(p.ThreadsBatch), 0, int64(ThreadLimit())),
	}
	for _, err := range checks {
		if err != nil {
			return fmt.Errorf("new context: %w", err)
		}
	}
	return nil
}

// check refuses sampler parameters llama.cpp would truncate or allocate
// without bound for, and non-finite numbers.
func (p SamplerParams) check() error {
	checks := []error{
		CheckRange("top_k", int64(p.TopK), math.MinInt32, math.MaxInt32),
		CheckRange("repeat_last_n", int64(p.RepeatLastN), -1, MaxRepeatLastN),
		CheckRange("mirostat", int64(p.Mirostat), 0, 2),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	floats := []struct {
		name string
		v    float32
	}{
		{"temperature", p.Temperature}, {"top_p", p.TopP}, {"min_p", p.MinP}, {"typical_p", p.TypicalP},
		{"repeat_penalty", p.RepeatPenalty}, {"presence_penalty", p.PresencePenalty},
		{"frequency_penalty", p.FrequencyPenalty}, {"mirostat_tau", p.MirostatTau}, {"mirostat_eta", p.MirostatEta},
	}
	for _, f := range floats {
		if math.IsNaN(float64(f.v)) || math.IsInf(float64(f.v), 0) {
			return fmt.Errorf("%s must be a finite number", f.name)
		}
	}
	for _, b := range p.LogitBias {
		// -Inf bans a token; NaN and +Inf poison the softmax.
		if math.IsNaN(float64(b)) || math.IsInf(float64(b), 1) {
			return fmt.Errorf("logit_bias values must be numbers below +Inf")
		}
	}
	return nil
}

// check refuses load parameters llama.cpp would truncate; a main GPU
// that does not exist is refused by llama.cpp itself with an error.
func (p ModelParams) check() error {
	if p.GPULayers > math.MaxInt32 { // negative: all layers
		return CheckRange("n_gpu_layers", int64(p.GPULayers), -1, math.MaxInt32)
	}
	return CheckRange("main_gpu", int64(p.MainGPU), 0, math.MaxInt32)
}
