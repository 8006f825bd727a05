package gguf

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const tinyRandom = "../testdata/llama-2-tiny-random.gguf"

// The bundled models are valid.
func TestValidateTestdata(t *testing.T) {
	for _, p := range []string{stories, stories128, tinyRandom} {
		if _, err := ValidateFile(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// Each corrupted key of a stories260K copy is refused with an error that
// names the key and the bad value.
func TestValidateCorruptKeys(t *testing.T) {
	set := func(key string, v any) func([]KV) []KV {
		return func(kvs []KV) []KV { return SetKV(kvs, key, v) }
	}
	del := func(key string) func([]KV) []KV {
		return func(kvs []KV) []KV { return DeleteKV(kvs, key) }
	}
	f, err := Open(stories)
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	dupTokens := append([]string(nil), tokens...)
	dupTokens[100] = dupTokens[99]
	perLayer := func(v ...uint32) []uint32 { return v }

	tests := []struct {
		name string
		edit func([]KV) []KV
		key  string // the key the error names
		want string // and the text it contains
	}{
		{"block_count u64 2^37", set("llama.block_count", uint64(1)<<37), "llama.block_count",
			"llama.block_count is 137438953472 but the file has tensors for 5 blocks"},
		{"block_count u32 max", set("llama.block_count", uint32(0xFFFFFFFF)), "llama.block_count", "4294967295"},
		{"block_count 0", set("llama.block_count", uint32(0)), "llama.block_count", "is 0 but the file has tensors for 5 blocks"},
		{"block_count too small", set("llama.block_count", uint32(4)), "llama.block_count", "is 4 but"},
		{"block_count u64 right value", set("llama.block_count", uint64(5)), "llama.block_count", "type uint64"},
		{"block_count negative", set("llama.block_count", int32(-1)), "llama.block_count", "-1"},
		{"block_count string", set("llama.block_count", "5"), "llama.block_count", "want an integer"},
		{"block_count missing", del("llama.block_count"), "llama.block_count", "missing"},
		{"context_length missing", del("llama.context_length"), "llama.context_length", "missing"},
		{"context_length 0", set("llama.context_length", uint32(0)), "llama.context_length", "is 0"},
		{"context_length huge", set("llama.context_length", uint32(1<<31)), "llama.context_length", "2147483648"},
		{"embedding_length 0", set("llama.embedding_length", uint32(0)), "llama.embedding_length", "is 0"},
		{"embedding_length huge", set("llama.embedding_length", uint32(1<<30)), "llama.embedding_length", "1073741824"},
		{"embedding_length u64", set("llama.embedding_length", uint64(64)), "llama.embedding_length", "type uint64"},
		{"head_count above embedding", set("llama.attention.head_count", uint32(100000)), "llama.attention.head_count", "100000"},
		{"head_count float array", set("llama.attention.head_count", []float32{8, 8, 8, 8, 8}), "llama.attention.head_count", "array of float32"},
		{"head_count array length", set("llama.attention.head_count", perLayer(8, 8)), "llama.attention.head_count", "has 2 values but llama.block_count is 5"},
		{"head_count negative in array", set("llama.attention.head_count", []int32{8, 8, -8, 8, 8}), "llama.attention.head_count", "[2] is -8"},
		{"head_count_kv above head_count", set("llama.attention.head_count_kv", uint32(16)), "llama.attention.head_count_kv", "is 16 in block 0"},
		{"head_count_kv not a divisor", set("llama.attention.head_count_kv", uint32(3)), "llama.attention.head_count_kv", "is 3 in block 0"},
		{"head_count_kv per layer", set("llama.attention.head_count_kv", perLayer(4, 4, 4, 5, 4)), "llama.attention.head_count_kv", "is 5 in block 3"},
		{"key_length 0", set("llama.attention.key_length", uint32(0)), "llama.attention.key_length", "is 0"},
		{"value_length huge", set("llama.attention.value_length", uint32(1<<30)), "llama.attention.value_length", "1073741824"},
		{"feed_forward huge", set("llama.feed_forward_length", uint32(1<<31)), "llama.feed_forward_length", "2147483648"},
		{"expert_count huge", set("llama.expert_count", uint32(1<<20)), "llama.expert_count", "1048576"},
		{"expert_used above count", func(kvs []KV) []KV {
			return SetKV(SetKV(kvs, "llama.expert_count", uint32(8)), "llama.expert_used_count", uint32(9))
		}, "llama.expert_used_count", "is 9"},
		{"experts used none", set("llama.expert_count", uint32(8)), "llama.expert_used_count", "is 0"},
		{"rope scaling type", set("llama.rope.scaling.type", "bogus"), "llama.rope.scaling.type", `"bogus"`},
		{"rope sections float", set("llama.rope.dimension_sections", []float32{1, 2, 3, 4}), "llama.rope.dimension_sections", "float32"},
		{"vocab_size huge", set("llama.vocab_size", uint32(1<<30)), "llama.vocab_size", "1073741824"},
		{"tokens missing", del("tokenizer.ggml.tokens"), "tokenizer.ggml.tokens", "missing"},
		{"tokens not strings", set("tokenizer.ggml.tokens", []uint32{1, 2, 3}), "tokenizer.ggml.tokens", "array of uint32"},
		{"tokens fewer than embeddings", set("tokenizer.ggml.tokens", tokens[:500]), "tokenizer.ggml.scores", "500"},
		{"tokens duplicated", set("tokenizer.ggml.tokens", dupTokens), "tokenizer.ggml.tokens", "ids 99 and 100"},
		{"scores short", set("tokenizer.ggml.scores", []float32{0, 1}), "tokenizer.ggml.scores", "(2 values), want 512"},
		{"scores scalar", set("tokenizer.ggml.scores", float32(1)), "tokenizer.ggml.scores", "float32"},
		{"token types strings", set("tokenizer.ggml.token_type", tokens), "tokenizer.ggml.token_type", "array of string"},
		{"merges not strings", set("tokenizer.ggml.merges", []int32{1}), "tokenizer.ggml.merges", "array of int32"},
		{"gpt2 without merges", set("tokenizer.ggml.model", "gpt2"), "tokenizer.ggml.merges", "missing"},
		{"tokenizer model missing", del("tokenizer.ggml.model"), "tokenizer.ggml.model", "missing"},
		{"architecture missing", del("general.architecture"), "general.architecture", "missing"},
		{"token_embd rows", func(kvs []KV) []KV {
			kvs = SetKV(kvs, "tokenizer.ggml.tokens", append(append([]string(nil), tokens...), "extra"))
			kvs = SetKV(kvs, "tokenizer.ggml.scores", make([]float32, 513))
			return SetKV(kvs, "tokenizer.ggml.token_type", make([]int32, 513))
		}, "token_embd.weight", "512 rows but tokenizer.ggml.tokens has 513 tokens"},
		{"array too long", set("x.big", make([]uint8, MaxArrayLength+1)), "x.big", "16777217 elements"},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".gguf")
			if err := Rewrite(p, stories, tc.edit); err != nil {
				t.Fatal(err)
			}
			_, err := ValidateFile(p)
			var ve *ValidationError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			if ve.Key != tc.key || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (key %q), want key %q and %q", err, ve.Key, tc.key, tc.want)
			}
		})
	}
}

