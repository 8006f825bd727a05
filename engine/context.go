package engine

// #include <stdlib.h>
// #include "llama.h"
// #include "ggml-cpu.h"
// int tp_flash_attn(struct llama_context *ctx);
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"unsafe"
)

// FlashAttention selects flash attention; the zero value lets llama.cpp
// decide (on where the backend supports it).
type FlashAttention int

const (
	FlashAttentionAuto FlashAttention = iota
	FlashAttentionOn
	FlashAttentionOff
)

// Pooling selects how Embeddings pools a sequence's token vectors.
type Pooling int

const (
	PoolingModel Pooling = iota // the model's own (mean when it has none)
	PoolingMean
	PoolingCLS
	PoolingLast
	// PoolingRank scores a query/document pair with the model's
	// classifier head (RankScore); only a reranker has one (RerankError).
	PoolingRank
)

// ContextParams configure a context. Zero fields take llama.cpp's
// defaults, except NumCtx which defaults to the model's training context.
type ContextParams struct {
	NumCtx       int // total tokens of KV memory across all sequences
	NumBatch     int // most tokens one Decode may take (default 512)
	NumUBatch    int // physical micro-batch (default NumBatch)
	NumSeqMax    int // parallel sequences (default 1)
	Threads      int // decode threads (default: GOMAXPROCS)
	ThreadsBatch int // prompt threads (default: Threads)
	FlashAttn    FlashAttention
	// KVType is the cache type of K and V: "f16" (default), "f32", "q8_0",
	// "q4_0", "q4_1", "q5_0", "q5_1", "bf16", "iq4_nl".
	KVType string
	// KVUnified shares one KV buffer between all sequences instead of a
	// stream of NumCtx/NumSeqMax cells each (every step then attends over
	// all cells in use, of every sequence).
	KVUnified bool
	// SWAFull keeps every cell of sliding-window layers (as many as the
	// full-attention layers; llama.cpp's swa_full), so that a sequence of
	// a sliding-window model can be cut back anywhere (speculative
	// decoding's rollbacks), at the memory of a model without a window.
	SWAFull bool
	// Embeddings makes Decode produce pooled embeddings instead of logits.
	Embeddings bool
	Pooling    Pooling
	// Poll is how long the CPU threads busy-wait for the next step before
	// they sleep, 1 to 100 (mostly spin) as llama.cpp's --poll; negative:
	// none (sleep at once); 0: DefaultPoll.
	Poll int
}

// DefaultPoll is the CPU threads' busy-wait level when ContextParams
// leave it unset (llama.cpp's default is 50).
var DefaultPoll = func() int {
	if v, err := strconv.Atoi(os.Getenv("TADPOLE_POLL")); err == nil && v >= 0 && v <= 100 {
		return v
	}
	return 50
}()

// Context is one llama.cpp context: KV memory for up to NumSeqMax
// sequences and the compute buffers for decoding. It is not safe for
// concurrent use; the runner owns it from one goroutine.
type Context struct {
	c     *C.struct_llama_context
	pools []*C.struct_ggml_threadpool
	mem   C.llama_memory_t
	model *Model
	nVoc  int
	embd  bool
	// maxBatch is MaxBatchTokens, read once: llama.cpp fixes it when the
	// context is made, and Decode checks it at every step.
	maxBatch int
	// nonCausal is set while SetCausal(false) holds: batches must then fit
	// one micro-batch.
	nonCausal bool
	// kvType is the cache type asked for; faOn whether the context was
	// made with flash attention on or auto (fattn.go).
	kvType  string
	faOn    bool
	swaFull bool // ContextParams.SWAFull
}

// ErrNoKVSpace is returned by Decode when the KV memory has no room for the
// batch; the caller should free space (shift or drop sequences) and retry.
var ErrNoKVSpace = errors.New("no room left in the KV cache")

var kvTypes = map[string]C.enum_ggml_type{
	"": C.GGML_TYPE_F16, "f16": C.GGML_TYPE_F16, "f32": C.GGML_TYPE_F32, "bf16": C.GGML_TYPE_BF16,
	"q8_0": C.GGML_TYPE_Q8_0, "q4_0": C.GGML_TYPE_Q4_0, "q4_1": C.GGML_TYPE_Q4_1,
	"q5_0": C.GGML_TYPE_Q5_0, "q5_1": C.GGML_TYPE_Q5_1, "iq4_nl": C.GGML_TYPE_IQ4_NL,
}

