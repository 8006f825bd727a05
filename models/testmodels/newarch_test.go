package testmodels

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// wantTensor is a tensor the llama.cpp v0.5.0 loader asks for: its ggml
// dimensions and type.
type wantTensor struct {
	dims []uint64
	typ  gguf.TensorType
}

func dims(d ...int) []uint64 {
	out := make([]uint64, len(d))
	for i, x := range d {
		out[i] = uint64(x)
	}
	return out
}

// checkTensors compares a file's tensors with the expected set: the same
// names, dimensions and types, nothing more, nothing less.
func checkTensors(t *testing.T, f *gguf.File, want map[string]wantTensor) {
	t.Helper()
	got := map[string]bool{}
	for _, ti := range f.Tensors {
		got[ti.Name] = true
		w, ok := want[ti.Name]
		if !ok {
			t.Errorf("unexpected tensor %s %v", ti.Name, ti.Dims)
			continue
		}
		if !reflect.DeepEqual(ti.Dims, w.dims) || ti.Type != w.typ {
			t.Errorf("%s: %v %s, want %v %s", ti.Name, ti.Dims, ti.Type, w.dims, w.typ)
		}
	}
	var missing []string
	for name := range want {
		if !got[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("missing tensors: %s", strings.Join(missing, ", "))
	}
}

// checkKeys compares metadata values (uint32, float32, bool and int32
// arrays, strings) with the expected ones.
func checkKeys(t *testing.T, f *gguf.File, want map[string]any) {
	t.Helper()
	for key, w := range want {
		v, ok := f.Get(key)
		if !ok {
			t.Errorf("%s missing", key)
			continue
		}
		if !reflect.DeepEqual(v, w) {
			t.Errorf("%s = %v (%T), want %v (%T)", key, v, v, w, w)
		}
	}
}

func writeAndValidate(t *testing.T, path string, write func(string) error) *gguf.File {
	t.Helper()
	if err := write(path); err != nil {
		t.Fatal(err)
	}
	// Tadpole's own validation (what /api/create and the loader run).
	f, err := gguf.ValidateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRandomGemma4(t *testing.T) {
	dir := t.TempDir()
	s := Gemma4Tiny
	for _, typ := range []gguf.TensorType{gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0} {
		t.Run(typ.String(), func(t *testing.T) {
			p := filepath.Join(dir, "gemma4-"+typ.String()+".gguf")
			f := writeAndValidate(t, p, func(p string) error { return WriteRandomGemma4(p, s, typ, 3) })
			ft, _ := f.FileType()
			wantFT, _ := gguf.FileTypeOf(typ)
			if f.Architecture() != "gemma4" || ft != wantFT || !strings.Contains(f.Name(), "tiny") {
				t.Errorf("arch %q, file type %v, name %q", f.Architecture(), ft, f.Name())
			}

			// Gemma 4 E2B's layer plan: every 5th layer global, the last
			// 5 layers without KV of their own and with a double-wide MLP.
			swa := []bool{true, true, true, true, false, true, true, true, true, false}
			ff := []int32{128, 128, 128, 128, 128, 256, 256, 256, 256, 256}
			checkKeys(t, f, map[string]any{
				"gemma4.block_count":                      uint32(10),
				"gemma4.context_length":                   uint32(4096),
				"gemma4.embedding_length":                 uint32(128),
				"gemma4.feed_forward_length":              ff,
				"gemma4.attention.head_count":             uint32(4),
				"gemma4.attention.head_count_kv":          uint32(1),
				"gemma4.attention.key_length":             uint32(64),
				"gemma4.attention.value_length":           uint32(64),
				"gemma4.attention.key_length_swa":         uint32(32),
				"gemma4.attention.value_length_swa":       uint32(32),
				"gemma4.attention.sliding_window":         uint32(512),
				"gemma4.attention.sliding_window_pattern": swa,
				"gemma4.attention.shared_kv_layers":       uint32(5),
				"gemma4.attention.layer_norm_rms_epsilon": float32(1e-6),
				"gemma4.embedding_length_per_layer_input": uint32(32),
				"gemma4.rope.dimension_count":             uint32(64),
				"gemma4.rope.dimension_count_swa":         uint32(32),
				"gemma4.rope.freq_base":                   float32(1e6),
				"gemma4.rope.freq_base_swa":               float32(1e4),
				"gemma4.final_logit_softcapping":          float32(30),
				"tokenizer.ggml.model":                    "llama",
			})

			// The tensors llama.cpp's gemma4 load_arch_tensors creates,
			// derived here from its rules: head width by layer kind, K/V
			// only where the layer has KV, one rope_freqs for the global
			// layers, the output tied to token_embd.
			e, v, pl, L := 128, 1024, 32, 10
			want := map[string]wantTensor{
				"token_embd.weight":           {dims(e, v), typ},
				"per_layer_token_embd.weight": {dims(pl*L, v), typ},
				"per_layer_model_proj.weight": {dims(e, pl*L), unquantized(typ)},
				"per_layer_proj_norm.weight":  {dims(pl), gguf.F32},
				"rope_freqs.weight":           {dims(32), gguf.F32},
				"output_norm.weight":          {dims(e), gguf.F32},
			}
			for il := range L {
				hd := 32
				if !swa[il] {
					hd = 64
				}
				b := fmt.Sprintf("blk.%d.", il)
				want[b+"attn_norm.weight"] = wantTensor{dims(e), gguf.F32}
				want[b+"attn_q.weight"] = wantTensor{dims(e, 4*hd), typ}
				if il < L-5 {
					want[b+"attn_k.weight"] = wantTensor{dims(e, hd), typ}
					want[b+"attn_v.weight"] = wantTensor{dims(e, hd), typ}
					want[b+"attn_k_norm.weight"] = wantTensor{dims(hd), gguf.F32}
				}
				want[b+"attn_q_norm.weight"] = wantTensor{dims(hd), gguf.F32}
				want[b+"attn_output.weight"] = wantTensor{dims(4*hd, e), typ}
				want[b+"post_attention_norm.weight"] = wantTensor{dims(e), gguf.F32}
				want[b+"layer_output_scale.weight"] = wantTensor{dims(1), gguf.F32}
				want[b+"ffn_norm.weight"] = wantTensor{dims(e), gguf.F32}
				want[b+"ffn_gate.weight"] = wantTensor{dims(e, int(ff[il])), typ}
				want[b+"ffn_up.weight"] = wantTensor{dims(e, int(ff[il])), typ}
				want[b+"ffn_down.weight"] = wantTensor{dims(int(ff[il]), e), typ}
				want[b+"post_ffw_norm.weight"] = wantTensor{dims(e), gguf.F32}
				want[b+"inp_gate.weight"] = wantTensor{dims(e, pl), typ}
				want[b+"proj.weight"] = wantTensor{dims(pl, e), typ}
				want[b+"post_norm.weight"] = wantTensor{dims(e), gguf.F32}
			}
			checkTensors(t, f, want)
			if f.ParameterCount() != s.Params() {
				t.Errorf("%d parameters, Params() says %d", f.ParameterCount(), s.Params())
			}

			// Proportional RoPE: 8 of the 32 pairs of a 64-wide head turn.
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			ti, _ := f.Tensor("rope_freqs.weight")
			freqs := f32s(t, data, ti, f)
			for i, x := range freqs {
				if want := float32(1); i >= 8 {
					if x != 1e30 {
						t.Errorf("rope_freqs[%d] = %g, want 1e30", i, x)
					}
				} else if x != want {
					t.Errorf("rope_freqs[%d] = %g, want 1", i, x)
				}
			}
			// The shared layers reuse layers 3 (sliding) and 4 (global):
			// llama.cpp's reuse rule needs exactly that order.
			if !swa[3] || swa[4] {
				t.Error("layers 3 and 4 are not sliding then global")
			}
		})
	}
}

func TestRandomQwen35(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		s     Qwen35Shape
		write func(string, Qwen35Shape, gguf.TensorType, int64) error
	}{
		{"qwen35", Qwen35Tiny, WriteRandomQwen35},
		{"qwen35moe", Qwen35MoETiny, WriteRandomQwen35MoE},
	} {
		for _, typ := range []gguf.TensorType{gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0} {
			for _, mtp := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/mtp=%v", tc.name, typ, mtp), func(t *testing.T) {
					testRandomQwen35(t, dir, tc.name, tc.s, tc.write, typ, mtp)
				})
			}
		}
	}
}

