package testmodels

import (
	"errors"
	"fmt"
	"math"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Gemma4Shape is the size of a model of llama.cpp's "gemma4" architecture
// in the layout of Gemma 4 E2B/E4B: sliding-window layers interleaved with
// global ones (every FullEvery-th layer is global, as in the checkpoints'
// layer_types), global layers with wider heads and "proportional" RoPE
// (rope_freqs.weight: a quarter of each head rotated), the last
// SharedKVLayers layers computing no K/V of their own but attending over
// the cache of the last KV layer of their kind, and per-layer token
// embeddings (PLE) of EmbdPerLayer values per layer.
type Gemma4Shape struct {
	Vocab          int  // tokens
	Embd           int  // embedding width
	Layers         int  // transformer blocks
	Heads          int  // attention heads (every layer)
	HeadsKV        int  // key/value heads (every layer)
	HeadDimSWA     int  // head width of the sliding-window layers
	HeadDimFull    int  // head width of the global layers
	FF             int  // feed-forward width of the KV layers
	DoubleWideMLP  bool // the shared-KV layers have 2×FF (use_double_wide_mlp)
	FullEvery      int  // layers FullEvery-1, 2·FullEvery-1, … are global
	SlidingWindow  int  // tokens a sliding-window layer attends to
	SharedKVLayers int  // trailing layers that reuse earlier layers' KV cache
	EmbdPerLayer   int  // per-layer embedding width (0: none)
	Context        int  // trained context length
}

// Gemma4Tiny is Gemma 4 E2B's layout shrunk for tests: 10 layers, of
// which 4 and 9 are global and the other 8 see a 512-token sliding window;
// layers 5 to 9 share the KV cache of layers 3 (sliding) and 4 (global)
// and have a double-wide MLP; one attention KV head; 32-wide per-layer
// embeddings. 1.8 M parameters: 7.1 MB in F32, 1.9 MB in Q8_0.
var Gemma4Tiny = Gemma4Shape{
	Vocab: 1024, Embd: 128, Layers: 10, Heads: 4, HeadsKV: 1,
	HeadDimSWA: 32, HeadDimFull: 64, FF: 128, DoubleWideMLP: true,
	FullEvery: 5, SlidingWindow: 512, SharedKVLayers: 5, EmbdPerLayer: 32,
	Context: 4096,
}

// IsSWA reports whether layer il is a sliding-window layer.
func (s Gemma4Shape) IsSWA(il int) bool { return (il+1)%s.FullEvery != 0 }

// HasKV reports whether layer il computes (and caches) its own K and V.
func (s Gemma4Shape) HasKV(il int) bool { return il < s.Layers-s.SharedKVLayers }

// LayerFF is the feed-forward width of layer il.
func (s Gemma4Shape) LayerFF(il int) int {
	if s.DoubleWideMLP && !s.HasKV(il) {
		return 2 * s.FF
	}
	return s.FF
}

func (s Gemma4Shape) headDim(il int) int {
	if s.IsSWA(il) {
		return s.HeadDimSWA
	}
	return s.HeadDimFull
}

// ropeFullDims is the number of rotated dimension pairs of a global
// layer's head: Gemma 4 rotates a quarter of it (partial_rotary_factor
// 0.25 of its "proportional" RoPE).
func (s Gemma4Shape) ropeFullDims() int { return s.HeadDimFull / 8 }

// Params is the number of weights of a model of this shape.
func (s Gemma4Shape) Params() uint64 {
	e, v := uint64(s.Embd), uint64(s.Vocab)
	n := v*e + e + uint64(s.HeadDimFull/2) // token_embd, output_norm, rope_freqs
	if s.EmbdPerLayer > 0 {
		pl := uint64(s.EmbdPerLayer)
		n += v*pl*uint64(s.Layers) + e*pl*uint64(s.Layers) + pl
	}
	for il := range s.Layers {
		hd, q := uint64(s.headDim(il)), uint64(s.Heads*s.headDim(il))
		kv := uint64(s.HeadsKV) * hd
		n += e + e*q + q*e + hd + e + 1 // attn_norm, q, output, q_norm, post_attention_norm, layer_output_scale
		if s.HasKV(il) {
			n += 2*e*kv + hd // k, v, k_norm
		}
		ff := uint64(s.LayerFF(il))
		n += e + 3*e*ff + e // ffn_norm, gate/up/down, post_ffw_norm
		if s.EmbdPerLayer > 0 {
			pl := uint64(s.EmbdPerLayer)
			n += 2*e*pl + e // inp_gate, proj, post_norm
		}
	}
	return n
}

// Validate checks that a model of this shape and weight type can be
// written and that llama.cpp v0.5.0's gemma4 loader takes it.
func (s Gemma4Shape) Validate(t gguf.TensorType) error {
	if err := checkWeightType(t); err != nil {
		return err
	}
	switch {
	case s.Vocab < minVocab:
		return fmt.Errorf("vocabulary %d too small, at least %d", s.Vocab, minVocab)
	case s.Vocab > math.MaxInt32:
		return errors.New("vocabulary too large")
	case s.Layers < 2 || s.Heads <= 0 || s.HeadsKV <= 0 || s.Context <= 0 || s.SlidingWindow <= 0 || s.EmbdPerLayer < 0:
		return fmt.Errorf("gemma4 shape %+v: sizes must be positive (at least 2 layers)", s)
	case s.Heads%s.HeadsKV != 0:
		return fmt.Errorf("%d heads are not a multiple of %d KV heads", s.Heads, s.HeadsKV)
	case s.HeadDimSWA <= 0 || s.HeadDimSWA%2 != 0:
		return fmt.Errorf("sliding-window head width %d: want a positive even number", s.HeadDimSWA)
	case s.HeadDimFull <= 0 || s.HeadDimFull%8 != 0:
		return fmt.Errorf("global head width %d: want a positive multiple of 8 (a quarter of it is rotated)", s.HeadDimFull)
	case s.FullEvery < 2 || s.FullEvery > s.Layers:
		// llama.cpp asserts that some layer is sliding-window; rope_freqs
		// belongs to the global layers, so one must exist.
		return fmt.Errorf("every %d-th layer global in %d layers: want 2 to %d", s.FullEvery, s.Layers, s.Layers)
	case s.SharedKVLayers < 0 || s.SharedKVLayers > s.Layers-2:
		return fmt.Errorf("%d shared-KV layers of %d: at least 2 layers must have their own KV", s.SharedKVLayers, s.Layers)
	}
	if s.SharedKVLayers > 0 {
		// A shared global layer reads the cache of the last KV layer, a
		// shared sliding-window one that of the layer before it
		// (llama-model.cpp's reuse callback): those must be of that kind.
		last := s.Layers - s.SharedKVLayers - 1
		if s.IsSWA(last) || !s.IsSWA(last-1) {
			return fmt.Errorf("the last two KV layers (%d, %d) must be sliding-window then global for the shared layers to reuse them", last-1, last)
		}
	}
	rows := map[string]int{
		"embedding width": s.Embd, "feed-forward width": s.FF,
		"sliding-window attention width": s.Heads * s.HeadDimSWA, "global attention width": s.Heads * s.HeadDimFull,
	}
	if s.EmbdPerLayer > 0 {
		rows["per-layer embedding width"] = s.EmbdPerLayer
	}
	return checkRows(t, rows)
}

// RandomGemma4 returns the metadata and tensors of a gemma4 model of shape
// s with pseudo-random weights of type t (F32, F16, Q8_0 or Q4_0),
// determined by seed, in the layout llama.cpp v0.5.0 loads (the keys and
// tensors convert_hf_to_gguf.py writes for Gemma 4; norms, rope_freqs and
// the layer scales are F32 as there; per_layer_model_proj stays float as
// llama-quantize leaves it). The output embedding is tied to token_embd.
// The shared-KV layers carry no attn_k/attn_v/attn_k_norm, which the loader
// does not require of them.
func RandomGemma4(s Gemma4Shape, t gguf.TensorType, seed int64) ([]gguf.KV, []gguf.Tensor, error) {
	if err := s.Validate(t); err != nil {
		return nil, nil, err
	}
	v, err := syntheticVocab(s.Vocab)
	if err != nil {
		return nil, nil, err
	}
	b := newModelBuilder("gemma4", fmt.Sprintf("Tadpole random gemma4 %s %s", s.label(), t), t, seed)
	swa := make([]bool, s.Layers)
	ff := make([]int32, s.Layers)
	wide := false
	for il := range s.Layers {
		swa[il] = s.IsSWA(il)
		ff[il] = int32(s.LayerFF(il))
		wide = wide || s.LayerFF(il) != s.FF
	}
	b.key("vocab_size", uint32(s.Vocab))
	b.key("block_count", uint32(s.Layers))
	b.key("context_length", uint32(s.Context))
	b.key("embedding_length", uint32(s.Embd))
	if wide {
		b.key("feed_forward_length", ff) // an int32 array, as gguf-py writes a list
	} else {
		b.key("feed_forward_length", uint32(s.FF))
	}
	b.key("attention.head_count", uint32(s.Heads))
	b.key("attention.head_count_kv", uint32(s.HeadsKV))
	b.key("attention.layer_norm_rms_epsilon", float32(1e-6))
	b.key("attention.key_length", uint32(s.HeadDimFull))
	b.key("attention.value_length", uint32(s.HeadDimFull))
	b.key("attention.key_length_swa", uint32(s.HeadDimSWA))
	b.key("attention.value_length_swa", uint32(s.HeadDimSWA))
	b.key("attention.sliding_window", uint32(s.SlidingWindow))
	b.key("attention.sliding_window_pattern", swa)
	b.key("attention.shared_kv_layers", uint32(s.SharedKVLayers))
	b.key("embedding_length_per_layer_input", uint32(s.EmbdPerLayer))
	b.key("rope.freq_base", float32(1e6))
	b.key("rope.freq_base_swa", float32(1e4))
	b.key("rope.dimension_count", uint32(s.HeadDimFull))
	b.key("rope.dimension_count_swa", uint32(s.HeadDimSWA))
	b.key("final_logit_softcapping", float32(30))
	b.kvs = append(b.kvs, v.kvs()...)

	e, pl := s.Embd, s.EmbdPerLayer
	// Gemma scales the input embedding by sqrt(Embd) (and the per-layer
	// one by sqrt(EmbdPerLayer)): rows of standard deviation 1/sqrt(width)
	// enter the blocks at about unit size, as a trained model's do.
	b.matrix("token_embd.weight", fanIn(e), e, s.Vocab)
	if pl > 0 {
		b.matrix("per_layer_token_embd.weight", fanIn(pl), pl*s.Layers, s.Vocab)
		b.random("per_layer_model_proj.weight", unquantized(t), fanIn(e), e, pl*s.Layers)
		b.ones("per_layer_proj_norm.weight", pl)
	}
	// Proportional RoPE of the global layers: the first quarter of each
	// head's pairs turn at the usual frequencies, the rest not at all (a
	// frequency factor of 1e30), as the converter writes it.
	freqs := make([]float32, s.HeadDimFull/2)
	for i := range freqs {
		freqs[i] = 1
		if i >= s.ropeFullDims() {
			freqs[i] = 1e30
		}
	}
	b.f32("rope_freqs.weight", freqs, len(freqs))
	for il := range s.Layers {
		p := fmt.Sprintf("blk.%d.", il)
		hd := s.headDim(il)
		q, kv := s.Heads*hd, s.HeadsKV*hd
		b.ones(p+"attn_norm.weight", e)
		b.matrix(p+"attn_q.weight", fanIn(e), e, q)
		if s.HasKV(il) {
			b.matrix(p+"attn_k.weight", fanIn(e), e, kv)
			b.matrix(p+"attn_v.weight", fanIn(e), e, kv)
			b.ones(p+"attn_k_norm.weight", hd)
		}
		b.ones(p+"attn_q_norm.weight", hd)
		b.matrix(p+"attn_output.weight", fanIn(q), q, e)
		b.ones(p+"post_attention_norm.weight", e)
		b.f32(p+"layer_output_scale.weight", []float32{1}, 1)
		f := s.LayerFF(il)
		b.ones(p+"ffn_norm.weight", e)
		b.matrix(p+"ffn_gate.weight", fanIn(e), e, f)
		b.matrix(p+"ffn_up.weight", fanIn(e), e, f)
		b.matrix(p+"ffn_down.weight", fanIn(f), f, e)
		b.ones(p+"post_ffw_norm.weight", e)
		if pl > 0 {
			b.matrix(p+"inp_gate.weight", fanIn(e), e, pl)
			b.matrix(p+"proj.weight", fanIn(pl), pl, e)
			b.ones(p+"post_norm.weight", e)
		}
	}
	b.ones("output_norm.weight", e)
	return b.done()
}

func (s Gemma4Shape) label() string {
	if s == Gemma4Tiny {
		return "tiny"
	}
	return fmt.Sprintf("%dM", (s.Params()+500_000)/1_000_000)
}

// WriteRandomGemma4 writes a gemma4 model of shape s with pseudo-random
// weights of type t to path. The same arguments always give the same file.
func WriteRandomGemma4(path string, s Gemma4Shape, t gguf.TensorType, seed int64) error {
	kvs, tensors, err := RandomGemma4(s, t, seed)
	if err != nil {
		return fmt.Errorf("random gemma4: %w", err)
	}
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write random gemma4: %w", err)
	}
	return nil
}
