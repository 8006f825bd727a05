package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

// httpServer is a server measured over HTTP: a Tadpole child process
// (bin/tadpole serve), a llama-server child process, or any
// OpenAI-compatible server already running at url.
type httpServer struct {
	name string
	url  string
	cmd  *exec.Cmd
	dir  string
	// metrics: the server exports tadpole_step_seconds (Tadpole), read
	// before and after each case for the per-phase breakdown.
	metrics bool
	failed  int // requests that failed in the current case
	// bin, args and env it was started with (restart)
	bin       string
	args, env []string
}

// serverConfig is what both servers are started with, so that they are
// measured on the same model, threads, slots and context.
type serverConfig struct {
	model    string
	threads  int
	parallel int
	ctx      int // per slot
	extra    []string
	// projector: served beside the model (Tadpole: bench.mmproj.gguf in
	// the scratch models directory); "" for none.
	projector string
	// draft: a draft model served as "draft" and named for "bench" with
	// --draft (Tadpole only); "" for none.
	draft string
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startTadpole runs `tadpole serve` on a loopback port with the model as
// "bench" in a scratch models directory.
func startTadpole(bin string, c serverConfig) *httpServer {
	dir, err := os.MkdirTemp("", "tadpole-bench")
	if err != nil {
		log.Fatal(err)
	}
	abs, _ := filepath.Abs(c.model)
	models := filepath.Join(dir, "models") // the job store goes to dir/data
	if err := os.Mkdir(models, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(models, "bench.gguf")); err != nil {
		log.Fatal(err)
	}
	if c.projector != "" {
		p, _ := filepath.Abs(c.projector)
		if err := os.Symlink(p, filepath.Join(models, "bench.mmproj.gguf")); err != nil {
			log.Fatal(err)
		}
	}
	if c.draft != "" {
		d, _ := filepath.Abs(c.draft)
		if err := os.Symlink(d, filepath.Join(models, "draft.gguf")); err != nil {
			log.Fatal(err)
		}
		c.extra = append(c.extra, "--draft", "bench=draft")
	}
	port := freePort()
	args := append([]string{"serve", "--host", fmt.Sprintf("127.0.0.1:%d", port), "--models", models,
		"--parallel", fmt.Sprint(c.parallel), "--threads", fmt.Sprint(c.threads),
		"--context-length", fmt.Sprint(c.ctx), "--keep-alive", "-1", "--log-level", "warn"}, c.extra...)
	s := &httpServer{name: "tadpole", url: fmt.Sprintf("http://127.0.0.1:%d", port), dir: dir, metrics: true}
	s.start(bin, args, nil)
	return s
}

// startLlamaServer runs llama.cpp's server the way the comparison needs
// it: same model, threads and slots, each slot with the same context. A
// release-style build (Ollama's lib/ollama) finds its ggml libraries
// beside the binary.
func startLlamaServer(bin string, c serverConfig) *httpServer {
	port := freePort()
	args := append([]string{"-m", c.model, "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"-t", fmt.Sprint(c.threads), "-np", fmt.Sprint(c.parallel), "-c", fmt.Sprint(c.ctx * c.parallel)}, c.extra...)
	env := []string{"LD_LIBRARY_PATH=" + filepath.Dir(bin) + ":" + os.Getenv("LD_LIBRARY_PATH")}
	s := &httpServer{name: "llama-server", url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	s.start(bin, args, env)
	return s
}

func (s *httpServer) start(bin string, args, env []string) {
	s.bin, s.args, s.env = bin, args, env
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the bench
	running = append(running, s)
	logf, err := os.CreateTemp("", "bench-"+s.name+"-*.log")
	if err != nil {
		log.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		fatal("start %s: %v", bin, err)
	}
	fmt.Fprintf(os.Stderr, "%s: %s %s (log %s)\n", s.name, bin, strings.Join(args, " "), logf.Name())
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := s.complete(map[string]any{"prompt": "a", "max_tokens": 1}); err == nil {
			return
		}
		if time.Now().After(deadline) || s.cmd.ProcessState != nil {
			fatal("%s did not answer within 2 minutes (see %s)", s.name, logf.Name())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// benchClient opens a connection per request: a server may close an idle
// keep-alive connection just as a request goes out on it (llama-server
// does), and a POST is not retried.
var benchClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// running are the servers started, stopped by fatal.
var running []*httpServer

// fatal stops the servers and exits with a message.
func fatal(format string, args ...any) {
	for _, s := range running {
		s.close()
	}
	log.Fatalf(format, args...)
}

func (s *httpServer) close() {
	s.stop()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// restart stops the server (SIGINT: it shuts down as an operator's stop
// would) and starts it again with the same arguments and files.
func (s *httpServer) restart() {
	s.stop()
	s.start(s.bin, s.args, s.env)
}

func (s *httpServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			s.cmd.Process.Kill()
			<-done
		}
	}
}

// complete sends one /v1/completions request (model "bench") and reads
// the whole answer: the generated token count (usage), the time to the
// first streamed text and the total time.
type result struct {
	tokens int
	ttft   time.Duration
	total  time.Duration
}

func (s *httpServer) complete(body map[string]any) (result, error) {
	body["model"] = "bench"
	b, _ := json.Marshal(body)
	t0 := time.Now()
	resp, err := benchClient.Post(s.url+"/v1/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return result{}, fmt.Errorf("%s: %s", resp.Status, msg)
	}
	var r result
	if stream, _ := body["stream"].(bool); !stream {
		var answer struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
			return result{}, err
		}
		r.total = time.Since(t0)
		r.ttft = r.total
		r.tokens = answer.Usage.CompletionTokens
		return r, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			return result{}, fmt.Errorf("bad SSE event %q: %v", line, err)
		}
		if r.ttft == 0 && len(chunk.Choices) > 0 && chunk.Choices[0].Text != "" {
			r.ttft = time.Since(t0)
		}
		if chunk.Usage != nil {
			r.tokens = chunk.Usage.CompletionTokens
		}
	}
	r.total = time.Since(t0)
	return r, sc.Err()
}

// httpCase is one row of the HTTP table.
type httpCase struct {
	streams     int
	stream      bool
	temperature float64
}

func (c httpCase) String() string {
	how := "not streamed"
	if c.stream {
		how = "streamed"
	}
	t := "greedy"
	if c.temperature > 0 {
		t = fmt.Sprintf("temperature %g", c.temperature)
	}
	return fmt.Sprintf("%s, %s, %d stream(s)", t, how, c.streams)
}

// run measures one case once: streams concurrent requests of n tokens
// each (token-array prompts that differ per stream, end-of-generation
// banned with logit_bias so that every request generates n tokens). It
// returns the aggregate rate: generated tokens per second of wall time.
func (s *httpServer) run(c httpCase, m *engine.Model, n int) float64 {
	bias := map[string]float64{}
	for t := range benchSampling.LogitBias {
		bias[fmt.Sprint(t)] = -100
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	t0 := time.Now()
	for i := 0; i < c.streams; i++ {
		body := map[string]any{
			"prompt": streamPrompt(m, i), "max_tokens": n, "temperature": c.temperature, "seed": 42 + i,
			"logit_bias": bias, "stream": c.stream,
		}
		if c.stream {
			body["stream_options"] = map[string]any{"include_usage": true}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.complete(body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// A peer may fail a request (llama-server's output
				// parser refuses some random-weight output): it
				// counts as no tokens, and the row says so.
				s.failed++
				fmt.Fprintf(os.Stderr, "%s: %s: %v\n", s.name, c, err)
				return
			}
			total += r.tokens
		}()
	}
	wg.Wait()
	return float64(total) / time.Since(t0).Seconds()
}

// ttft is the time to the first streamed token of a fresh prompt of
// promptLen tokens; salt makes the prompt differ from every other
// call's, so no cache helps.
func (s *httpServer) ttft(m *engine.Model, promptLen, salt int) time.Duration {
	p := promptTokens(m, promptLen)
	// Vary the second token: no slot shares more than BOS with it.
	p[1] = engine.Token(100 + salt%(m.VocabSize()-100))
	r, err := s.complete(map[string]any{"prompt": p, "max_tokens": 4, "temperature": 0, "stream": true})
	if err != nil {
		fatal("%s: ttft: %v", s.name, err)
	}
	return r.ttft
}

// phases reads Tadpole's tadpole_step_seconds sums and counts from
// /metrics.
func (s *httpServer) phases() map[string][2]float64 {
	if !s.metrics {
		return nil
	}
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string][2]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "go_memstats_mallocs_total "); ok {
			var f float64
			fmt.Sscan(v, &f)
			out["mallocs"] = [2]float64{f, 0}
			continue
		}
		var which int
		switch {
		case strings.HasPrefix(line, "tadpole_step_seconds_sum{"):
			which = 0
		case strings.HasPrefix(line, "tadpole_step_seconds_count{"):
			which = 1
		default:
			continue
		}
		_, rest, _ := strings.Cut(line, `phase="`)
		phase, rest, _ := strings.Cut(rest, `"`)
		_, val, _ := strings.Cut(rest, "} ")
		var v float64
		fmt.Sscan(val, &v)
		e := out[phase]
		e[which] = v
		out[phase] = e
	}
	return out
}

// phaseOrder is how the breakdown is printed: per step, then per token.
var phaseOrder = []string{"step", "batch", "decode", "prefill", "sample", "detokenize", "handoff", "deliver"}

// breakdown formats the mean time of each phase between two readings.
func breakdown(before, after map[string][2]float64) string {
	if before == nil || after == nil {
		return ""
	}
	var parts []string
	for _, p := range phaseOrder {
		sum := after[p][0] - before[p][0]
		n := after[p][1] - before[p][1]
		if n == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f µs×%.0f", p, sum/n*1e6, n))
	}
	if tokens := after["sample"][1] - before["sample"][1]; tokens > 0 {
		parts = append(parts, fmt.Sprintf("Go allocations %.1f per token", (after["mallocs"][0]-before["mallocs"][0])/tokens))
	}
	return strings.Join(parts, ", ")
}

// waitIdle waits (up to 2 minutes) until the server has no slot
// processing: Tadpole's /api/ps slots_busy, llama-server's GET /slots
// is_processing. A server that answers neither is waited for 5 s.
func (s *httpServer) waitIdle() {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		busy, ok := s.busy()
		if !ok {
			time.Sleep(5 * time.Second)
			return
		}
		if !busy {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitQuiet waits (up to a minute) until the servers' processes together
// use less than 5% of a core over half a second: a server still
// finishing a failed case's generations, or spinning its threads after
// one, would take a share of 2 cores from the next case.
func waitQuiet(servers []*httpServer) {
	cpu := func() time.Duration {
		var t time.Duration
		for _, s := range servers {
			t += processCPU(s.cmd)
		}
		return t
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		c0, t0 := cpu(), time.Now()
		time.Sleep(500 * time.Millisecond)
		if float64(cpu()-c0) < 0.05*float64(time.Since(t0)) {
			return
		}
	}
	fmt.Fprintln(os.Stderr, "bench: the servers were still busy after a minute; measuring anyway")
}

// processCPU is the CPU time a running child has used so far (user and
// system, from /proc; 0 where that is not readable).
func processCPU(cmd *exec.Cmd) time.Duration {
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	// Clock ticks: 100 a second on Linux.
	return time.Duration(u+st) * 10 * time.Millisecond
}

// busy reports whether a slot of the server is processing; ok is false
// when the server does not say.
func (s *httpServer) busy() (busy, ok bool) {
	resp, err := http.Get(s.url + "/slots")
	if err == nil && resp.StatusCode == http.StatusOK {
		defer resp.Body.Close()
		var slots []struct {
			IsProcessing bool `json:"is_processing"`
		}
		if json.NewDecoder(resp.Body).Decode(&slots) == nil {
			for _, sl := range slots {
				busy = busy || sl.IsProcessing
			}
			return busy, true
		}
		return false, false
	}
	if resp != nil {
		resp.Body.Close()
	}
	resp, err = http.Get(s.url + "/api/ps")
	if err != nil {
		return false, false
	}
	defer resp.Body.Close()
	var ps struct {
		Models []struct {
			Tadpole *struct {
				SlotsBusy int `json:"slots_busy"`
			} `json:"tadpole"`
		} `json:"models"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&ps) != nil {
		return false, false
	}
	for _, m := range ps.Models {
		if m.Tadpole != nil && m.Tadpole.SlotsBusy > 0 {
			busy = true
		}
	}
	return busy, true
}