func testRandomQwen35(t *testing.T, dir, name string, s Qwen35Shape, write func(string, Qwen35Shape, gguf.TensorType, int64) error, typ gguf.TensorType, mtp bool) {
	s.MTP = mtp
	p := filepath.Join(dir, fmt.Sprintf("%s-%s-%v.gguf", name, typ, mtp))
	f := writeAndValidate(t, p, func(p string) error { return write(p, s, typ, 5) })
	ft, _ := gguf.FileTypeOf(typ)
	if got, _ := f.FileType(); f.Architecture() != name || got != ft {
		t.Errorf("arch %q, file type %v", f.Architecture(), got)
	}
	a := name + "."
	// Full attention every 4th layer; the MTP block (block 8) is a
	// full-attention block too.
	recurrent := []bool{true, true, true, false, true, true, true, false}
	blocks := 8
	if mtp {
		recurrent = append(recurrent, false)
		blocks = 9
		if n, _ := f.Uint(a + "nextn_predict_layers"); n != 1 {
			t.Errorf("nextn_predict_layers %d, want 1", n)
		}
	} else if _, ok := f.Get(a + "nextn_predict_layers"); ok {
		t.Error("nextn_predict_layers without an MTP block")
	}
	keys := map[string]any{
		a + "block_count":                      uint32(blocks),
		a + "context_length":                   uint32(4096),
		a + "embedding_length":                 uint32(128),
		a + "attention.head_count":             uint32(4),
		a + "attention.head_count_kv":          uint32(2),
		a + "attention.key_length":             uint32(64),
		a + "attention.value_length":           uint32(64),
		a + "attention.layer_norm_rms_epsilon": float32(1e-6),
		a + "attention.recurrent_layers":       recurrent,
		a + "full_attention_interval":          uint32(4),
		a + "rope.dimension_count":             uint32(16),
		a + "rope.dimension_sections":          []int32{3, 3, 2, 0},
		a + "rope.freq_base":                   float32(1e7),
		a + "ssm.conv_kernel":                  uint32(4),
		a + "ssm.state_size":                   uint32(32),
		a + "ssm.group_count":                  uint32(2),
		a + "ssm.time_step_rank":               uint32(4),
		a + "ssm.inner_size":                   uint32(128),
	}
	if s.Experts > 0 {
		keys[a+"expert_count"] = uint32(8)
		keys[a+"expert_used_count"] = uint32(2)
		keys[a+"expert_feed_forward_length"] = uint32(32)
		keys[a+"expert_shared_feed_forward_length"] = uint32(64)
		if _, ok := f.Get(a + "feed_forward_length"); ok {
			t.Error("the MoE model has a dense feed_forward_length")
		}
	} else {
		keys[a+"feed_forward_length"] = uint32(256)
		if _, ok := f.Get(a + "expert_count"); ok {
			t.Error("the dense model has experts")
		}
	}
	checkKeys(t, f, keys)

	// The tensors of llama.cpp's qwen35 / qwen35moe
	// load_arch_tensors: delta-net sizes from the ssm keys
	// (key dim 2·32, value dim 4·32, conv channels 2·64+128),
	// full attention with queries and gates (2·4·64).
	e, v := 128, 1024
	want := map[string]wantTensor{
		"token_embd.weight":  {dims(e, v), typ},
		"output.weight":      {dims(e, v), typ},
		"output_norm.weight": {dims(e), gguf.F32},
	}
	for il, rec := range recurrent {
		b := fmt.Sprintf("blk.%d.", il)
		want[b+"attn_norm.weight"] = wantTensor{dims(e), gguf.F32}
		if il == 8 { // the MTP block: load_block_mtp's nextn tensors
			want[b+"nextn.eh_proj.weight"] = wantTensor{dims(2*e, e), typ}
			want[b+"nextn.enorm.weight"] = wantTensor{dims(e), gguf.F32}
			want[b+"nextn.hnorm.weight"] = wantTensor{dims(e), gguf.F32}
			want[b+"nextn.shared_head_norm.weight"] = wantTensor{dims(e), gguf.F32}
		}
		want[b+"post_attention_norm.weight"] = wantTensor{dims(e), gguf.F32}
		if rec {
			want[b+"attn_qkv.weight"] = wantTensor{dims(e, 256), typ}
			want[b+"attn_gate.weight"] = wantTensor{dims(e, 128), typ}
			want[b+"ssm_conv1d.weight"] = wantTensor{dims(4, 256), gguf.F32}
			want[b+"ssm_dt.bias"] = wantTensor{dims(4), gguf.F32}
			want[b+"ssm_a"] = wantTensor{dims(4), gguf.F32}
			want[b+"ssm_beta.weight"] = wantTensor{dims(e, 4), typ}
			want[b+"ssm_alpha.weight"] = wantTensor{dims(e, 4), typ}
			want[b+"ssm_norm.weight"] = wantTensor{dims(32), gguf.F32}
			want[b+"ssm_out.weight"] = wantTensor{dims(128, e), typ}
		} else {
			want[b+"attn_q.weight"] = wantTensor{dims(e, 512), typ}
			want[b+"attn_k.weight"] = wantTensor{dims(e, 128), typ}
			want[b+"attn_v.weight"] = wantTensor{dims(e, 128), typ}
			want[b+"attn_q_norm.weight"] = wantTensor{dims(64), gguf.F32}
			want[b+"attn_k_norm.weight"] = wantTensor{dims(64), gguf.F32}
			want[b+"attn_output.weight"] = wantTensor{dims(256, e), typ}
		}
		if s.Experts > 0 {
			want[b+"ffn_gate_inp.weight"] = wantTensor{dims(e, 8), gguf.F32}
			want[b+"ffn_gate_exps.weight"] = wantTensor{dims(e, 32, 8), typ}
			want[b+"ffn_up_exps.weight"] = wantTensor{dims(e, 32, 8), typ}
			want[b+"ffn_down_exps.weight"] = wantTensor{dims(32, e, 8), typ}
			want[b+"ffn_gate_inp_shexp.weight"] = wantTensor{dims(e, 1), gguf.F32}
			want[b+"ffn_gate_shexp.weight"] = wantTensor{dims(e, 64), typ}
			want[b+"ffn_up_shexp.weight"] = wantTensor{dims(e, 64), typ}
			want[b+"ffn_down_shexp.weight"] = wantTensor{dims(64, e), typ}
		} else {
			want[b+"ffn_gate.weight"] = wantTensor{dims(e, 256), typ}
			want[b+"ffn_up.weight"] = wantTensor{dims(e, 256), typ}
			want[b+"ffn_down.weight"] = wantTensor{dims(256, e), typ}
		}
	}
	checkTensors(t, f, want)
	if f.ParameterCount() != s.Params() {
		t.Errorf("%d parameters, Params() says %d", f.ParameterCount(), s.Params())
	}

	// The decay parameters are in the checkpoints' ranges: A in
	// [1, 16] stored as -A, softplus(dt bias) in [0.001, 0.1].
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := f.Tensor("blk.0.ssm_a")
	for _, x := range f32s(t, data, ti, f) {
		if x > -1 || x < -16 {
			t.Errorf("ssm_a value %g outside [-16, -1]", x)
		}
	}
	ti, _ = f.Tensor("blk.0.ssm_dt.bias")
	for _, x := range f32s(t, data, ti, f) {
		dt := math.Log1p(math.Exp(float64(x)))
		if dt < 0.999e-3 || dt > 0.1001 {
			t.Errorf("softplus(ssm_dt.bias) = %g outside [0.001, 0.1]", dt)
		}
	}
}

