// Command bench measures Tadpole's generation speed: the raw engine loop
// (prompt evaluation, then decoding of 1, 8 and 16 sequences in one batch
// per step), the continuous-batching runner at the same numbers of
// concurrent streams, and — with -http, -url or -llama-server — real
// servers over HTTP, the way users call them: OpenAI's /v1/completions,
// streamed and not, greedy and at temperature 0.8, plus the time to the
// first token of a fresh 512-token prompt. Tadpole runs as a child process
// (bin/tadpole serve); a peer (llama-server) is started with the same
// model, threads, slots and context, or measured at -url. Cases alternate
// between the two servers so that drift on a shared machine hits both,
// and every row prints its ratios. For Tadpole each case also prints where
// the time went (tadpole_step_seconds from its /metrics).
//
// With -images (and -http), a model with a projector (NAME.mmproj.gguf
// beside it, or -mmproj) is served with it and Tadpole is also measured
// on images: requests per second and the median time to the first token
// at 1 and 4 concurrent image streams (OpenAI chat requests, each with a
// new generated PNG as a data URL), then text tokens per second alone and
// while 2 clients send image requests back to back, and their ratio.
//
//	go run ./scripts/bench [-n 128] [-streams 1,8,16] [-http [-images]] [-llama-server PATH | -url URL] [MODEL]
//
// MODEL is a GGUF path, "stories" (the bundled stories260K, default),
// "llama1b" (a random-weight 1B Llama in Q4_0 written to a temp dir) or
// "smol135m" (a random-weight SmolLM2-135M-shaped model in Q8_0).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	n := flag.Int("n", 128, "tokens to generate per stream")
	streamsFlag := flag.String("streams", "1,8,16", "concurrent streams to measure")
	promptLen := flag.Int("prompt", 512, "prompt tokens for prompt evaluation and the time to first token")
	threads := flag.Int("threads", 0, "threads (0: all CPUs)")
	parallel := flag.Int("parallel", 8, "slots of each server (--parallel, llama-server -np)")
	slotCtx := flag.Int("ctx", 2048, "context per slot in tokens (both servers)")
	backends := flag.String("backends", "", "directory of GPU backend libraries to load (lib/tadpole)")
	gpuLayers := flag.Int("gpu-layers", 0, "layers to offload to the GPU (-1: all)")
	httpBench := flag.Bool("http", false, "measure Tadpole over HTTP (bin/tadpole serve as a child process)")
	tadpoleBin := flag.String("tadpole", "bin/tadpole", "the tadpole binary -http runs")
	tadpoleArgs := flag.String("tadpole-args", "", "extra flags for tadpole serve (space-separated)")
	peerURL := flag.String("url", "", "also measure another OpenAI-compatible server already running at this base URL (e.g. llama-server)")
	llamaServer := flag.String("llama-server", "", "also measure this llama-server binary, started with the same model, threads, slots and context")
	llamaArgs := flag.String("llama-server-args", "", "extra flags for llama-server (space-separated)")
	llamaBench := flag.String("llama-bench", "", "llama-bench binary: print its prompt-processing speed beside the raw engine's")
	temps := flag.String("temperatures", "0,0.8", "temperatures of the HTTP cases (0: greedy; requests are seeded)")
	modes := flag.String("modes", "stream,whole", "HTTP cases: stream (SSE), whole (one answer), or both")
	reps := flag.Int("reps", 3, "rounds per HTTP case: each server runs the case once a round, interleaved (the median is kept)")
	skipRaw := flag.Bool("skip-raw", false, "skip the raw engine and runner measurements")
	flash := flag.String("flash", "on", "flash attention for the raw engine, the runner and Tadpole's server: on or off")
	sweep := flag.Bool("prompt-sweep", false, "also sweep the raw prompt speed over n_ubatch and flash attention")
	images := flag.Bool("images", false, "with -http: also measure image requests (the model's projector, NAME.mmproj.gguf beside it or -mmproj, is served with it)")
	mmproj := flag.String("mmproj", "", "the projector -images serves (default: NAME.mmproj.gguf beside the model)")
	imageSize := flag.Int("image-size", 256, "-images: pixels per side of the generated PNGs")
	imageRequests := flag.Int("image-requests", 8, "-images: image requests per stream count")
	imageStreams := flag.String("image-streams", "1,4", "-images: concurrent image streams to measure")
	imageTokens := flag.Int("image-tokens", 8, "-images: tokens generated per image request")
	imageText := flag.Int("image-text-streams", 1, "-images: text streams measured alone and beside the image load")
	imageLoaders := flag.Int("image-loaders", 2, "-images: clients sending image requests back to back while the text is measured")
	imageWindow := flag.Duration("image-window", 2*time.Second, "-images: how long text is measured each time, alone and beside the image load")
	loraRank := flag.Int("lora", 0, "also measure LoRA adapters of this rank (random, on attn_q and attn_v): memory with 0/1/4 loaded, and decode at the largest -streams with none, one, and 4 taking turns")
	promptText := flag.String("prompt-text", "", "with -http: every request's prompt is this text instead of the generated tokens (e.g. \"ping pong ping pong ping\" on the bigram models, whose answer repeats it: a workload for speculative decoding)")
	draftModel := flag.String("draft", "", "with -http: the first Tadpole serves this GGUF as the model's draft model (--draft); compare with -tadpole2-args \"--draft-max 0\"")
	tadpole2 := flag.String("tadpole2-args", "", "with -http: measure a second Tadpole, started with these extra flags, instead of a peer (e.g. \"--draft-max 0\": speculative decoding off against on)")
	tadpole2Bin := flag.String("tadpole2", "", "with -http: the second Tadpole is this binary (a build from before a change; default -tadpole), started with the same flags and -tadpole2-args")
	convUsers := flag.Int("conversations", 0, "with -http: measure only returning conversations: this many users, each with its own history, taking turns on -parallel slots (issue 24's prompt cache; Tadpole is restarted once to measure its disk tier)")
	convHistory := flag.Int("history", 4000, "-conversations: tokens of each user's history")
	convTurns := flag.Int("turns", 2, "-conversations: returning turns per user")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	log.SetOutput(os.Stderr) // slog.SetDefault routed log through the Warn handler, which drops log.Fatal's Info lines
	engine.Init(*backends)
	if *flash == "off" {
		benchFlash = engine.FlashAttentionOff
	}
	path := modelPath(flag.Arg(0))
	streams := intList(*streamsFlag, "-streams")
	maxStreams := 1
	for _, s := range streams {
		maxStreams = max(maxStreams, s)
	}
	nthreads := *threads
	if nthreads <= 0 {
		nthreads = engine.DefaultThreads()
	}

	m, err := engine.LoadModel(path, engine.ModelParams{GPULayers: *gpuLayers})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Printf("model:      %s (%s, %s, %d params, %d-token vocabulary)\n", filepath.Base(path), m.Meta.Architecture, m.Meta.FileType, m.Meta.ParameterSize, m.VocabSize())
	fmt.Printf("cpu flags:  %s\n", engine.BuildFlags)
	fmt.Printf("system:     %s\n", engine.SystemInfo())
	fmt.Printf("threads:    %d, tokens/stream: %d, flash attention %s, a KV stream per sequence, gpu layers %d\n", nthreads, *n, *flash, *gpuLayers)
	for _, d := range engine.Devices() {
		fmt.Printf("device:     %s (%s), %d MiB free\n", d.Name, d.Description, d.FreeBytes>>20)
	}
	fmt.Println()

	// End-of-generation tokens banned so that every stream generates
	// exactly n tokens (random-weight models end early).
	ban := map[engine.Token]float32{}
	for t := 0; t < m.VocabSize(); t++ {
		if m.IsEOG(engine.Token(t)) {
			ban[engine.Token(t)] = float32(math.Inf(-1))
		}
	}
	benchSampling.LogitBias = ban
	// What a server samples with at temperature 0.8 and Ollama's other
	// defaults (top_k 40, top_p 0.9, repeat_penalty 1.1 over 64 tokens).
	sampled := engine.SamplerParams{Seed: 42, Temperature: 0.8, TopK: 40, TopP: 0.9, RepeatLastN: 64, RepeatPenalty: 1.1, LogitBias: ban}
	nctx := *n + *promptLen + 16
	if *sweep {
		promptSweep(m, *promptLen, *threads)
	}
	if !*skipRaw {
		// Raw prompt and generation speed, around llama-bench's run of
		// the same (the mean of the two runs before and after it).
		pp, tg := rawPrompt(m, *promptLen, *threads), rawGen(m, *n, *threads)
		var lbpp, lbtg float64
		if *llamaBench != "" {
			lbpp, lbtg = runLlamaBench(*llamaBench, path, *promptLen, *n, nthreads, *flash)
			pp, tg = (pp+rawPrompt(m, *promptLen, *threads))/2, (tg+rawGen(m, *n, *threads))/2
		}
		fmt.Printf("raw engine prompt eval (%d tokens): %.1f tok/s", *promptLen, pp)
		if lbpp > 0 {
			fmt.Printf("; llama-bench pp%d: %.1f tok/s; ratio %.3f", *promptLen, lbpp, pp/lbpp)
		}
		fmt.Printf("\nraw engine generation (%d tokens, one at a time): %.1f tok/s", *n, tg)
		if lbtg > 0 {
			fmt.Printf("; llama-bench tg%d: %.1f tok/s; ratio %.3f", *n, lbtg, tg/lbtg)
		}
		fmt.Printf("\n\ndecode: generated tokens per second of wall time, prompts included\n\n")
		fmt.Println("| streams | raw greedy tok/s | runner greedy tok/s | runner/raw | raw temp 0.8 tok/s | runner temp 0.8 tok/s | runner/raw |")
		fmt.Println("|---|---|---|---|---|---|---|")
		// Best of -reps, alternating raw and runner so drift hits both.
		for _, s := range streams {
			var rg, ug, rs, us float64
			for i := 0; i < *reps; i++ {
				r1, _ := rawDecode(m, s, *n, nctx, *threads, benchSampling)
				u1, _ := runnerDecode(m, s, maxStreams, *n, nctx, *threads, benchSampling)
				r2, _ := rawDecode(m, s, *n, nctx, *threads, sampled)
				u2, _ := runnerDecode(m, s, maxStreams, *n, nctx, *threads, sampled)
				rg, ug, rs, us = max(rg, r1), max(ug, u1), max(rs, r2), max(us, u2)
			}
			fmt.Printf("| %d | %.1f | %.1f | %.3f | %.1f | %.1f | %.3f |\n", s, rg, ug, ug/rg, rs, us, us/rs)
		}
		fmt.Println()
	}
	if *loraRank > 0 {
		loraBench(m, path, *loraRank, maxStreams, *n, nctx, *threads, benchSampling)
	}
	if !*httpBench && *peerURL == "" && *llamaServer == "" {
		return
	}
	// The raw engine runs again in the HTTP table's rounds, beside the
	// servers (so the model stays loaded); otherwise the servers load
	// their own copy.
	var rawRun func(streams int, temp float64) float64
	if *skipRaw {
		m.Close()
	} else {
		rawRun = func(streams int, temp float64) float64 {
			sp := benchSampling
			if temp > 0 {
				sp = sampled
				sp.Temperature = float32(temp)
			}
			r, _ := rawDecode(m, streams, *n, nctx, *threads, sp)
			return r
		}
	}
	cfg := serverConfig{model: path, threads: nthreads, parallel: max(*parallel, maxStreams), ctx: *slotCtx}
	var ic imageConfig
	if *images {
		if !*httpBench {
			log.Fatal("-images needs -http (it measures Tadpole's server)")
		}
		if cfg.projector = projectorFor(path, *mmproj); cfg.projector == "" {
			log.Fatalf("-images: no projector beside %s (want %s.mmproj.gguf, or name one with -mmproj)", path, strings.TrimSuffix(path, filepath.Ext(path)))
		}
		ic = imageConfig{size: *imageSize, requests: *imageRequests, streams: intList(*imageStreams, "-image-streams"),
			tokens: *imageTokens, textStreams: *imageText, loaders: *imageLoaders, reps: *reps, window: *imageWindow}
		if ic.size < 1 || ic.requests < 1 || ic.tokens < 1 || ic.textStreams < 1 || ic.loaders < 1 || ic.window <= 0 {
			log.Fatal("-image-size, -image-requests, -image-tokens, -image-text-streams and -image-loaders must be at least 1, -image-window positive")
		}
		for _, s := range ic.streams {
			cfg.parallel = max(cfg.parallel, s)
		}
		cfg.parallel = max(cfg.parallel, ic.textStreams+ic.loaders)
	}
	conv := convConfig{users: *convUsers, history: *convHistory, turns: *convTurns, message: 16}
	if conv.users > 0 {
		cfg.parallel = *parallel
		cfg.ctx = conv.history + (conv.turns+2)*conv.message + 64
		if conv.users <= cfg.parallel || conv.turns < 1 || conv.history < 16 {
			log.Fatal("-conversations must exceed -parallel (a slot must be taken before its conversation returns), -turns be at least 1, -history at least 16")
		}
	}
	var servers []*httpServer
	if *httpBench {
		c := cfg
		c.extra = append([]string{"--flash-attention", *flash}, strings.Fields(*tadpoleArgs)...)
		c.draft = *draftModel
		servers = append(servers, startTadpole(*tadpoleBin, c))
	}
	switch {
	case *tadpole2 != "" || *tadpole2Bin != "":
		c := cfg
		c.extra = append([]string{"--flash-attention", *flash}, strings.Fields(*tadpoleArgs+" "+*tadpole2)...)
		bin := *tadpoleBin
		if *tadpole2Bin != "" {
			bin = *tadpole2Bin
		}
		t2 := startTadpole(bin, c)
		t2.name = strings.TrimSpace("tadpole " + *tadpole2Bin + " " + *tadpole2)
		servers = append(servers, t2)
	case *llamaServer != "":
		c := cfg
		c.extra = strings.Fields(*llamaArgs)
		servers = append(servers, startLlamaServer(*llamaServer, c))
	case *peerURL != "":
		servers = append(servers, &httpServer{name: "peer", url: strings.TrimSuffix(*peerURL, "/")})
	}
	defer func() {
		for _, s := range servers {
			s.close()
		}
	}()
	vm, err := engine.LoadModel(path, engine.ModelParams{VocabOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer vm.Close()
	if *promptText != "" {
		if textPrompt, err = vm.Tokenize(*promptText, true, true); err != nil || len(textPrompt) == 0 {
			log.Fatalf("-prompt-text: %v", err)
		}
	}
	if conv.users > 0 {
		convTable(servers, vm, conv, cfg.parallel)
		return
	}
	httpTable(servers, vm, streams, *n, *reps, *promptLen, floatList(*temps), strings.Split(*modes, ","), rawRun)
	if *images {
		imageTable(servers[0], vm, ic, *n, cfg.projector)
	}
}

// httpTable measures every case on every server, alternating servers
// within each case, and prints one row per case with the ratios.
//
// rawRun, unless nil, runs the raw engine on the same case (streams
// sequences, the temperature) and returns its rate: it takes a turn in
// every round too, so that the last column compares Tadpole's server with
// its own engine measured in the same minutes.
func httpTable(servers []*httpServer, m *engine.Model, streams []int, n, reps, promptLen int, temps []float64, modes []string, rawRun func(streams int, temp float64) float64) {
	fmt.Printf("HTTP: OpenAI /v1/completions on loopback, %d tokens per request, median of %d interleaved rounds (the ratio: the median of the rounds' ratios); tok/s = tokens generated by all streams per second of wall time, measured by the client\n\n", n, reps)
	head := "| case |"
	sep := "|---|"
	for _, s := range servers {
		head += " " + s.name + " tok/s |"
		sep += "---|"
	}
	if len(servers) == 2 {
		head += fmt.Sprintf(" %s/%s |", servers[0].name, servers[1].name)
		sep += "---|"
	}
	if rawRun != nil {
		head += " " + servers[0].name + "/raw engine |"
		sep += "---|"
	}
	fmt.Println(head)
	fmt.Println(sep)
	var notes []string
	for _, mode := range modes {
		for _, temp := range temps {
			for _, st := range streams {
				c := httpCase{streams: st, stream: strings.TrimSpace(mode) == "stream", temperature: temp}
				row := "| " + c.String() + " |"
				// reps rounds; in each, every server runs the case once,
				// the order reversed every other round, so that a machine
				// that drifts (shared cores) weighs on both alike. A server
				// reports its median rate; the ratio is the median of the
				// rounds' ratios.
				perRound := make([][]float64, len(servers))
				befores := make([]map[string][2]float64, len(servers))
				for i, s := range servers {
					befores[i] = s.phases()
					s.failed = 0
				}
				var rawRounds []float64
				for round := 0; round < reps; round++ {
					if rawRun != nil && round%2 == 0 {
						waitQuiet(servers)
						rawRounds = append(rawRounds, rawRun(st, temp))
					}
					for _, i := range roundOrder(round, len(servers)) {
						s := servers[i]
						// Every run starts on a quiet machine: the other
						// server (or this one) may still be working on what
						// the last run left, or spinning its threads.
						waitQuiet(servers)
						failed := s.failed
						rate := s.run(c, m, n)
						if s.failed > failed {
							// A failed request's generation may go on in
							// the server: wait for it so that the next run
							// does not share the CPU with it.
							s.waitIdle()
						}
						perRound[i] = append(perRound[i], rate)
					}
					if rawRun != nil && round%2 == 1 {
						waitQuiet(servers)
						rawRounds = append(rawRounds, rawRun(st, temp))
					}
				}
				var rates []float64
				for i, s := range servers {
					if b := breakdown(befores[i], s.phases()); b != "" {
						note := fmt.Sprintf("%s, %s: %s", s.name, c, b)
						notes = append(notes, note)
						fmt.Fprintln(os.Stderr, note)
					}
					rate := median(perRound[i])
					rates = append(rates, rate)
					row += fmt.Sprintf(" %.1f", rate)
					if s.failed > 0 {
						row += fmt.Sprintf(" (%d failed)", s.failed)
					}
					row += " |"
				}
				if len(servers) == 2 {
					row += fmt.Sprintf(" **%.3f** |", medianRatio(perRound[0], perRound[1]))
					fmt.Fprintf(os.Stderr, "%s: rounds %s %.1f, %s %.1f\n", c, servers[0].name, perRound[0], servers[1].name, perRound[1])
				}
				if rawRun != nil {
					row += fmt.Sprintf(" %.3f |", medianRatio(perRound[0], rawRounds))
				}
				fmt.Println(row)
			}
		}
	}
	row := fmt.Sprintf("| first token after a fresh %d-token prompt (median of 5, s) |", promptLen)
	// Five rounds, interleaved as above; a fresh prompt every time.
	ttfts := make([][]float64, len(servers))
	for round := 0; round < 5; round++ {
		for _, i := range roundOrder(round, len(servers)) {
			waitQuiet(servers)
			d := servers[i].ttft(m, promptLen, round*len(servers)+i)
			ttfts[i] = append(ttfts[i], d.Seconds())
		}
	}
	for i := range servers {
		row += fmt.Sprintf(" %.3f |", median(ttfts[i]))
	}
	if len(servers) == 2 {
		row += fmt.Sprintf(" **%.3f** (speed) |", medianRatio(ttfts[1], ttfts[0]))
	}
	if rawRun != nil {
		row += " – |"
	}
	fmt.Println(row)
	if len(notes) > 0 {
		fmt.Println("\nWhere Tadpole's time went (mean per step for step/batch/decode/prefill, per token for sample/detokenize/handoff, per event for deliver; ×count):")
		for _, n := range notes {
			fmt.Println("  " + n)
		}
	}
}

// roundOrder is the order n servers take their turns in a round: as
// listed in even rounds, reversed in odd ones.
func roundOrder(round, n int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = k
		if round%2 == 1 {
			order[k] = n - 1 - k
		}
	}
	return order
}

