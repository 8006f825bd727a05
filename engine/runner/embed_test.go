package runner

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/internal/testkit"
)

var embedTexts = []string{
	"The cat sat.", "A dog ran.", "Once upon a time", "Lily loved to play outside in the park.",
	"The sun was hot.", "Tom had a red ball.", "They were happy.", "One day a bird came.",
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// Concurrent embedding requests, served together in shared decodes, give
// the embeddings and token counts each gets alone; a generation running
// at the same time is not disturbed.
func TestEmbedConcurrent(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{NumCtx: 256, Parallel: 2})
	prompts := make([][]engine.Token, len(embedTexts))
	alone := make([][]float32, len(embedTexts))
	total := 0
	for i, s := range embedTexts {
		prompts[i] = tokenize(t, m, s)
		out, n, err := r.Embed(context.Background(), [][]engine.Token{prompts[i]}, 0, false)
		if err != nil || len(out) != 1 || n != len(prompts[i]) {
			t.Fatalf("%q: %d embeddings, %d tokens, %v", s, len(out), n, err)
		}
		alone[i] = out[0]
		total += n
	}
	if c := cosine(alone[0], alone[1]); c > 0.9999 {
		t.Fatalf("different texts give the same embedding (cosine %f)", c)
	}
	gen, err := r.Generate(context.Background(), Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 16, Sampling: engine.SamplerParams{Temperature: 0}})
	if err != nil {
		t.Fatal(err)
	}
	// Each request embeds two texts; all are queued at once.
	var wg sync.WaitGroup
	errs := make(chan error, len(embedTexts))
	for k := 0; k < len(embedTexts); k += 2 {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			out, n, err := r.Embed(context.Background(), [][]engine.Token{prompts[k], prompts[k+1]}, 0, false)
			if err != nil {
				errs <- err
				return
			}
			if n != len(prompts[k])+len(prompts[k+1]) {
				errs <- errors.New("token count " + embedTexts[k])
			}
			for i, e := range out {
				if len(e) != len(alone[k+i]) || cosine(e, alone[k+i]) < 0.9999 {
					errs <- errors.New("batched embedding differs for " + embedTexts[k+i])
				}
			}
		}(k)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if res := collect(t, events(gen)); res.last.Err != nil || !strings.HasPrefix(storiesContinuation, res.text) {
		t.Errorf("generation beside embeddings: %q %v", res.text, res.last.Err)
	}
}

// The limits of today's embedding path: a text over the window is cut
// when truncate is set and refused otherwise; an empty text is refused.
func TestEmbedLimits(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{NumCtx: 64})
	long := tokenize(t, m, strings.Repeat("The cat sat on the mat. ", 20))
	if len(long) <= 64 {
		t.Fatalf("long text has %d tokens", len(long))
	}
	if _, _, err := r.Embed(context.Background(), [][]engine.Token{long}, 0, false); err == nil || !strings.Contains(err.Error(), "more than the context of 64") {
		t.Fatalf("too long: %v", err)
	}
	if _, _, err := r.Embed(context.Background(), [][]engine.Token{long[:10], long}, 16, false); err == nil || !strings.Contains(err.Error(), "input 1 has") || !strings.Contains(err.Error(), "context of 16") {
		t.Fatalf("too long for the window: %v", err)
	}
	out, n, err := r.Embed(context.Background(), [][]engine.Token{long}, 16, true)
	if err != nil || n != 16 || len(out) != 1 {
		t.Fatalf("truncated: %d tokens, %v", n, err)
	}
	cut, _, err := r.Embed(context.Background(), [][]engine.Token{long[:16]}, 0, false)
	if err != nil || cosine(out[0], cut[0]) < 0.9999 {
		t.Fatalf("truncated embedding differs from the first 16 tokens': %v", err)
	}
	if _, _, err := r.Embed(context.Background(), [][]engine.Token{{}}, 0, false); err == nil || !strings.Contains(err.Error(), "input 0 is empty") {
		t.Fatalf("empty: %v", err)
	}
	if _, _, err := r.Embed(context.Background(), [][]engine.Token{{engine.Token(m.VocabSize())}}, 0, false); err == nil {
		t.Fatal("a token outside the vocabulary was embedded")
	}
}

// A cancelled embedding request returns its context's error and leaves
// the queue; the runner goes on serving; Close ends queued requests.
func TestEmbedCancel(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{NumCtx: 128})
	toks := tokenize(t, m, "The cat sat.")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := r.Embed(ctx, [][]engine.Token{toks}, 0, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, "the cancelled request to leave the queue", func() bool { return r.EmbedsWaiting() == 0 })
	if out, _, err := r.Embed(context.Background(), [][]engine.Token{toks}, 0, false); err != nil || len(out) != 1 {
		t.Fatalf("after a cancel: %v", err)
	}
	r.Close()
	if _, _, err := r.Embed(context.Background(), [][]engine.Token{toks}, 0, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// Contexts whose size 16 does not divide still embed (llama.cpp aborts
// on an embedding context whose micro-batch n_seq_max does not divide),
// several texts in one decode where a divisor allows it.
func TestEmbedOddContext(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	for _, n := range []int{100, 101, 8} {
		r := newRunner(t, m, Config{NumCtx: n})
		out, _, err := r.Embed(context.Background(), [][]engine.Token{tokenize(t, m, "The cat sat."), tokenize(t, m, "A dog ran.")}, 0, false)
		if err != nil || len(out) != 2 {
			t.Fatalf("num_ctx %d: %v", n, err)
		}
		r.Close()
	}
}