// NewContext creates a context over the model.
func (m *Model) NewContext(p ContextParams) (*Context, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if p.Embeddings && p.Pooling == PoolingRank {
		if err := m.RerankError(); err != nil {
			return nil, fmt.Errorf("new context: rank pooling: %w", err)
		}
	}
	kv, ok := kvTypes[strings.ToLower(p.KVType)]
	if !ok {
		return nil, fmt.Errorf("new context: unknown KV cache type %q", p.KVType)
	}
	cp := C.llama_context_default_params()
	if p.NumCtx > 0 {
		cp.n_ctx = C.uint32_t(p.NumCtx)
	}
	if p.NumBatch > 0 {
		cp.n_batch = C.uint32_t(p.NumBatch)
		cp.n_ubatch = C.uint32_t(p.NumBatch)
	}
	if p.NumUBatch > 0 {
		cp.n_ubatch = C.uint32_t(p.NumUBatch)
	}
	if p.NumSeqMax > 0 {
		cp.n_seq_max = C.uint32_t(p.NumSeqMax)
	}
	threads := p.Threads
	if threads <= 0 {
		threads = DefaultThreads()
	}
	tb := p.ThreadsBatch
	if tb <= 0 {
		tb = threads
	}
	cp.n_threads = C.int32_t(threads)
	cp.n_threads_batch = C.int32_t(tb)
	switch p.FlashAttn {
	case FlashAttentionOn:
		cp.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_ENABLED
	case FlashAttentionOff:
		cp.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_DISABLED
	default:
		cp.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_AUTO
	}
	cp.type_k = kv
	cp.type_v = kv
	cp.kv_unified = C.bool(p.KVUnified)
	cp.swa_full = C.bool(p.SWAFull)
	cp.no_perf = C.bool(true)
	if p.Embeddings {
		cp.embeddings = C.bool(true)
		switch p.Pooling {
		case PoolingMean:
			cp.pooling_type = C.LLAMA_POOLING_TYPE_MEAN
		case PoolingCLS:
			cp.pooling_type = C.LLAMA_POOLING_TYPE_CLS
		case PoolingLast:
			cp.pooling_type = C.LLAMA_POOLING_TYPE_LAST
		case PoolingRank:
			cp.pooling_type = C.LLAMA_POOLING_TYPE_RANK
		}
	}
	takeLogErrors()
	c := C.llama_init_from_model(m.c, cp)
	if c == nil {
		return nil, fmt.Errorf("new context (n_ctx %d, %d sequences): %s", p.NumCtx, p.NumSeqMax, strings.Join(takeLogErrors(), "; "))
	}
	if p.Embeddings && C.llama_pooling_type(c) == C.LLAMA_POOLING_TYPE_RANK {
		// The model's own pooling is rank: without a classifier head
		// llama.cpp reads the scores out of bounds (see RerankError).
		if err := m.RerankError(); err != nil {
			C.llama_free(c)
			return nil, fmt.Errorf("new context: the model's rank pooling: %w", err)
		}
	}
	ctx := &Context{c: c, mem: C.llama_get_memory(c), model: m, nVoc: m.VocabSize(), embd: p.Embeddings, kvType: p.KVType, swaFull: p.SWAFull}
	ctx.faOn = p.FlashAttn != FlashAttentionOff
	if err := ctx.attachThreads(threads, tb, p.Poll); err != nil {
		ctx.Close()
		return nil, err
	}
	ctx.maxBatch = ctx.NumBatch()
	if ctx.embd {
		ctx.maxBatch = min(ctx.maxBatch, ctx.NumUBatch())
	}
	if p.Embeddings && p.Pooling == PoolingModel && C.llama_pooling_type(c) == C.LLAMA_POOLING_TYPE_NONE {
		// A generative model has no pooling of its own: use mean pooling.
		ctx.Close()
		p.Pooling = PoolingMean
		return m.NewContext(p)
	}
	return ctx, nil
}