// median is the middle value (the mean of the two middle ones).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianRatio is the median of a[i]/b[i] over the rounds where b[i] > 0.
func medianRatio(a, b []float64) float64 {
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			r = append(r, a[i]/b[i])
		} else if a[i] > 0 {
			r = append(r, math.Inf(1))
		}
	}
	return median(r)
}

// runLlamaBench runs llama-bench for prompt processing and generation (pp
// and tg, flash attention as -flash) and returns its
// tokens per second (0 on failure, which is printed).
func runLlamaBench(bin, model string, promptLen, n, threads int, flash string) (pp, tg float64) {
	cmd := exec.Command(bin, "-m", model, "-t", fmt.Sprint(threads), "-p", fmt.Sprint(promptLen), "-n", fmt.Sprint(n), "-fa", flash, "-o", "json")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+filepath.Dir(bin)+":"+os.Getenv("LD_LIBRARY_PATH"))
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "llama-bench: %v\n", err)
		return 0, 0
	}
	var rows []struct {
		NPrompt int     `json:"n_prompt"`
		NGen    int     `json:"n_gen"`
		AvgTS   float64 `json:"avg_ts"`
	}
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) == 0 {
		fmt.Fprintf(os.Stderr, "llama-bench: unexpected output: %v\n", err)
		return 0, 0
	}
	for _, r := range rows {
		if r.NGen > 0 {
			tg = r.AvgTS
		} else {
			pp = r.AvgTS
		}
	}
	return pp, tg
}

