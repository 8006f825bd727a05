package engine

// #include <stdlib.h>
// #include "llama.h"
import "C"

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// Embedding input: an image or audio clip reaches the text model as
// vectors of the model's input width (mtmd encodes a chunk into
// NTokens × n_embd floats) instead of token ids. llama_batch_init with
// embd > 0 gives a batch of such vectors; one llama_decode takes either
// tokens or vectors, never both, so they are decoded in a batch of their
// own (EmbdBatch, Context.DecodeEmbd).
//
// The limits checked before llama.cpp sees the batch (see limits.go):
//
//   - n_tokens <= n_batch, and <= n_ubatch while causal attention is off
//     (llama-context.cpp decode asserts both) — DecodeEmbd, as Decode;
//   - the row width is the model's input width (llama_model_n_embd_inp):
//     llama.cpp copies n_embd floats per row from batch.embd whatever was
//     allocated — NewEmbdBatch takes the model's width itself;
//   - capacity × width floats, overflow-checked (MaxEmbdFloats): the C
//     allocation is size_t but the Go slice over it is not;
//   - sequence ids < n_seq_max and positions in 0..MaxContext-1: llama.cpp
//     refuses those with an error, checked here first for a clear one;
//   - M-RoPE models (Qwen2-VL) read n_pos_per_embd (4) positions per row
//     of an embedding batch, laid out section by section: the batch's
//     position buffer holds 4 per row, so llama.cpp never reads past it
//     (each row's position is repeated in every section, as llama.cpp
//     does for text; an image's 2-D positions are not supported yet);
//   - NaN and ±Inf are refused by Add: llama.cpp does not check, and a
//     non-finite input poisons every logit of the sequence.

// MaxEmbdFloats bounds an embedding batch's buffer: 2^31 floats (8 GiB).
const MaxEmbdFloats = 1 << 31

// maxPosPerEmbd is the most positions llama.cpp reads per embedding row
// (llama_hparams::n_pos_per_embd: 4 for M-RoPE).
const maxPosPerEmbd = 4

// EmbdSize is the width of the model's input embeddings
// (llama_model_n_embd_inp): the floats per position of an EmbdBatch.
func (m *Model) EmbdSize() int { return int(C.llama_model_n_embd_inp(m.c)) }

// MRoPE reports whether the model uses multi-section rotary positions
// (Qwen2-VL and later): their images take 2-D positions an EmbdBatch
// cannot give yet.
func (m *Model) MRoPE() bool {
	t := C.llama_model_rope_type(m.c)
	return t == C.LLAMA_ROPE_TYPE_MROPE || t == C.LLAMA_ROPE_TYPE_IMROPE
}

// HasEncoder reports whether the model has an encoder (T5): its decoder
// takes no embedding input from an EmbdBatch.
func (m *Model) HasEncoder() bool { return bool(C.llama_model_has_encoder(m.c)) }

// EmbdBatch is a set of input embeddings for one DecodeEmbd, each row
// with a position, one sequence and whether its logits are wanted.
type EmbdBatch struct {
	c     C.struct_llama_batch
	n     int
	cap   int
	width int
	embd  []float32
	pos   []C.llama_pos // cap × maxPosPerEmbd, laid out by DecodeEmbd
	rowP  []int32       // each row's position
	nsq   []C.int32_t
	sq    []*C.llama_seq_id
	out   []C.int8_t
}

// NewEmbdBatch allocates a batch for up to capacity rows of the model's
// input width.
func (m *Model) NewEmbdBatch(capacity int) (*EmbdBatch, error) {
	width := m.EmbdSize()
	if err := CheckRange("embedding batch capacity", int64(capacity), 1, MaxContext); err != nil {
		return nil, err
	}
	if width <= 0 {
		return nil, fmt.Errorf("embedding batch: the model has no input embedding width")
	}
	if capacity > MaxEmbdFloats/width {
		return nil, fmt.Errorf("embedding batch: %d rows of %d floats exceed %d floats", capacity, width, MaxEmbdFloats)
	}
	c := C.llama_batch_init(C.int32_t(capacity), C.int32_t(width), 1)
	if c.embd == nil || c.pos == nil || c.n_seq_id == nil || c.seq_id == nil || c.logits == nil {
		C.llama_batch_free(c)
		return nil, fmt.Errorf("embedding batch: out of memory (%d rows of %d floats)", capacity, width)
	}
	// Room for n_pos_per_embd positions per row (M-RoPE); llama_batch_free
	// frees it as its own.
	C.free(unsafe.Pointer(c.pos))
	c.pos = (*C.llama_pos)(C.calloc(C.size_t(capacity)*maxPosPerEmbd, C.size_t(unsafe.Sizeof(C.llama_pos(0)))))
	if c.pos == nil {
		C.llama_batch_free(c)
		return nil, fmt.Errorf("embedding batch: out of memory (%d positions)", capacity)
	}
	b := &EmbdBatch{c: c, cap: capacity, width: width}
	b.embd = unsafe.Slice((*float32)(unsafe.Pointer(c.embd)), capacity*width)
	b.pos = unsafe.Slice(c.pos, capacity*maxPosPerEmbd)
	b.rowP = make([]int32, capacity)
	b.nsq = unsafe.Slice(c.n_seq_id, capacity)
	b.sq = unsafe.Slice(c.seq_id, capacity)
	b.out = unsafe.Slice(c.logits, capacity)
	return b, nil
}