// Close frees the context and its KV memory.
func (c *Context) Close() {
	if c == nil || c.c == nil {
		return
	}
	C.llama_free(c.c)
	c.c = nil
	for _, tp := range c.pools {
		C.ggml_threadpool_free(tp)
	}
	c.pools = nil
}

// attachThreads gives the context CPU threads that live as long as it
// does, as llama-server does: without them ggml starts and joins its
// worker threads at every decode step. A separate pool serves prompt
// batches when their thread count differs.
func (c *Context) attachThreads(threads, threadsBatch, poll int) error {
	switch {
	case poll == 0:
		poll = DefaultPoll
	case poll < 0:
		poll = 0
	}
	if err := CheckRange("poll", int64(poll), 0, 100); err != nil {
		return err
	}
	newPool := func(n int, paused bool) *C.struct_ggml_threadpool {
		tpp := C.ggml_threadpool_params_default(C.int(n))
		tpp.poll = C.uint32_t(poll)
		tpp.paused = C.bool(paused)
		tp := C.ggml_threadpool_new(&tpp)
		if tp != nil {
			c.pools = append(c.pools, tp)
		}
		return tp
	}
	var batch *C.struct_ggml_threadpool
	if threadsBatch != threads {
		if batch = newPool(threadsBatch, false); batch == nil {
			return fmt.Errorf("new context: cannot start %d threads", threadsBatch)
		}
	}
	tp := newPool(threads, batch != nil)
	if tp == nil {
		return fmt.Errorf("new context: cannot start %d threads", threads)
	}
	C.llama_attach_threadpool(c.c, tp, batch)
	return nil
}

// Model is the model the context was made from.
func (c *Context) Model() *Model { return c.model }

// NumCtx is the total KV memory in tokens.
func (c *Context) NumCtx() int { return int(C.llama_n_ctx(c.c)) }

// NumCtxSeq is the most tokens one sequence may hold.
func (c *Context) NumCtxSeq() int { return int(C.llama_n_ctx_seq(c.c)) }

// NumBatch is the most tokens one Decode may take.
func (c *Context) NumBatch() int { return int(C.llama_n_batch(c.c)) }

// NumUBatch is the physical micro-batch: a non-causal model (an encoder)
// must see a whole sequence in one micro-batch.
func (c *Context) NumUBatch() int { return int(C.llama_n_ubatch(c.c)) }

// MaxBatchTokens is the most tokens one Decode accepts: llama.cpp's real
// n_batch (it pads n_ctx and clamps n_batch to it), and for an embedding
// context its n_ubatch too, since encoders and non-causal pooling need
// the whole sequence in one micro-batch.
func (c *Context) MaxBatchTokens() int { return c.maxBatch }

// NumSeqMax is the number of sequences the context holds.
func (c *Context) NumSeqMax() int { return int(C.llama_n_seq_max(c.c)) }

// Decode evaluates a batch. On success the logits (or embeddings) of the
// batch's output tokens are available until the next Decode.
func (c *Context) Decode(b *Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if err := c.checkBatchLen(b.Len()); err != nil {
		return err
	}
	b.c.n_tokens = C.int32_t(b.n)
	rc := C.llama_decode(c.c, b.c)
	switch {
	case rc == 0:
		return nil
	case rc == 1:
		return ErrNoKVSpace
	case rc == 2:
		return errors.New("decode aborted")
	default:
		return fmt.Errorf("decode of %d tokens failed (llama_decode returned %d): %s", b.Len(), int(rc), strings.Join(takeLogErrors(), "; "))
	}
}

// checkBatchLen refuses a batch llama_decode would assert on: n_tokens <=
// n_batch, and <= n_ubatch without causal attention (SetCausal(false)).
func (c *Context) checkBatchLen(n int) error {
	if limit := c.maxBatch; n > limit {
		return fmt.Errorf("decode: batch of %d tokens is larger than the context's batch size %d", n, limit)
	}
	if limit := c.NumUBatch(); c.nonCausal && n > limit {
		return fmt.Errorf("decode: batch of %d tokens without causal attention is larger than the context's micro-batch %d", n, limit)
	}
	return nil
}

