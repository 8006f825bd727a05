package testmodels

import (
	"errors"
	"fmt"
	"math"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Shape is the size of a llama model.
type Shape struct {
	Vocab   int // tokens
	Embd    int // embedding width (llama.embedding_length)
	Layers  int // transformer blocks
	Heads   int // attention heads
	HeadsKV int // key/value heads (grouped-query attention when < Heads)
	FF      int // feed-forward width
	Context int // trained context length
}

// Model shapes.
var (
	// Llama1B is shaped like Llama 3.2 1B with a Llama-2-sized vocabulary:
	// about 1.1 billion parameters, 0.6 GB in Q4_0, 2.2 GB in F16.
	Llama1B = Shape{Vocab: 32000, Embd: 2048, Layers: 16, Heads: 32, HeadsKV: 8, FF: 8192, Context: 4096}
	// Smol135M is shaped like SmolLM2-135M (a 49,152-token vocabulary,
	// 30 thin layers): about 0.16 billion parameters with untied output
	// weights, 0.17 GB in Q8_0. Its vocabulary makes sampling cost show.
	Smol135M = Shape{Vocab: 49152, Embd: 576, Layers: 30, Heads: 9, HeadsKV: 3, FF: 1536, Context: 8192}
	// Small has about 5 million parameters (3 MB in Q4_0).
	Small = Shape{Vocab: 4096, Embd: 256, Layers: 4, Heads: 8, HeadsKV: 4, FF: 768, Context: 2048}
	// Tiny has about 0.2 million parameters, for fast tests.
	Tiny = Shape{Vocab: 512, Embd: 64, Layers: 2, Heads: 4, HeadsKV: 2, FF: 128, Context: 512}
)

// HeadDim is the width of one attention head.
func (s Shape) HeadDim() int {
	if s.Heads == 0 {
		return 0
	}
	return s.Embd / s.Heads
}

// Params is the number of weights of a model of this shape.
func (s Shape) Params() uint64 {
	e, v, f := uint64(s.Embd), uint64(s.Vocab), uint64(s.FF)
	kv := uint64(s.HeadsKV * s.HeadDim())
	perLayer := 2*e + e*e + 2*e*kv + e*e + 3*e*f
	return 2*v*e + e + uint64(s.Layers)*perLayer
}

// Validate checks that a model of this shape and weight type can be
// written and loaded by llama.cpp.
func (s Shape) Validate(t gguf.TensorType) error {
	switch t {
	case gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0:
	default:
		return fmt.Errorf("weight type %s not supported (F32, F16, Q8_0, Q4_0)", t)
	}
	switch {
	case s.Vocab < minVocab:
		return fmt.Errorf("vocabulary %d too small, at least %d", s.Vocab, minVocab)
	case s.Vocab > math.MaxInt32:
		return errors.New("vocabulary too large")
	case s.Embd <= 0 || s.Layers <= 0 || s.Heads <= 0 || s.HeadsKV <= 0 || s.FF <= 0 || s.Context <= 0:
		return fmt.Errorf("shape %+v: every size must be positive", s)
	case s.Embd%s.Heads != 0 || s.HeadDim()%2 != 0:
		return fmt.Errorf("embedding width %d is not a multiple of 2×%d heads", s.Embd, s.Heads)
	case s.Heads%s.HeadsKV != 0:
		return fmt.Errorf("%d heads are not a multiple of %d KV heads", s.Heads, s.HeadsKV)
	}
	bs := int(t.BlockSize())
	for _, n := range []int{s.Embd, s.FF} {
		if n%bs != 0 {
			return fmt.Errorf("width %d is not a multiple of the %s block size %d", n, t, bs)
		}
	}
	return nil
}

// RandomLlama returns the metadata and tensors of a llama model of shape s
// with pseudo-random weights of type t (F32, F16, Q8_0 or Q4_0; norms are
// F32, all ones), determined by seed. The tensor data is produced by Fill
// callbacks as the file is written.
func RandomLlama(s Shape, t gguf.TensorType, seed int64) ([]gguf.KV, []gguf.Tensor, error) {
	if err := s.Validate(t); err != nil {
		return nil, nil, err
	}
	v, err := syntheticVocab(s.Vocab)
	if err != nil {
		return nil, nil, err
	}
	ft, _ := gguf.FileTypeOf(t)
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: fmt.Sprintf("Tadpole random llama %s %s", s.label(), t)},
		{Key: "general.description", Value: "Random weights for benchmarks; the output is gibberish."},
		{Key: "general.file_type", Value: uint32(ft)},
	}
	if t.BlockSize() > 1 {
		kvs = append(kvs, gguf.KV{Key: "general.quantization_version", Value: uint32(2)})
	}
	kvs = append(kvs,
		gguf.KV{Key: "llama.vocab_size", Value: uint32(s.Vocab)},
		gguf.KV{Key: "llama.context_length", Value: uint32(s.Context)},
		gguf.KV{Key: "llama.embedding_length", Value: uint32(s.Embd)},
		gguf.KV{Key: "llama.block_count", Value: uint32(s.Layers)},
		gguf.KV{Key: "llama.feed_forward_length", Value: uint32(s.FF)},
		gguf.KV{Key: "llama.attention.head_count", Value: uint32(s.Heads)},
		gguf.KV{Key: "llama.attention.head_count_kv", Value: uint32(s.HeadsKV)},
		gguf.KV{Key: "llama.rope.dimension_count", Value: uint32(s.HeadDim())},
		gguf.KV{Key: "llama.rope.freq_base", Value: float32(10000)},
		gguf.KV{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
	)
	kvs = append(kvs, v.kvs()...)

	e, kv := s.Embd, s.HeadsKV*s.HeadDim()
	var tensors []gguf.Tensor
	var ferr error
	// matrix is a [rows][cols] weight (ggml dims {cols, rows}), values of
	// standard deviation std.
	matrix := func(name string, cols, rows int, std float64) {
		fill, err := randomFill(t, uint64(cols)*uint64(rows), float32(std), seed, name)
		if err != nil && ferr == nil {
			ferr = err
		}
		tensors = append(tensors, gguf.Tensor{Name: name, Dims: []uint64{uint64(cols), uint64(rows)}, Type: t, Fill: fill})
	}
	norm := func(name string) {
		tensors = append(tensors, gguf.Tensor{Name: name, Dims: []uint64{uint64(e)}, Type: gguf.F32, Data: constF32(e, 1)})
	}
	// Weights scaled by 1/sqrt(fan-in) keep activations of order 1.
	inv := func(n int) float64 { return 1 / math.Sqrt(float64(n)) }
	matrix("token_embd.weight", e, s.Vocab, 1)
	for i := range s.Layers {
		b := fmt.Sprintf("blk.%d.", i)
		norm(b + "attn_norm.weight")
		matrix(b+"attn_q.weight", e, e, inv(e))
		matrix(b+"attn_k.weight", e, kv, inv(e))
		matrix(b+"attn_v.weight", e, kv, inv(e))
		matrix(b+"attn_output.weight", e, e, inv(e))
		norm(b + "ffn_norm.weight")
		matrix(b+"ffn_gate.weight", e, s.FF, inv(e))
		matrix(b+"ffn_up.weight", e, s.FF, inv(e))
		matrix(b+"ffn_down.weight", s.FF, e, inv(s.FF))
	}
	norm("output_norm.weight")
	matrix("output.weight", e, s.Vocab, inv(e))
	if ferr != nil {
		return nil, nil, ferr
	}
	return kvs, tensors, nil
}

func (s Shape) label() string {
	switch s {
	case Llama1B:
		return "1B"
	case Small:
		return "small"
	case Tiny:
		return "tiny"
	}
	return fmt.Sprintf("%dM", (s.Params()+500_000)/1_000_000)
}

// WriteRandomLlama writes a llama model of shape s with pseudo-random
// weights of type t (F32, F16, Q8_0 or Q4_0) to path. The same arguments
// always give the same file.
func WriteRandomLlama(path string, s Shape, t gguf.TensorType, seed int64) error {
	kvs, tensors, err := RandomLlama(s, t, seed)
	if err != nil {
		return fmt.Errorf("random llama: %w", err)
	}
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write random llama: %w", err)
	}
	return nil
}
