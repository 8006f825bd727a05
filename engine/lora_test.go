package engine

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

func loadBigram(t *testing.T) *Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bigram.gguf")
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(path, ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func writeAdapter(t *testing.T, name string, changes map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".gguf")
	if err := testmodels.WriteBigramAdapter(path, name, changes); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoRAAdapters: the bigram model's chat answer with no adapter, with
// each adapter, with both, at scales 0 and 0.25 (the base's answer) and
// 1; the same context switches sets between generations.
func TestLoRAAdapters(t *testing.T) {
	m := loadBigram(t)
	colors, err := m.LoadAdapter(writeAdapter(t, "colors", testmodels.AdapterColors))
	if err != nil {
		t.Fatal(err)
	}
	count, err := m.LoadAdapter(writeAdapter(t, "count", testmodels.AdapterCount))
	if err != nil {
		t.Fatal(err)
	}
	if colors.Tensors != 1 || colors.Bytes == 0 || colors.Model() != m {
		t.Fatalf("adapter: %d tensors, %d bytes", colors.Tensors, colors.Bytes)
	}
	ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 256, NumBatch: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	prompt, _ := m.Tokenize(testmodels.BigramChatPrompt, true, true)
	for _, c := range []struct {
		name     string
		adapters []*Adapter
		scales   []float32
		want     string
	}{
		{"none", nil, nil, testmodels.BigramAnswer},
		{"colors", []*Adapter{colors}, []float32{1}, testmodels.AdapterColorsAnswer},
		{"colors at 0", []*Adapter{colors}, []float32{0}, testmodels.BigramAnswer},
		{"colors at 0.25", []*Adapter{colors}, []float32{0.25}, testmodels.BigramAnswer},
		{"count", []*Adapter{count}, []float32{1}, testmodels.AdapterCountAnswer},
		{"both", []*Adapter{colors, count}, []float32{1, 1}, testmodels.AdapterColorsAndCountAnswer},
		{"colors, count off", []*Adapter{colors, count}, []float32{1, 0}, testmodels.AdapterColorsAnswer},
		{"none again", nil, nil, testmodels.BigramAnswer},
	} {
		if err := ctx.SetAdapters(c.adapters, c.scales); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ctx.ClearMemory()
		if got, _ := generateOn(t, m, ctx, prompt, 40, SamplerParams{}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Closing an adapter the context no longer applies; the model's Close
	// frees the other (t.Cleanup).
	if err := ctx.SetAdapters(nil, nil); err != nil {
		t.Fatal(err)
	}
	colors.Close()
	colors.Close()
	if err := ctx.SetAdapters([]*Adapter{colors}, []float32{1}); err == nil {
		t.Fatal("a closed adapter was applied")
	}
}

// TestLoRAWorstValues: every value of a set that llama.cpp would take
// badly is refused: lengths, a closed or foreign adapter, twice the same,
// NaN, ±Inf and huge scales, too many adapters.
func TestLoRAWorstValues(t *testing.T) {
	m := loadBigram(t)
	a, err := m.LoadAdapter(writeAdapter(t, "colors", testmodels.AdapterColors))
	if err != nil {
		t.Fatal(err)
	}
	other := loadBigram(t)
	foreign, err := other.LoadAdapter(writeAdapter(t, "count", testmodels.AdapterCount))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	many := make([]*Adapter, MaxAdapters+1)
	for i := range many {
		many[i] = a
	}
	for _, c := range []struct {
		name     string
		adapters []*Adapter
		scales   []float32
	}{
		{"lengths", []*Adapter{a}, nil},
		{"nil", []*Adapter{nil}, []float32{1}},
		{"foreign", []*Adapter{foreign}, []float32{1}},
		{"twice", []*Adapter{a, a}, []float32{1, 1}},
		{"NaN", []*Adapter{a}, []float32{float32(math.NaN())}},
		{"+Inf", []*Adapter{a}, []float32{float32(math.Inf(1))}},
		{"-Inf", []*Adapter{a}, []float32{float32(math.Inf(-1))}},
		{"huge", []*Adapter{a}, []float32{MaxAdapterScale + 1}},
		{"too many", many, make([]float32, len(many))},
	} {
		if err := ctx.SetAdapters(c.adapters, c.scales); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if err := ctx.SetAdapters([]*Adapter{a}, []float32{-MaxAdapterScale}); err != nil {
		t.Errorf("scale -%d: %v", MaxAdapterScale, err)
	}
}

// TestLoRABadFiles: adapter files that do not fit the model, or whose
// metadata llama.cpp would assert on (a key of the wrong type), are an
// ErrAdapter error, never an abort.
func TestLoRABadFiles(t *testing.T) {
	m := loadBigram(t)
	good, tensors, err := testmodels.BigramAdapter("x", testmodels.AdapterColors)
	if err != nil {
		t.Fatal(err)
	}
	set := func(kvs []gguf.KV, key string, v any) []gguf.KV {
		out := append([]gguf.KV(nil), kvs...)
		for i := range out {
			if out[i].Key == key {
				if v == nil {
					return append(out[:i], out[i+1:]...)
				}
				out[i].Value = v
				return out
			}
		}
		return append(out, gguf.KV{Key: key, Value: v})
	}
	rename := func(from, to string) []gguf.Tensor {
		out := append([]gguf.Tensor(nil), tensors...)
		for i := range out {
			if out[i].Name == from {
				out[i].Name = to
			}
		}
		return out
	}
	reshape := func(name string, dims []uint64) []gguf.Tensor {
		out := append([]gguf.Tensor(nil), tensors...)
		for i := range out {
			if out[i].Name == name {
				out[i].Dims = dims
			}
		}
		return out
	}
	a, b := tensors[0], tensors[1]
	for _, c := range []struct {
		name    string
		kvs     []gguf.KV
		tensors []gguf.Tensor
		want    string
	}{
		{"general.type an integer", set(good, "general.type", uint32(7)), tensors, "general.type"},
		{"general.type model", set(good, "general.type", "model"), tensors, "general.type"},
		{"adapter.type missing", set(good, "adapter.type", nil), tensors, "adapter.type"},
		{"adapter.type an array", set(good, "adapter.type", []uint32{1}), tensors, "adapter.type"},
		{"other architecture", set(good, "general.architecture", "qwen2"), tensors, "for \"qwen2\" models"},
		{"alpha a string", set(good, "adapter.lora.alpha", "16"), tensors, "alpha"},
		{"alpha NaN", set(good, "adapter.lora.alpha", float32(math.NaN())), tensors, "alpha"},
		{"alora tokens past the vocabulary", set(good, "adapter.alora.invocation_tokens", []uint32{1 << 30}), tensors, "vocabulary"},
		{"alora tokens of floats", set(good, "adapter.alora.invocation_tokens", []float32{1}), tensors, "uint32"},
		{"no pair", good, tensors[:1], "only one"},
		{"not LoRA", good, rename(a.Name, "output.weight"), "not a LoRA tensor"},
		{"not in the model", good, []gguf.Tensor{{Name: "blk.9.attn_q.weight.lora_a", Dims: a.Dims, Type: a.Type, Data: a.Data}, {Name: "blk.9.attn_q.weight.lora_b", Dims: b.Dims, Type: b.Type, Data: b.Data}}, "not in the base model"},
		{"wrong rank", good, reshape(a.Name, []uint64{a.Dims[0] / 2, a.Dims[1] * 2}), "do not fit"},
		{"3 dimensions", good, reshape(a.Name, []uint64{a.Dims[0], a.Dims[1], 1}), "dimensions"},
	} {
		path := filepath.Join(t.TempDir(), "bad.gguf")
		if err := gguf.WriteFile(path, c.kvs, c.tensors); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err := m.LoadAdapter(path)
		if !errors.Is(err, ErrAdapter) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrAdapter naming %q", c.name, err, c.want)
		}
	}
	// An adapter for another model of the same architecture (the demo
	// model's tensors have other shapes).
	stories := loadStories(t)
	if _, err := stories.LoadAdapter(writeAdapter(t, "colors", testmodels.AdapterColors)); !errors.Is(err, ErrAdapter) {
		t.Errorf("the bigram adapter on the demo model: %v", err)
	}
	if _, err := m.LoadAdapter(filepath.Join(t.TempDir(), "missing.gguf")); !errors.Is(err, ErrAdapter) {
		t.Errorf("a missing file: %v", err)
	}
}
