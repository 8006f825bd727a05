package testmodels

import (
	"errors"
	"fmt"
	"math"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Qwen35Shape is the size of a model of llama.cpp's hybrid "qwen35"
// architecture (Qwen 3.5 / 3.6 dense) or, with Experts > 0, of its MoE
// variant "qwen35moe": gated delta-net (linear attention) layers
// interleaved with gated full-attention layers (every FullEvery-th layer,
// Qwen's full_attention_interval), interleaved multimodal RoPE on a quarter
// of each full-attention head.
type Qwen35Shape struct {
	Vocab     int // tokens
	Embd      int // embedding width
	Layers    int // blocks
	FullEvery int // layers FullEvery-1, 2·FullEvery-1, … are full attention, the rest gated delta-net

	// Full-attention layers.
	Heads   int // query heads (each with an output gate as wide)
	HeadsKV int // key/value heads
	HeadDim int // head width (a quarter of it is rotated)

	// Gated delta-net layers (llama.cpp's ssm.* keys).
	ConvKernel    int // causal convolution width (ssm.conv_kernel)
	LinKeyHeads   int // key heads (ssm.group_count)
	LinValueHeads int // value heads (ssm.time_step_rank), a multiple of LinKeyHeads
	LinHeadDim    int // key and value head width (ssm.state_size)

	// Feed-forward: a dense MLP of width FF (qwen35), or Experts routed
	// experts of width ExpertFF of which ExpertsUsed run per token, plus a
	// gated shared expert of width SharedFF (qwen35moe).
	FF          int
	Experts     int
	ExpertsUsed int
	ExpertFF    int
	SharedFF    int

	Context int // trained context length

	// MTP adds Qwen 3.5's multi-token-prediction block after the Layers
	// blocks (nextn_predict_layers 1; block_count Layers+1), as
	// convert_hf_to_gguf.py writes it unless --no-mtp: a full-attention
	// block with the same feed-forward, nextn.eh_proj and its norms.
	// llama.cpp loads it only for an MTP draft context.
	MTP bool
}

// Qwen35Tiny is Qwen 3.5's dense hybrid layout shrunk for tests: 8 layers,
// 3 and 7 full attention (4 query heads of 64 with output gates, 2 KV
// heads), the other 6 gated delta-net (2 key heads and 4 value heads of 32,
// a 4-wide convolution), a dense MLP of 256. 1.7 M parameters: 6.9 MB in
// F32, 1.9 MB in Q8_0.
var Qwen35Tiny = Qwen35Shape{
	Vocab: 1024, Embd: 128, Layers: 8, FullEvery: 4,
	Heads: 4, HeadsKV: 2, HeadDim: 64,
	ConvKernel: 4, LinKeyHeads: 2, LinValueHeads: 4, LinHeadDim: 32,
	FF: 256, Context: 4096,
}

// Qwen35MoETiny is the same hybrid with Qwen 3.5 MoE's feed-forward:
// 8 routed experts of width 32, 2 per token, and a gated shared expert of
// width 64. 1.9 M parameters: 7.7 MB in F32, 2.1 MB in Q8_0.
var Qwen35MoETiny = Qwen35Shape{
	Vocab: 1024, Embd: 128, Layers: 8, FullEvery: 4,
	Heads: 4, HeadsKV: 2, HeadDim: 64,
	ConvKernel: 4, LinKeyHeads: 2, LinValueHeads: 4, LinHeadDim: 32,
	Experts: 8, ExpertsUsed: 2, ExpertFF: 32, SharedFF: 64, Context: 4096,
}

// Arch is the llama.cpp architecture of the shape: "qwen35moe" with
// experts, else "qwen35".
func (s Qwen35Shape) Arch() string {
	if s.Experts > 0 {
		return "qwen35moe"
	}
	return "qwen35"
}

// IsRecurrent reports whether block il is a gated delta-net layer (the
// MTP block is not).
func (s Qwen35Shape) IsRecurrent(il int) bool { return il < s.Layers && (il+1)%s.FullEvery != 0 }

// RopeDims is the number of rotated dimensions of a full-attention head.
func (s Qwen35Shape) RopeDims() int { return s.HeadDim / 4 }

// RopeSections splits the rotated pairs among the time, height and width
// position streams in Qwen 3.5's proportions (11:11:10 of 32).
func (s Qwen35Shape) RopeSections() []int32 {
	n := s.RopeDims() / 2
	a := int32(math.Round(float64(n) * 11 / 32))
	return []int32{a, a, int32(n) - 2*a, 0}
}

// Blocks is the number of blocks in the file (block_count): Layers and
// the MTP block.
func (s Qwen35Shape) Blocks() int {
	if s.MTP {
		return s.Layers + 1
	}
	return s.Layers
}

func (s Qwen35Shape) linKeyDim() int   { return s.LinKeyHeads * s.LinHeadDim }
func (s Qwen35Shape) linValueDim() int { return s.LinValueHeads * s.LinHeadDim }

// Params is the number of weights of a model of this shape.
func (s Qwen35Shape) Params() uint64 {
	e, v := uint64(s.Embd), uint64(s.Vocab)
	n := 2*v*e + e // token_embd, output, output_norm
	for il := range s.Blocks() {
		n += 2 * e // attn_norm, post_attention_norm
		if il >= s.Layers {
			n += 2*e*e + 3*e // nextn.eh_proj, enorm, hnorm, shared_head_norm
		}
		if s.IsRecurrent(il) {
			kd, vd, nv := uint64(s.linKeyDim()), uint64(s.linValueDim()), uint64(s.LinValueHeads)
			conv := 2*kd + vd
			n += e*conv + e*vd + uint64(s.ConvKernel)*conv + 2*nv + 2*e*nv + uint64(s.LinHeadDim) + vd*e
		} else {
			q, kv, hd := uint64(s.Heads*s.HeadDim), uint64(s.HeadsKV*s.HeadDim), uint64(s.HeadDim)
			n += e*2*q + 2*e*kv + q*e + 2*hd
		}
		if s.Experts > 0 {
			x, xf, sf := uint64(s.Experts), uint64(s.ExpertFF), uint64(s.SharedFF)
			n += e*x + 3*e*xf*x + e + 3*e*sf
		} else {
			n += 3 * e * uint64(s.FF)
		}
	}
	return n
}

// Validate checks that a model of this shape and weight type can be
// written and that llama.cpp v0.5.0's qwen35 / qwen35moe loader takes it.
func (s Qwen35Shape) Validate(t gguf.TensorType) error {
	if err := checkWeightType(t); err != nil {
		return err
	}
	switch {
	case s.Vocab < minVocab:
		return fmt.Errorf("vocabulary %d too small, at least %d", s.Vocab, minVocab)
	case s.Vocab > math.MaxInt32:
		return errors.New("vocabulary too large")
	case s.Layers <= 0 || s.Heads <= 0 || s.HeadsKV <= 0 || s.Context <= 0 || s.ConvKernel < 2 ||
		s.LinKeyHeads <= 0 || s.LinValueHeads <= 0 || s.LinHeadDim <= 0:
		return fmt.Errorf("%s shape %+v: sizes must be positive (convolution at least 2 wide)", s.Arch(), s)
	case s.FullEvery < 2 || s.FullEvery > s.Layers:
		return fmt.Errorf("every %d-th layer full attention in %d layers: want 2 to %d (both kinds of layer)", s.FullEvery, s.Layers, s.Layers)
	case s.Heads%s.HeadsKV != 0:
		return fmt.Errorf("%d heads are not a multiple of %d KV heads", s.Heads, s.HeadsKV)
	case s.HeadDim%8 != 0:
		return fmt.Errorf("head width %d is not a multiple of 8 (a quarter of it is rotated in pairs)", s.HeadDim)
	case s.LinValueHeads%s.LinKeyHeads != 0:
		return fmt.Errorf("%d linear value heads are not a multiple of %d key heads", s.LinValueHeads, s.LinKeyHeads)
	case s.Experts > 0 && (s.ExpertsUsed <= 0 || s.ExpertsUsed > s.Experts || s.ExpertFF <= 0 || s.SharedFF <= 0):
		return fmt.Errorf("%d experts, %d used, widths %d and %d (shared): want 1 to %d used and positive widths",
			s.Experts, s.ExpertsUsed, s.ExpertFF, s.SharedFF, s.Experts)
	case s.Experts > 256: // LLAMA_MAX_EXPERTS is 512; keep the test models small
		return fmt.Errorf("%d experts: at most 256", s.Experts)
	case s.Experts == 0 && (s.FF <= 0 || s.ExpertsUsed != 0):
		return fmt.Errorf("dense feed-forward width %d (with %d experts used): want a positive width and no experts", s.FF, s.ExpertsUsed)
	}
	rows := map[string]int{
		"embedding width": s.Embd, "attention width": s.Heads * s.HeadDim, "linear value width": s.linValueDim(),
	}
	if s.Experts > 0 {
		rows["expert width"], rows["shared expert width"] = s.ExpertFF, s.SharedFF
	} else {
		rows["feed-forward width"] = s.FF
	}
	return checkRows(t, rows)
}

// RandomQwen35 returns the metadata and tensors of a qwen35 model (or,
// when s has experts, a qwen35moe model) of shape s with pseudo-random
// weights of type t (F32, F16, Q8_0 or Q4_0), determined by seed, in the
// layout llama.cpp v0.5.0 loads: the keys and tensors convert_hf_to_gguf.py
// writes for Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM (with the
// multi-token-prediction block when s.MTP), with the delta-net projections fused as
// there (attn_qkv, attn_gate), A stored as -exp(A_log) (ssm_a), and the
// convolution, router, shared-expert gate, ssm_a, ssm_dt and norms in F32.
// The decay parameters are drawn the way the checkpoints initialise them
// (A in [1, 16], dt in [0.001, 0.1]), so the recurrent state stays bounded.
func RandomQwen35(s Qwen35Shape, t gguf.TensorType, seed int64) ([]gguf.KV, []gguf.Tensor, error) {
	if err := s.Validate(t); err != nil {
		return nil, nil, err
	}
	v, err := syntheticVocab(s.Vocab)
	if err != nil {
		return nil, nil, err
	}
	b := newModelBuilder(s.Arch(), fmt.Sprintf("Tadpole random %s %s %s", s.Arch(), s.label(), t), t, seed)
	recurrent := make([]bool, s.Blocks())
	for il := range s.Layers {
		recurrent[il] = s.IsRecurrent(il)
	}
	b.key("vocab_size", uint32(s.Vocab))
	b.key("block_count", uint32(s.Blocks()))
	if s.MTP {
		b.key("nextn_predict_layers", uint32(1))
	}
	b.key("context_length", uint32(s.Context))
	b.key("embedding_length", uint32(s.Embd))
	if s.Experts == 0 {
		b.key("feed_forward_length", uint32(s.FF))
	}
	b.key("attention.head_count", uint32(s.Heads))
	b.key("attention.head_count_kv", uint32(s.HeadsKV))
	b.key("attention.key_length", uint32(s.HeadDim))
	b.key("attention.value_length", uint32(s.HeadDim))
	b.key("attention.layer_norm_rms_epsilon", float32(1e-6))
	b.key("rope.freq_base", float32(1e7))
	b.key("rope.dimension_count", uint32(s.RopeDims()))
	b.key("rope.dimension_sections", s.RopeSections())
	if s.Experts > 0 {
		b.key("expert_count", uint32(s.Experts))
		b.key("expert_used_count", uint32(s.ExpertsUsed))
		b.key("expert_feed_forward_length", uint32(s.ExpertFF))
		b.key("expert_shared_feed_forward_length", uint32(s.SharedFF))
	}
	b.key("ssm.conv_kernel", uint32(s.ConvKernel))
	b.key("ssm.state_size", uint32(s.LinHeadDim))
	b.key("ssm.group_count", uint32(s.LinKeyHeads))
	b.key("ssm.time_step_rank", uint32(s.LinValueHeads))
	b.key("ssm.inner_size", uint32(s.linValueDim()))
	b.key("attention.recurrent_layers", recurrent)
	b.key("full_attention_interval", uint32(s.FullEvery))
	b.kvs = append(b.kvs, v.kvs()...)

	e := s.Embd
	b.matrix("token_embd.weight", 1, e, s.Vocab)
	for il := range s.Blocks() {
		p := fmt.Sprintf("blk.%d.", il)
		b.ones(p+"attn_norm.weight", e)
		if il >= s.Layers { // the MTP block's own tensors
			b.matrix(p+"nextn.eh_proj.weight", fanIn(2*e), 2*e, e)
			b.ones(p+"nextn.enorm.weight", e)
			b.ones(p+"nextn.hnorm.weight", e)
			b.ones(p+"nextn.shared_head_norm.weight", e)
		}
		if s.IsRecurrent(il) {
			kd, vd, nv := s.linKeyDim(), s.linValueDim(), s.LinValueHeads
			conv := 2*kd + vd
			b.matrix(p+"attn_qkv.weight", fanIn(e), e, conv)
			b.matrix(p+"attn_gate.weight", fanIn(e), e, vd)
			b.random(p+"ssm_conv1d.weight", gguf.F32, fanIn(s.ConvKernel), s.ConvKernel, conv)
			dt := b.uniform(p+"ssm_dt.bias", nv, math.Log(1e-3), math.Log(1e-1))
			for i, x := range dt { // the inverse of softplus of dt = exp(x)
				d := math.Exp(float64(x))
				dt[i] = float32(d + math.Log(-math.Expm1(-d)))
			}
			b.f32(p+"ssm_dt.bias", dt, nv)
			a := b.uniform(p+"ssm_a", nv, 1, 16)
			for i := range a {
				a[i] = -a[i] // -exp(A_log)
			}
			b.f32(p+"ssm_a", a, nv)
			b.matrix(p+"ssm_beta.weight", fanIn(e), e, nv)
			b.matrix(p+"ssm_alpha.weight", fanIn(e), e, nv)
			b.ones(p+"ssm_norm.weight", s.LinHeadDim)
			b.matrix(p+"ssm_out.weight", fanIn(vd), vd, e)
		} else {
			q, kv := s.Heads*s.HeadDim, s.HeadsKV*s.HeadDim
			b.matrix(p+"attn_q.weight", fanIn(e), e, 2*q) // queries and their output gates
			b.matrix(p+"attn_k.weight", fanIn(e), e, kv)
			b.matrix(p+"attn_v.weight", fanIn(e), e, kv)
			b.ones(p+"attn_q_norm.weight", s.HeadDim)
			b.ones(p+"attn_k_norm.weight", s.HeadDim)
			b.matrix(p+"attn_output.weight", fanIn(q), q, e)
		}
		b.ones(p+"post_attention_norm.weight", e)
		if s.Experts > 0 {
			x, xf, sf := s.Experts, s.ExpertFF, s.SharedFF
			b.random(p+"ffn_gate_inp.weight", gguf.F32, fanIn(e), e, x)
			b.matrix(p+"ffn_gate_exps.weight", fanIn(e), e, xf, x)
			b.matrix(p+"ffn_up_exps.weight", fanIn(e), e, xf, x)
			b.matrix(p+"ffn_down_exps.weight", fanIn(xf), xf, e, x)
			b.random(p+"ffn_gate_inp_shexp.weight", gguf.F32, fanIn(e), e, 1)
			b.matrix(p+"ffn_gate_shexp.weight", fanIn(e), e, sf)
			b.matrix(p+"ffn_up_shexp.weight", fanIn(e), e, sf)
			b.matrix(p+"ffn_down_shexp.weight", fanIn(sf), sf, e)
		} else {
			b.matrix(p+"ffn_gate.weight", fanIn(e), e, s.FF)
			b.matrix(p+"ffn_up.weight", fanIn(e), e, s.FF)
			b.matrix(p+"ffn_down.weight", fanIn(s.FF), s.FF, e)
		}
	}
	b.ones("output_norm.weight", e)
	b.matrix("output.weight", fanIn(e), e, s.Vocab)
	return b.done()
}

// RandomQwen35MoE is RandomQwen35 for a shape with experts (qwen35moe).
func RandomQwen35MoE(s Qwen35Shape, t gguf.TensorType, seed int64) ([]gguf.KV, []gguf.Tensor, error) {
	if s.Experts == 0 {
		return nil, nil, errors.New("qwen35moe shape without experts")
	}
	return RandomQwen35(s, t, seed)
}

func (s Qwen35Shape) label() string {
	switch s {
	case Qwen35Tiny, Qwen35MoETiny:
		return "tiny"
	}
	return fmt.Sprintf("%dM", (s.Params()+500_000)/1_000_000)
}

// WriteRandomQwen35 writes a qwen35 model (qwen35moe when s has experts)
// of shape s with pseudo-random weights of type t to path. The same
// arguments always give the same file.
func WriteRandomQwen35(path string, s Qwen35Shape, t gguf.TensorType, seed int64) error {
	kvs, tensors, err := RandomQwen35(s, t, seed)
	if err != nil {
		return fmt.Errorf("random %s: %w", s.Arch(), err)
	}
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write random %s: %w", s.Arch(), err)
	}
	return nil
}

// WriteRandomQwen35MoE writes a qwen35moe model of shape s (which must
// have experts) with pseudo-random weights of type t to path.
func WriteRandomQwen35MoE(path string, s Qwen35Shape, t gguf.TensorType, seed int64) error {
	if s.Experts == 0 {
		return errors.New("random qwen35moe: shape without experts")
	}
	return WriteRandomQwen35(path, s, t, seed)
}
