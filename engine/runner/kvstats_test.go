package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/internal/testkit"
)

// KVCells counts the cells of running requests as used and those idle
// slots keep for prefix reuse as cached, out of slots × context.
func TestKVCells(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 2, NumCtx: 128})
	ctx := context.Background()
	k, err := r.KVCells(ctx)
	if err != nil || k != (KVCells{Total: 256}) || k.Usage() != 0 {
		t.Fatalf("idle runner: %+v %v", k, err)
	}

	prompt := tokenize(t, m, "Once upon a time")
	res := run(t, r, Request{Prompt: prompt, NumPredict: 10, Sampling: engine.SamplerParams{Temperature: 0}})
	k, err = r.KVCells(ctx)
	// The slot keeps the prompt and the generated tokens it decoded (the
	// last one sampled is never decoded).
	if err != nil || k.Used != 0 || k.Cached < len(prompt) || k.Cached > len(prompt)+res.last.Stats.EvalCount || k.Total != 256 {
		t.Fatalf("after a generation of %d tokens on a prompt of %d: %+v %v", res.last.Stats.EvalCount, len(prompt), k, err)
	}

	// A long generation holds its cells while it runs.
	gctx, cancel := context.WithCancel(ctx)
	events, err := generate(r, gctx, Request{Prompt: prompt, NumPredict: 100000, Sampling: engine.SamplerParams{Temperature: 0}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, "the running generation to hold cells", func() bool {
		if k, err = r.KVCells(ctx); err != nil {
			t.Fatal(err)
		}
		return k.Used > len(prompt)
	})
	if u := k.Usage(); u <= 0 || u > 0.5 || k.Used > 128 {
		t.Fatalf("one of two slots running: %+v, usage %v", k, u)
	}
	cancel()
	for range events {
	}

	r.Close()
	if _, err := r.KVCells(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed runner: %v", err)
	}
}
