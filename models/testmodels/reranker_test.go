package testmodels

import (
	"path/filepath"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

func TestRerankerParses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reranker.gguf")
	if err := WriteReranker(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ValidateFile(path)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	if f.Architecture() != "bert" {
		t.Errorf("architecture %q, want bert", f.Architecture())
	}
	if pt, ok := f.ArchUint("pooling_type"); !ok || pt != 4 {
		t.Errorf("pooling_type %d (%v), want 4 (rank)", pt, ok)
	}
	for _, name := range []string{"cls.weight", "cls.bias", "cls.output.weight", "cls.output.bias", "position_embd.weight"} {
		if _, ok := f.Tensor(name); !ok {
			t.Errorf("no tensor %s", name)
		}
	}
	ti, _ := f.Tensor("cls.output.weight")
	if len(ti.Dims) != 2 || ti.Dims[0] != RerankerEmbd || ti.Dims[1] != 1 {
		t.Errorf("cls.output.weight dims %v, want [%d 1]", ti.Dims, RerankerEmbd)
	}
	if add, _ := f.Bool("tokenizer.ggml.add_eos_token"); !add {
		t.Error("add_eos_token is not set: pairs would not be <s> query </s> document </s>")
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	scores, _ := f.Get("tokenizer.ggml.scores")
	got := spmTokenize(toks, scores.([]float32), "frog pond frog")
	want := []string{RerankerKeywordToken, "▁pond", RerankerKeywordToken}
	if len(got) != len(want) {
		t.Fatalf("tokenize: %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("tokenize: %q, want %q", got, want)
		}
	}
}

func TestRerankerScoreOrder(t *testing.T) {
	if s := RerankerScore(0, 5); s != 0 {
		t.Errorf("no keyword: score %v, want 0", s)
	}
	prev := 0.0
	for k := 1; k <= 10; k++ {
		s := RerankerScore(k, 10)
		if s <= prev || s >= 1 {
			t.Errorf("RerankerScore(%d, 10) = %v: not rising in (%v, 1)", k, s, prev)
		}
		prev = s
	}
}