// SetCausal switches causal attention on or off for the next decodes
// (llama_set_causal_attn): a projector's image embeddings may need to
// attend to each other both ways (Gemma 3), which llama.cpp only does
// inside one micro-batch, so while it is off Decode and DecodeEmbd refuse
// a batch larger than NumUBatch. Switch it back on after such a span.
// An embedding context keeps its model's attention (refused).
func (c *Context) SetCausal(causal bool) error {
	if c.embd {
		return errors.New("set causal attention: an embedding context keeps the model's attention")
	}
	C.llama_set_causal_attn(c.c, C.bool(causal))
	c.nonCausal = !causal
	return nil
}

// Logits are the next-token logits for output i of the last batch (the
// i-th token added with logits=true counts by its batch index). The slice
// points into llama.cpp's buffer and is valid until the next Decode.
func (c *Context) Logits(i int) []float32 {
	p := C.llama_get_logits_ith(c.c, C.int32_t(i))
	if p == nil {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), c.nVoc)
}

// Embeddings is the pooled, L2-normalised embedding of a sequence after a
// Decode on a context made with Embeddings set.
func (c *Context) Embeddings(seq int) ([]float32, error) {
	p := C.llama_get_embeddings_seq(c.c, C.llama_seq_id(seq))
	if p == nil {
		return nil, fmt.Errorf("no embeddings for sequence %d", seq)
	}
	n := int(C.llama_model_n_embd(c.model.c))
	if k := int(C.llama_model_n_cls_out(c.model.c)); C.llama_pooling_type(c.c) == C.LLAMA_POOLING_TYPE_RANK && k > 0 {
		n = k
	}
	src := unsafe.Slice((*float32)(unsafe.Pointer(p)), n)
	out := make([]float32, n)
	var sum float64
	for i, v := range src {
		out[i] = v
		sum += float64(v) * float64(v)
	}
	if sum > 0 {
		inv := float32(1 / math.Sqrt(sum))
		for i := range out {
			out[i] *= inv
		}
	}
	return out, nil
}

// Memory operations on one sequence's KV cells. Positions are half-open
// ranges [p0, p1); a negative bound means "from the start" / "to the end".

// SeqRemove drops the sequence's cells in [p0, p1). It fails only for a
// partial removal the memory cannot do (recurrent models).
func (c *Context) SeqRemove(seq, p0, p1 int) bool {
	return bool(C.llama_memory_seq_rm(c.mem, C.llama_seq_id(seq), C.llama_pos(p0), C.llama_pos(p1)))
}

// SeqCopy makes dst share src's cells in [p0, p1).
func (c *Context) SeqCopy(src, dst, p0, p1 int) {
	C.llama_memory_seq_cp(c.mem, C.llama_seq_id(src), C.llama_seq_id(dst), C.llama_pos(p0), C.llama_pos(p1))
}

// SeqKeep drops every cell that does not belong to seq.
func (c *Context) SeqKeep(seq int) { C.llama_memory_seq_keep(c.mem, C.llama_seq_id(seq)) }

// SeqShift adds delta to the positions of the sequence's cells in [p0, p1)
// (a context shift moves the tail left with a negative delta).
func (c *Context) SeqShift(seq, p0, p1, delta int) {
	C.llama_memory_seq_add(c.mem, C.llama_seq_id(seq), C.llama_pos(p0), C.llama_pos(p1), C.llama_pos(delta))
}

// SeqPosMax is the largest position the sequence holds, or -1 when empty.
func (c *Context) SeqPosMax(seq int) int {
	return int(C.llama_memory_seq_pos_max(c.mem, C.llama_seq_id(seq)))
}

// CanShift reports whether the memory supports SeqShift.
func (c *Context) CanShift() bool { return bool(C.llama_memory_can_shift(c.mem)) }

// ClearMemory empties the KV memory of every sequence.
func (c *Context) ClearMemory() { C.llama_memory_clear(c.mem, C.bool(true)) }

// Batch is a set of tokens for one Decode, each with a position, one
// sequence and whether its logits are wanted.
type Batch struct {
	c   C.struct_llama_batch
	n   int
	cap int
	tok []C.llama_token
	pos []C.llama_pos
	nsq []C.int32_t
	sq  []*C.llama_seq_id
	out []C.int8_t
}

