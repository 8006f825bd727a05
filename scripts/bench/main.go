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
	"log/slog"
	"math"
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
	backends := flag.String("backends", "", "directory of GPU backend libraries to load (lib/tadpole)")
	gpuLayers := flag.Int("gpu-layers", 0, "layers to offload to the GPU (-1: all)")
	httpBench := flag.Bool("http", false, "also measure through a real Tadpole server over HTTP (OpenAI completions, SSE)")
	temperature := flag.Float64("temperature", 0, "the HTTP column's temperature (0: greedy; requests are seeded)")
	noStream := flag.Bool("no-stream", false, "the HTTP column asks for whole answers instead of SSE streams")
	peerURL := flag.String("url", "", "measure the HTTP column against another OpenAI-compatible server at this base URL instead (e.g. llama-server)")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	engine.Init(*backends)
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

	m, err := engine.LoadModel(path, engine.ModelParams{GPULayers: *gpuLayers})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Printf("model:      %s (%s, %s, %d params)\n", filepath.Base(path), m.Meta.Architecture, m.Meta.FileType, m.Meta.ParameterSize)
	fmt.Printf("cpu flags:  %s\n", engine.BuildFlags)
	fmt.Printf("system:     %s\n", engine.SystemInfo())
	fmt.Printf("threads:    %d, tokens/stream: %d, flash attention on, unified KV, gpu layers %d\n", max(*threads, engine.DefaultThreads()), *n, *gpuLayers)
	for _, d := range engine.Devices() {
		fmt.Printf("device:     %s (%s), %d MiB free\n", d.Name, d.Description, d.FreeBytes>>20)
	}
	fmt.Println()

	// Greedy, with end-of-generation tokens banned so that every stream
	// generates exactly n tokens (random-weight models end early).
	benchSampling.LogitBias = map[engine.Token]float32{}
	for t := 0; t < m.VocabSize(); t++ {
		if m.IsEOG(engine.Token(t)) {
			benchSampling.LogitBias[engine.Token(t)] = float32(math.Inf(-1))
		}
	}
	nctx := *n + *promptLen + 16
	pp := rawPrompt(m, *promptLen, *threads)
	fmt.Printf("raw engine prompt eval (%d tokens): %.1f tok/s\n\n", *promptLen, pp)
	fmt.Printf("decode: generated tokens per second of wall time, prompts included\n\n")
	var srv *benchServer
	switch {
	case *peerURL != "":
		srv = &benchServer{url: strings.TrimSuffix(*peerURL, "/")}
	case *httpBench:
		srv = startServer(path, maxStreams, nctx, *threads)
		defer srv.close()
	}
	fmt.Printf("| streams | raw engine tok/s | runner tok/s | runner/raw | tokens raw/runner |")
	if srv != nil {
		srv.temperature, srv.noStream = *temperature, *noStream
		fmt.Printf(" HTTP tok/s | HTTP/raw | HTTP tokens |")
	}
	fmt.Printf("\n|---|---|---|---|---|")
	if srv != nil {
		fmt.Printf("---|---|---|")
	}
	fmt.Println()
	for _, s := range streams {
		raw, rawN := rawDecode(m, s, *n, nctx, *threads)
		run, runN := runnerDecode(m, s, maxStreams, *n, nctx, *threads)
		fmt.Printf("| %d | %.1f | %.1f | %.3f | %d/%d |", s, raw, run, run/raw, rawN, runN)
		if srv != nil {
			h, hN := srv.decode(m, s, *n)
			fmt.Printf(" %.1f | %.3f | %d |", h, h/raw, hN)
		}
		fmt.Println()
	}
	if srv != nil {
		how := "streamed as SSE"
		if *noStream {
			how = "not streamed"
		}
		fmt.Printf("\nHTTP: a real server on loopback, OpenAI's /v1/completions %s, same prompts, temperature %g (seeded), end-of-generation banned with logit_bias.\n", how, *temperature)
	}
}

var benchSampling engine.SamplerParams

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
	b, err := engine.NewBatch(512)
	if err != nil {
		panic(err)
	}
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

// rawDecode is the ideal batched schedule the runner is measured
// against: all prompts in one llama_decode, then one decode per step with
// the next token of every sequence that has not ended (EOG or n tokens).
// It returns generated tokens per second of wall time, prompt included.
func rawDecode(m *engine.Model, seqs, n, nctx, threads int) (float64, int) {
	ctx := newCtx(m, seqs, nctx, threads)
	defer ctx.Close()
	b, err := engine.NewBatch(512)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	samplers := make([]*engine.Sampler, seqs)
	idx := make([]int, seqs)
	pos := make([]int, seqs)
	t0 := time.Now()
	for s := range samplers {
		samplers[s], _ = m.NewSampler(benchSampling)
		defer samplers[s].Close()
		p := streamPrompt(m, s)
		for i, t := range p {
			idx[s] = b.Add(t, i, s, i == len(p)-1)
		}
		pos[s] = len(p)
	}
	if err := ctx.Decode(b); err != nil {
		log.Fatal(err)
	}
	generated := make([]int, seqs)
	total := 0
	for {
		b.Clear()
		for s := range samplers {
			if idx[s] < 0 {
				continue
			}
			t := samplers[s].Sample(ctx, idx[s])
			if m.IsEOG(t) {
				idx[s] = -1
				continue
			}
			m.TokenPiece(t, false) // the runner detokenizes every token too
			generated[s]++
			total++
			if generated[s] == n {
				idx[s] = -1
				continue
			}
			idx[s] = b.Add(t, pos[s], s, true)
			pos[s]++
		}
		if b.Len() == 0 {
			break
		}
		if err := ctx.Decode(b); err != nil {
			log.Fatal(err)
		}
	}
	return float64(total) / time.Since(t0).Seconds(), total
}

// streamPrompt is stream s's prompt: a per-stream token after BOS makes the
// prompts differ, so no slot reuses another's prefix.
func streamPrompt(m *engine.Model, s int) []engine.Token {
	p := promptTokens(m, 8)
	return append([]engine.Token{p[0], engine.Token(100 + s)}, p[1:]...)
}

// runnerDecode is the same work through the runner: streams concurrent
// requests, generated tokens per second of wall time from submitting them
// to the last final event.
func runnerDecode(m *engine.Model, streams, slots, n, nctx, threads int) (float64, int) {
	r, err := runner.New(m, runner.Config{Parallel: slots, NumCtx: nctx, Threads: threads, FlashAttn: engine.FlashAttentionOn})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	t0 := time.Now()
	for s := 0; s < streams; s++ {
		events, err := r.Generate(context.Background(), runner.Request{Prompt: streamPrompt(m, s), NumPredict: n, Sampling: benchSampling})
		if err != nil {
			log.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range events {
				if ev.Done {
					if ev.Err != nil {
						log.Fatal(ev.Err)
					}
					mu.Lock()
					total += ev.Stats.EvalCount
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return float64(total) / time.Since(t0).Seconds(), total
}