func intList(s, flagName string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			log.Fatalf("bad %s %q", flagName, s)
		}
		out = append(out, v)
	}
	return out
}

func floatList(s string) []float64 {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 0 {
			log.Fatalf("bad -temperatures %q", s)
		}
		out = append(out, v)
	}
	return out
}

var benchSampling engine.SamplerParams

// benchFlash is -flash: flash attention in the raw and runner contexts
// (and --flash-attention for the Tadpole server).
var benchFlash = engine.FlashAttentionOn

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
	case "smol135m":
		p := filepath.Join(os.TempDir(), "tadpole-bench-smol135m-q8_0.gguf")
		if _, err := os.Stat(p); err != nil {
			fmt.Fprintf(os.Stderr, "writing a random-weight SmolLM2-135M-shaped model (Q8_0) to %s …\n", p)
			if err := testmodels.WriteRandomLlama(p, testmodels.Smol135M, gguf.Q8_0, 1); err != nil {
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
		FlashAttn: benchFlash,
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
	return rawPromptWith(m, n, engine.ContextParams{Threads: threads, FlashAttn: benchFlash})
}

// rawPromptWith is rawPrompt on a context made with p (its size and
// batch set here: one sequence, the whole prompt in one Decode), the best
// of three.
func rawPromptWith(m *engine.Model, n int, p engine.ContextParams) float64 {
	p.NumCtx, p.NumBatch, p.NumSeqMax = n+8, n, 1
	ctx, err := m.NewContext(p)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	b, err := engine.NewBatch(n)
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

// rawGen is the engine's generation speed as llama-bench's tg measures
// it: one sequence, n decodes of one token each (no sampling), after a
// one-token prompt; the best of three.
func rawGen(m *engine.Model, n, threads int) float64 {
	ctx, err := m.NewContext(engine.ContextParams{Threads: threads, FlashAttn: benchFlash, NumCtx: n + 8, NumSeqMax: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	b, err := engine.NewBatch(1)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	tok := promptTokens(m, 1)[0]
	best := 0.0
	for rep := 0; rep < 3; rep++ {
		ctx.ClearMemory()
		t0 := time.Now()
		for i := 0; i <= n; i++ {
			if i == 1 {
				t0 = time.Now() // after the prompt
			}
			b.Clear()
			b.Add(tok, i, 0, true)
			if err := ctx.Decode(b); err != nil {
				log.Fatal(err)
			}
		}
		best = max(best, float64(n)/time.Since(t0).Seconds())
	}
	return best
}

// promptSweep prints the raw prompt speed over micro-batch sizes, flash
// attention on and off, and poll levels: the measurements behind the
// defaults.
func promptSweep(m *engine.Model, n, threads int) {
	fmt.Printf("prompt eval sweep (%d tokens, tok/s):\n\n| n_ubatch | flash on | flash off |\n|---|---|---|\n", n)
	for _, ub := range []int{64, 128, 256, 512} {
		if ub > n {
			continue
		}
		on := rawPromptWith(m, n, engine.ContextParams{Threads: threads, NumUBatch: ub, FlashAttn: engine.FlashAttentionOn})
		off := rawPromptWith(m, n, engine.ContextParams{Threads: threads, NumUBatch: ub, FlashAttn: engine.FlashAttentionOff})
		fmt.Printf("| %d | %.1f | %.1f |\n", ub, on, off)
	}
	fmt.Println()
}

// rawDecode is the ideal batched schedule the runner is measured
// against: all prompts in one llama_decode, then one decode per step with
// the next token of every sequence that has not ended (EOG or n tokens).
// It returns generated tokens per second of wall time, prompt included.
func rawDecode(m *engine.Model, seqs, n, nctx, threads int, sp engine.SamplerParams) (float64, int) {
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
		sp := sp
		sp.Seed += int64(s)
		samplers[s], _ = m.NewSampler(sp)
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
			t, err := samplers[s].Sample(ctx, idx[s])
			if err != nil {
				log.Fatal(err)
			}
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
// textPrompt is -prompt-text's tokens: every stream's prompt when set.
var textPrompt []engine.Token

func streamPrompt(m *engine.Model, s int) []engine.Token {
	if textPrompt != nil {
		return textPrompt
	}
	p := promptTokens(m, 8)
	return append([]engine.Token{p[0], engine.Token(100 + s)}, p[1:]...)
}

// runnerDecode is the same work through the runner: streams concurrent
// requests, generated tokens per second of wall time from submitting them
// to the last final event.
func runnerDecode(m *engine.Model, streams, slots, n, nctx, threads int, sp engine.SamplerParams) (float64, int) {
	r, err := runner.New(m, runner.Config{Parallel: slots, NumCtx: nctx, Threads: threads, FlashAttn: benchFlash})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	t0 := time.Now()
	for s := 0; s < streams; s++ {
		sp := sp
		sp.Seed += int64(s)
		stream, err := r.Generate(context.Background(), runner.Request{Prompt: streamPrompt(m, s), NumPredict: n, Sampling: sp})
		if err != nil {
			log.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			evs, err := stream.Collect(context.Background())
			if err != nil {
				log.Fatal(err)
			}
			for _, ev := range evs {
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