// NewBatch allocates a batch for up to capacity tokens (1..MaxContext:
// llama_batch_init takes an int32).
func NewBatch(capacity int) (*Batch, error) {
	if err := CheckRange("batch capacity", int64(capacity), 1, MaxContext); err != nil {
		return nil, err
	}
	b := &Batch{c: C.llama_batch_init(C.int32_t(capacity), 0, 1), cap: capacity}
	b.tok = unsafe.Slice(b.c.token, capacity)
	b.pos = unsafe.Slice(b.c.pos, capacity)
	b.nsq = unsafe.Slice(b.c.n_seq_id, capacity)
	b.sq = unsafe.Slice(b.c.seq_id, capacity)
	b.out = unsafe.Slice(b.c.logits, capacity)
	return b, nil
}

// Add appends a token and returns its index in the batch (the index to
// pass to Logits or a sampler). It panics when the batch is full.
func (b *Batch) Add(t Token, pos, seq int, logits bool) int {
	if b.n >= b.cap {
		panic("engine: batch overflow")
	}
	i := b.n
	b.tok[i] = C.llama_token(t)
	b.pos[i] = C.llama_pos(pos)
	b.nsq[i] = 1
	*b.sq[i] = C.llama_seq_id(seq)
	if logits {
		b.out[i] = 1
	} else {
		b.out[i] = 0
	}
	b.n++
	return i
}

// Len is the number of tokens in the batch.
func (b *Batch) Len() int { return b.n }

// Cap is the batch's capacity.
func (b *Batch) Cap() int { return b.cap }

// Clear empties the batch for reuse.
func (b *Batch) Clear() { b.n = 0 }

// Close frees the batch.
func (b *Batch) Close() {
	if b.cap > 0 {
		C.llama_batch_free(b.c)
		b.cap, b.n = 0, 0
	}
}

// SeqState returns a copy of the sequence's state (its KV cells and their
// positions): SetSeqState restores it into a sequence of a context of
// the same model and parameters (KV type, per-sequence window). An empty
// sequence gives a small state that restores to an empty one.
func (c *Context) SeqState(seq int) ([]byte, error) {
	if err := c.checkSeq(seq); err != nil {
		return nil, err
	}
	n, err := c.seqStateSize(seq)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, int(n))
	got := C.llama_state_seq_get_data(c.c, (*C.uint8_t)(unsafe.Pointer(&buf[0])), n, C.llama_seq_id(seq))
	if got == 0 || got > n {
		return nil, fmt.Errorf("sequence %d: llama.cpp could not copy its state", seq)
	}
	return buf[:int(got)], nil
}

// SetSeqState replaces the sequence's cells with a state from SeqState.
// On failure (a state of another model or context shape, a damaged one)
// the sequence is left empty and an error returned; llama.cpp checks the
// state's layout before it writes, and never aborts on one.
func (c *Context) SetSeqState(seq int, data []byte) error {
	if err := c.checkSeq(seq); err != nil {
		return err
	}
	if len(data) == 0 {
		return errors.New("empty sequence state")
	}
	got := C.llama_state_seq_set_data(c.c, (*C.uint8_t)(unsafe.Pointer(&data[0])), C.size_t(len(data)), C.llama_seq_id(seq))
	if got == 0 {
		c.SeqRemove(seq, -1, -1)
		return fmt.Errorf("sequence %d: llama.cpp refused the state (%d bytes): not one of this model and context", seq, len(data))
	}
	return nil
}

// checkSeq refuses a sequence id the memory would assert on.
func (c *Context) checkSeq(seq int) error {
	if seq < 0 || seq >= c.NumSeqMax() {
		return fmt.Errorf("sequence %d out of range (0..%d)", seq, c.NumSeqMax()-1)
	}
	return nil
}

// At is the position and sequence of the batch's i-th token.
func (b *Batch) At(i int) (pos, seq int) {
	return int(b.pos[i]), int(*b.sq[i])
}

// seqStateSize is llama.cpp's size of the sequence's state, checked.
func (c *Context) seqStateSize(seq int) (C.size_t, error) {
	n := C.llama_state_seq_get_size(c.c, C.llama_seq_id(seq))
	if n == 0 || uint64(n) > math.MaxInt32*uint64(64) { // 128 GiB: no KV of a real context is larger
		return 0, fmt.Errorf("sequence %d: state size %d out of range", seq, uint64(n))
	}
	return n, nil
}