func TestNewArchSizes(t *testing.T) {
	// Small enough for CI: each model a few MB in F32, under 2 MB in Q8_0
	// (Q8_0 is 34 bytes per 32 weights; the norms and router stay F32).
	for _, tc := range []struct {
		name   string
		random func(gguf.TensorType) ([]gguf.KV, []gguf.Tensor, error)
		params uint64
	}{
		{"gemma4", func(t gguf.TensorType) ([]gguf.KV, []gguf.Tensor, error) { return RandomGemma4(Gemma4Tiny, t, 1) }, Gemma4Tiny.Params()},
		{"qwen35", func(t gguf.TensorType) ([]gguf.KV, []gguf.Tensor, error) { return RandomQwen35(Qwen35Tiny, t, 1) }, Qwen35Tiny.Params()},
		{"qwen35moe", func(t gguf.TensorType) ([]gguf.KV, []gguf.Tensor, error) { return RandomQwen35MoE(Qwen35MoETiny, t, 1) }, Qwen35MoETiny.Params()},
	} {
		var sizes [2]uint64
		for i, typ := range []gguf.TensorType{gguf.F32, gguf.Q8_0} {
			_, tensors, err := tc.random(typ)
			if err != nil {
				t.Fatal(err)
			}
			for _, ti := range tensors {
				n, err := ti.Size()
				if err != nil {
					t.Fatal(err)
				}
				sizes[i] += n
			}
		}
		t.Logf("%s: %d parameters, %.1f MB F32, %.1f MB Q8_0", tc.name, tc.params, float64(sizes[0])/1e6, float64(sizes[1])/1e6)
		if tc.params < 500_000 || sizes[0] > 8e6 || sizes[1] > 2.5e6 {
			t.Errorf("%s: %d parameters, %d bytes in F32, %d in Q8_0", tc.name, tc.params, sizes[0], sizes[1])
		}
	}
}