// ErrNotFinite is returned for an embedding with a NaN or infinite value.
var ErrNotFinite = errors.New("embedding values must be finite numbers")

// Add appends one row (len(vec) == Width()) at a position of a sequence
// and returns its index in the batch (the index to pass to Logits or a
// sampler). It refuses a full batch, a row of the wrong width, a negative
// sequence, a position outside 0..MaxContext-1 and non-finite values.
func (b *EmbdBatch) Add(vec []float32, pos, seq int, logits bool) (int, error) {
	if b.n >= b.cap {
		return 0, fmt.Errorf("embedding batch is full (%d rows)", b.cap)
	}
	if len(vec) != b.width {
		return 0, fmt.Errorf("embedding of %d floats: the model's input width is %d", len(vec), b.width)
	}
	if err := CheckRange("position", int64(pos), 0, MaxContext-1); err != nil {
		return 0, err
	}
	if err := CheckRange("sequence", int64(seq), 0, MaxSeq-1); err != nil {
		return 0, err
	}
	for _, v := range vec {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return 0, ErrNotFinite
		}
	}
	i := b.n
	copy(b.embd[i*b.width:(i+1)*b.width], vec)
	b.rowP[i] = int32(pos)
	b.nsq[i] = 1
	*b.sq[i] = C.llama_seq_id(seq)
	if logits {
		b.out[i] = 1
	} else {
		b.out[i] = 0
	}
	b.n++
	return i, nil
}

// Len is the number of rows in the batch.
func (b *EmbdBatch) Len() int { return b.n }

// Cap is the batch's capacity in rows.
func (b *EmbdBatch) Cap() int { return b.cap }

// Width is the floats of one row (the model's input width).
func (b *EmbdBatch) Width() int { return b.width }

// Clear empties the batch for reuse.
func (b *EmbdBatch) Clear() { b.n = 0 }

// Close frees the batch.
func (b *EmbdBatch) Close() {
	if b.cap > 0 {
		C.llama_batch_free(b.c)
		b.cap, b.n = 0, 0
		b.embd, b.pos, b.nsq, b.sq, b.out = nil, nil, nil, nil, nil
	}
}

// DecodeEmbd evaluates a batch of embeddings, as Decode does a batch of
// tokens. The batch must have been made for this context's model.
func (c *Context) DecodeEmbd(b *EmbdBatch) error {
	if b.Len() == 0 {
		return nil
	}
	if b.cap == 0 {
		return errors.New("decode: embedding batch is closed")
	}
	if w := c.model.EmbdSize(); b.width != w {
		return fmt.Errorf("decode: embeddings of %d floats, the model's input width is %d", b.width, w)
	}
	if c.model.HasEncoder() {
		return errors.New("decode: the model has an encoder and takes no embedding input")
	}
	if err := c.checkBatchLen(b.Len()); err != nil {
		return err
	}
	nseq := c.NumSeqMax()
	for i := 0; i < b.n; i++ {
		if s := int(*b.sq[i]); s >= nseq {
			return fmt.Errorf("decode: sequence %d is out of range (0..%d)", s, nseq-1)
		}
	}
	// Positions: one per row, repeated in each M-RoPE section.
	sections := 1
	if c.model.MRoPE() {
		sections = maxPosPerEmbd
	}
	for j := 0; j < sections; j++ {
		for i := 0; i < b.n; i++ {
			b.pos[j*b.n+i] = C.llama_pos(b.rowP[i])
		}
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
		return fmt.Errorf("decode of %d embeddings failed (llama_decode returned %d): %s", b.Len(), int(rc), strings.Join(takeLogErrors(), "; "))
	}
}
