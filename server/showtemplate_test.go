package server

import (
	"context"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// /api/show gives a model without a template Ollama's default, the bare
// prompt (which is what /api/generate sends it); a model with a chat
// template shows that.
func TestShowDefaultTemplate(t *testing.T) {
	ts := startServer(t)
	for _, tc := range []struct{ model, want string }{
		{"stories", "{{ .Prompt }}"},
		{"bigram", "<|im_start|>"},
	} {
		resp, err := ts.Client.Show(context.Background(), &ollamaapi.ShowRequest{Model: tc.model})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.Template, tc.want) {
			t.Errorf("%s: template %q, want %q", tc.model, resp.Template, tc.want)
		}
	}
	// The bare prompt is what the model is sent: the story continues.
	var got string
	err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time",
		Stream: new(false), Options: greedyOpts(16)}, func(r ollamaapi.GenerateResponse) error { got += r.Response; return nil })
	if err != nil || !strings.HasPrefix(storiesContinuation, got) || got == "" {
		t.Fatalf("generate: %q %v", got, err)
	}
}