// Layout checks: tensor shapes and names that ggml's own reader would
// divide by or refuse, and tensors that would not fit in the file, for
// adapters and projectors as well as models.
func TestValidateLayout(t *testing.T) {
	tests := []struct {
		name    string
		kvs     []KV
		tensors []Tensor
		want    string
	}{
		{"zero dimension", []KV{{"general.type", "adapter"}},
			[]Tensor{{Name: "blk.0.attn_q.weight.lora_a", Dims: []uint64{4, 0}, Type: F32, Data: []byte{}}},
			"dimension 1 of size 0"},
		{"long name", []KV{{"general.architecture", "clip"}},
			[]Tensor{{Name: strings.Repeat("v", 64), Dims: []uint64{1}, Type: F32, Data: make([]byte, 4)}},
			"is 64 bytes long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tc.kvs, tc.tensors); err != nil {
				t.Fatal(err)
			}
			f, err := Read(bytes.NewReader(b.Bytes()), int64(b.Len()))
			if err != nil {
				t.Fatal(err)
			}
			if f.IsModel() {
				t.Fatal("IsModel of an adapter or projector")
			}
			if err := f.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// A File built by hand (not by Read) whose tensor runs past the end.
	f := &File{Size: 100, DataOffset: 64, Tensors: []TensorInfo{{Name: "t", Dims: []uint64{16}, Type: F32}}}
	if err := f.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "runs past the end") {
		t.Errorf("err = %v", err)
	}
	f = &File{Size: 100, DataOffset: 64, Tensors: []TensorInfo{{Name: "t", Dims: []uint64{4}, Type: F32, Offset: 1<<64 - 8}}}
	if err := f.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "runs past the end") {
		t.Errorf("wrapping offset: err = %v", err)
	}
}

// Rewrite copies a file unchanged when edit changes nothing.
func TestRewriteIdentity(t *testing.T) {
	p := filepath.Join(t.TempDir(), "copy.gguf")
	if err := Rewrite(p, stories, func(kvs []KV) []KV { return kvs }); err != nil {
		t.Fatal(err)
	}
	a, _ := Open(stories)
	b, err := ValidateFile(p)
	if err != nil || b.Size != a.Size || len(b.Tensors) != len(a.Tensors) {
		t.Fatalf("copy: %v", err)
	}
}