func TestNewArchDeterministic(t *testing.T) {
	hash := func(seed int64, random func(int64) ([]gguf.KV, []gguf.Tensor, error)) [32]byte {
		kvs, tensors, err := random(seed)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if err := gguf.Write(h, kvs, tensors); err != nil {
			t.Fatal(err)
		}
		h2 := sha256.New()
		if err := gguf.Write(h2, kvs, tensors); err != nil || !bytes.Equal(h.Sum(nil), h2.Sum(nil)) {
			t.Errorf("second write differs (%v)", err)
		}
		return [32]byte(h.Sum(nil))
	}
	for name, random := range map[string]func(int64) ([]gguf.KV, []gguf.Tensor, error){
		"gemma4":    func(seed int64) ([]gguf.KV, []gguf.Tensor, error) { return RandomGemma4(Gemma4Tiny, gguf.Q8_0, seed) },
		"qwen35":    func(seed int64) ([]gguf.KV, []gguf.Tensor, error) { return RandomQwen35(Qwen35Tiny, gguf.Q8_0, seed) },
		"qwen35moe": func(seed int64) ([]gguf.KV, []gguf.Tensor, error) { return RandomQwen35(Qwen35MoETiny, gguf.F32, seed) },
	} {
		if hash(1, random) != hash(1, random) {
			t.Errorf("%s: same seed, different files", name)
		}
		if hash(1, random) == hash(2, random) {
			t.Errorf("%s: different seeds, same file", name)
		}
	}
}

