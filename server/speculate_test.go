package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// A draft model named for a model (--draft) is loaded beside it and the
// answers are those without it; a draft model of another vocabulary makes
// the load fail with a message naming both files, and the server goes on
// serving.
func TestServerDraftModel(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"stories.gguf": "stories260K.gguf", "storydraft.gguf": "stories260K.gguf", "random.gguf": "llama-2-tiny-random.gguf"} {
		if err := linkFile(testmodels.Testdata(src), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	start := func(drafts map[string]string, draftMax int) *testServer {
		return serveForTest(t, New(Config{ModelsDir: dir, Drafts: drafts, Sched: sched.Config{Parallel: 2, NumCtx: 256, KeepAlive: time.Minute,
			FlashAttn: engine.FlashAttentionOn, Threads: 1, DraftMax: draftMax}}))
	}
	gen := func(ts *testServer, model string, temp float64) (string, error) {
		var out strings.Builder
		err := ts.Client.Generate(context.Background(), &ollama.GenerateRequest{Model: model, Prompt: "Once upon a time", Stream: ptr(false),
			Options: map[string]any{"temperature": temp, "seed": 5, "num_predict": 40}}, func(r ollama.GenerateResponse) error {
			out.WriteString(r.Response)
			return nil
		})
		return out.String(), err
	}
	plain := start(nil, -1)
	drafted := start(map[string]string{"stories:latest": "storydraft:latest", "random:latest": "stories:latest"}, 0)
	for _, temp := range []float64{0, 0.8} {
		want, err := gen(plain, "stories", temp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gen(drafted, "stories", temp)
		if err != nil || got != want {
			t.Errorf("temperature %g: with the draft model %q (%v), without %q", temp, got, err, want)
		}
	}
	_, err := gen(drafted, "random", 0)
	if err == nil || !strings.Contains(err.Error(), "draft model") || !strings.Contains(err.Error(), "stories.gguf") || !strings.Contains(err.Error(), "random.gguf") {
		t.Errorf("a draft model of another vocabulary: %v", err)
	}
	if _, err := gen(drafted, "stories", 0); err != nil {
		t.Errorf("after a refused draft model: %v", err)
	}
}
