package infer

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

func load(t *testing.T, path string) *engine.Model {
	t.Helper()
	m, err := engine.LoadModel(path, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// A model whose vocabulary names fill-in-the-middle tokens gets a
// prefix-suffix-middle prompt; one without is a clear 400.
func TestFIMPrompt(t *testing.T) {
	kvs, tensors := testmodels.Bigram()
	const pre, suf, mid = 4, 5, 6 // byte tokens standing in for FIM tokens
	kvs = append(kvs,
		gguf.KV{Key: "tokenizer.ggml.fim_pre_token_id", Value: uint32(pre)},
		gguf.KV{Key: "tokenizer.ggml.fim_suf_token_id", Value: uint32(suf)},
		gguf.KV{Key: "tokenizer.ggml.fim_mid_token_id", Value: uint32(mid)})
	path := filepath.Join(t.TempDir(), "fim.gguf")
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	m := load(t, path)
	got, err := Prompt(m, &Request{Prompt: "one", Suffix: "ten"})
	if err != nil {
		t.Fatal(err)
	}
	one, _ := m.Tokenize("one", false, false)
	ten, _ := m.Tokenize("ten", false, false)
	want := []engine.Token{testmodels.BOSID, pre}
	want = append(append(want, one...), suf)
	want = append(append(want, ten...), mid)
	if len(got) != len(want) {
		t.Fatalf("FIM prompt %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("FIM prompt %v, want %v", got, want)
		}
	}
	stories := load(t, testmodels.Testdata("stories260K.gguf"))
	if _, err := Prompt(stories, &Request{Model: "stories", Prompt: "a", Suffix: "b"}); KindOf(err) != BadRequest {
		t.Fatalf("suffix on a model without FIM tokens: %v", err)
	}
}

func TestPromptRendering(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bigram.gguf")
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	m := load(t, path)
	stories := load(t, testmodels.Testdata("stories260K.gguf"))
	// render compares a request's prompt with the tokenization of the
	// text it should render to.
	render := func(m *engine.Model, r *Request) string {
		t.Helper()
		toks, err := Prompt(m, r)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(toks)
	}
	text := func(m *engine.Model, s string) string {
		toks, _ := m.Tokenize(s, true, true)
		return fmt.Sprint(toks)
	}
	for _, tc := range []struct {
		name string
		m    *engine.Model
		req  *Request
		want string
	}{
		{"raw", m, &Request{Prompt: "one", Raw: true}, "one"},
		{"chat template, one user turn", m, &Request{Prompt: "Hi", System: "Be brief."}, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"no template: plain prompt", stories, &Request{Prompt: "Once upon"}, "Once upon"},
		{"Go template", m, &Request{Prompt: "Hi", System: "S", Template: "[{{ .System }}|{{ .Prompt }}]"}, "[S|Hi]"},
		{"chat", m, &Request{Chat: true, Messages: []Message{{Role: "user", Content: "Hi"}}}, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"chat, Go template over messages", m, &Request{Chat: true, Messages: []Message{{Role: "user", Content: "A"}, {Role: "assistant", Content: "B"}},
			Template: "{{ range .Messages }}{{ .Role }}:{{ .Content }};{{ end }}"}, "user:A;assistant:B;"},
	} {
		if got := render(tc.m, tc.req); got != text(tc.m, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// The model's manifest fills in what the request leaves empty; a
	// manifest template that cannot render falls back to the chat template.
	e := models.Entry{System: "From the model.", Template: "{{ .Broken", Messages: []models.Message{{Role: "user", Content: "earlier"}}}
	r := withModelDefaults(&Request{Chat: true, Messages: []Message{{Role: "user", Content: "Hi"}}}, e)
	if r.System != "From the model." || len(r.Messages) != 2 || r.Messages[0].Content != "earlier" {
		t.Fatalf("defaults: %+v", r)
	}
	want := "<|im_start|>system\nFrom the model.<|im_end|>\n<|im_start|>user\nearlier<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if got := render(m, r); got != text(m, want) {
		t.Fatalf("manifest defaults: %q", got)
	}
	if _, err := Prompt(m, &Request{Prompt: "x", Template: "{{ .Broken"}); KindOf(err) != BadRequest {
		t.Fatalf("a request's broken template: %v", err)
	}
}
