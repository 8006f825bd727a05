// Command bench measures Tadpole's generation speed without HTTP: the raw
// engine loop (prompt evaluation, then greedy decoding of 1, 4 and 8
// sequences in one batch per step) and the continuous-batching runner at
// the same numbers of concurrent streams, so the runner's overhead over
// the engine shows as a ratio.
//
//	go run ./scripts/bench [-n 64] [-streams 1,4,8] [MODEL]
//
// MODEL is a GGUF path, "stories" (the bundled stories260K, default) or
// "llama1b" (a random-weight 1B Llama in Q4_0 written to a temp dir).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

func main() {
	n := flag.Int("n", 64, "tokens to generate per stream")
	streamsFlag := flag.String("streams", "1,4,8", "concurrent streams to measure")
	promptLen := flag.Int("prompt", 128, "prompt tokens for the prompt-eval measurement")
	threads := flag.Int("threads", 0, "threads (0: all CPUs)")
	flag.Parse()
	path := modelPath(flag.Arg(0))
	var streams []int
	for _, s := range strings.Split(*streamsFlag, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 {
			log.Fatalf("bad -streams %q", *streamsFlag)
		}
		streams = append(streams, v)
	}
	maxStreams := 1
	for _, s := range streams {
		maxStreams = max(maxStreams, s)
	}

	m, err := engine.LoadModel(path, engine.ModelParams{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Printf("model:      %s (%s, %s, %d params)\n", filepath.Base(path), m.Meta.Architecture, m.Meta.FileType, m.Meta.ParameterSize)
	fmt.Printf("cpu flags:  %s\n", engine.BuildFlags)
	fmt.Printf("system:     %s\n", engine.SystemInfo())
	fmt.Printf("threads:    %d, tokens/stream: %d, flash attention on, unified KV\n\n", max(*threads, engine.DefaultThreads()), *n)

	nctx := *n + *promptLen + 16
	pp := rawPrompt(m, *promptLen, *threads)
	fmt.Printf("raw engine prompt eval (%d tokens): %.1f tok/s\n\n", *promptLen, pp)
	fmt.Printf("| streams | raw engine tok/s | runner tok/s | runner/raw |\n|---|---|---|---|\n")
	for _, s := range streams {
		raw := rawDecode(m, s, *n, nctx, *threads)
		run := runnerDecode(m, s, maxStreams, *n, nctx, *threads)
		fmt.Printf("| %d | %.1f | %.1f | %.3f |\n", s, raw, run, run/raw)
	}
}

func modelPath(arg string) string {
	switch arg {
	case "", "stories":
		return testmodels.Testdata("stories260K.gguf")
	case "llama1b":
		p := filepath.Join(os.TempDir(), "tadpole-bench-llama1b-q4_0.gguf")
		if _, err := os.Stat(p); err != nil {
			fmt.Fprintf(os.Stderr, "writing a random-weight 1B Llama (Q4_0) to %s …\n", p)
			if err := testmodels.WriteRandomLlama(p, testmodels.Llama1B, gguf.Q4_0, 1); err != nil {
				log.Fatal(err)
			}
		}
		return p
	}
	return arg
}

func newCtx(m *engine.Model, seqs, nctx, threads int) *engine.Context {
	ctx, err := m.NewContext(engine.ContextParams{
		NumCtx: nctx * seqs, NumBatch: 512, NumSeqMax: seqs, Threads: threads,
		FlashAttn: engine.FlashAttentionOn, KVUnified: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	return ctx
}

func promptTokens(m *engine.Model, n int) []engine.Token {
	toks, err := m.Tokenize(strings.Repeat("Once upon a time, there was a little girl named Lily. ", n), true, false)
	if err != nil {
		log.Fatal(err)
	}
	return toks[:min(n, len(toks))]
}

// rawPrompt is the prompt-evaluation speed of one sequence.
func rawPrompt(m *engine.Model, n, threads int) float64 {
	ctx := newCtx(m, 1, n+8, threads)
	defer ctx.Close()
	b := engine.NewBatch(512)
	defer b.Close()
	toks := promptTokens(m, n)
	best := 0.0
	for rep := 0; rep < 3; rep++ {
		ctx.ClearMemory()
		b.Clear()
		for i, t := range toks {
			b.Add(t, i, 0, i == len(toks)-1)
		}
		t0 := time.Now()
		if err := ctx.Decode(b); err != nil {
			log.Fatal(err)
		}
		best = max(best, float64(len(toks))/time.Since(t0).Seconds())
	}
	return best
}

// rawDecode is the aggregate greedy decode speed of seqs sequences decoded
// together, one token each per llama_decode.
func rawDecode(m *engine.Model, seqs, n, nctx, threads int) float64 {
	ctx := newCtx(m, seqs, nctx, threads)
	defer ctx.Close()
	b := engine.NewBatch(512)
	defer b.Close()
	prompt := promptTokens(m, 8)
	samplers := make([]*engine.Sampler, seqs)
	idx := make([]int, seqs)
	for s := range samplers {
		samplers[s], _ = m.NewSampler(engine.SamplerParams{})
		defer samplers[s].Close()
		for i, t := range prompt {
			idx[s] = b.Add(t, i, s, i == len(prompt)-1)
		}
	}
	if err := ctx.Decode(b); err != nil {
		log.Fatal(err)
	}
	t0 := time.Now()
	for step := 0; step < n; step++ {
		next := make([]engine.Token, seqs)
		for s := range samplers {
			next[s] = samplers[s].Sample(ctx, idx[s])
		}
		b.Clear()
		for s := range samplers {
			idx[s] = b.Add(next[s], len(prompt)+step, s, true)
		}
		if err := ctx.Decode(b); err != nil {
			log.Fatal(err)
		}
	}
	return float64(n*seqs) / time.Since(t0).Seconds()
}

// runnerDecode is the aggregate decode speed of streams concurrent
// requests through the runner (eval tokens over the wall time from the
// first token to the last).
func runnerDecode(m *engine.Model, streams, slots, n, nctx, threads int) float64 {
	r, err := runner.New(m, runner.Config{Parallel: slots, NumCtx: nctx, Threads: threads, FlashAttn: engine.FlashAttentionOn})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	prompt := promptTokens(m, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first, last time.Time
	total := 0
	start := make(chan struct{})
	for s := 0; s < streams; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// A per-stream seed token makes the prompts differ, so no
			// slot reuses another's prefix.
			p := append([]engine.Token{prompt[0], engine.Token(100 + s)}, prompt[1:]...)
			events, err := r.Generate(context.Background(), runner.Request{Prompt: p, NumPredict: n})
			if err != nil {
				log.Fatal(err)
			}
			gotFirst := false
			for ev := range events {
				now := time.Now()
				mu.Lock()
				if !gotFirst && ev.Text != "" {
					gotFirst = true
					if first.IsZero() || now.Before(first) {
						first = now
					}
				}
				if ev.Done {
					if ev.Err != nil {
						log.Fatal(ev.Err)
					}
					total += ev.Stats.EvalCount - 1 // the first token came from the prompt's logits
					if now.After(last) {
						last = now
					}
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	return float64(total) / last.Sub(first).Seconds()
}