func TestNewArchValidate(t *testing.T) {
	g := func(f func(*Gemma4Shape)) Gemma4Shape { s := Gemma4Tiny; f(&s); return s }
	q := func(f func(*Qwen35Shape)) Qwen35Shape { s := Qwen35Tiny; f(&s); return s }
	m := func(f func(*Qwen35Shape)) Qwen35Shape { s := Qwen35MoETiny; f(&s); return s }
	for name, err := range map[string]error{
		// The shared layers reuse the last KV layer (global) and the one
		// before (sliding): 4 shared layers would leave 5 (sliding) last.
		"gemma4 shared layers after a sliding layer": g(func(s *Gemma4Shape) { s.SharedKVLayers = 4 }).Validate(gguf.F32),
		"gemma4 all layers shared":                   g(func(s *Gemma4Shape) { s.SharedKVLayers = 9 }).Validate(gguf.F32),
		"gemma4 no global layer":                     g(func(s *Gemma4Shape) { s.FullEvery = 11 }).Validate(gguf.F32),
		"gemma4 no sliding layer":                    g(func(s *Gemma4Shape) { s.FullEvery = 1 }).Validate(gguf.F32),
		"gemma4 global head not a multiple of 8":     g(func(s *Gemma4Shape) { s.HeadDimFull = 60 }).Validate(gguf.F32),
		"gemma4 per-layer width not whole blocks":    g(func(s *Gemma4Shape) { s.EmbdPerLayer = 16 }).Validate(gguf.Q8_0),
		"gemma4 KV heads":                            g(func(s *Gemma4Shape) { s.HeadsKV = 3 }).Validate(gguf.F32),
		"gemma4 Q4_K":                                Gemma4Tiny.Validate(gguf.Q4_K),
		"qwen35 no full-attention layer":             q(func(s *Qwen35Shape) { s.FullEvery = 9 }).Validate(gguf.F32),
		"qwen35 value heads":                         q(func(s *Qwen35Shape) { s.LinValueHeads = 3 }).Validate(gguf.F32),
		"qwen35 head width":                          q(func(s *Qwen35Shape) { s.HeadDim = 20 }).Validate(gguf.F32),
		"qwen35 dense without width":                 q(func(s *Qwen35Shape) { s.FF = 0 }).Validate(gguf.F32),
		"qwen35moe more used than experts":           m(func(s *Qwen35Shape) { s.ExpertsUsed = 9 }).Validate(gguf.F32),
		"qwen35moe expert width not whole blocks":    m(func(s *Qwen35Shape) { s.ExpertFF = 48 }).Validate(gguf.Q4_0),
		"qwen35moe of a dense shape":                 WriteRandomQwen35MoE(filepath.Join(t.TempDir(), "x.gguf"), Qwen35Tiny, gguf.F32, 1),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, err := range map[string]error{
		"gemma4 tiny Q4_0":             Gemma4Tiny.Validate(gguf.Q4_0),
		"gemma4 no PLE, no KV sharing": g(func(s *Gemma4Shape) { s.EmbdPerLayer, s.SharedKVLayers = 0, 0 }).Validate(gguf.Q8_0),
		"qwen35 tiny Q4_0":             Qwen35Tiny.Validate(gguf.Q4_0),
		"qwen35moe tiny Q4_0":          Qwen35MoETiny.Validate(gguf.Q4_0),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
