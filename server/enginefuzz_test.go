package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/server/dialect"
)

// FuzzEngine drives the real engine through a real listening server with
// generated requests (see decodeFuzz): random option maps with the worst
// values, prompts from empty to far past the context, formats and JSON
// schemas, on every generation and embedding endpoint of every dialect,
// streamed and not, on the demo model, the bigram chat model, a GGUF v1
// file and a file that is not a model. The server runs in a child process
// (TestEngineFuzzChild) with a 256-token context, 2 slots and 1 thread.
//
// After every input: the server process is alive and GET / and GET
// /api/ps answer; the status is below 500 or a 503 (a full queue); a 4xx
// body is in the dialect's error shape. A crash fails with the request
// that caused it and the tail of the server's stderr, and the next input
// gets a fresh server.
//
// `make test` runs the seeds below; `make fuzz` runs it coverage-guided
// for FUZZTIME. The coverage the fuzzer sees is the generator's (the
// engine runs in the other process), so most of the search is the
// mutation of the request's shape and values.
func FuzzEngine(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	st := &fuzzState{dir: fuzzModelsDir(f)}
	f.Cleanup(func() {
		st.stop()
		f.Logf("FuzzEngine: %d inputs run in this process", st.runs.Load())
	})
	f.Fuzz(st.run)
}

// TestEngineFuzzRandom runs FuzzEngine's check on TADPOLE_ENGINEFUZZ_N
// random inputs (seeded by TADPOLE_ENGINEFUZZ_SEED, default the time; the
// seed is logged). It is the bounded run CI makes (`make fuzz-ci`): the
// same inputs as the fuzzer's, without the coverage instrumentation that
// would rebuild the native engine for `go test -fuzz`.
func TestEngineFuzzRandom(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TADPOLE_ENGINEFUZZ_N"))
	if n <= 0 {
		t.Skip("set TADPOLE_ENGINEFUZZ_N to run random engine fuzz inputs")
	}
	seed, err := strconv.ParseInt(os.Getenv("TADPOLE_ENGINEFUZZ_SEED"), 10, 64)
	if err != nil {
		seed = time.Now().UnixNano()
	}
	t.Logf("TestEngineFuzzRandom: %d inputs, TADPOLE_ENGINEFUZZ_SEED=%d", n, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	st := &fuzzState{dir: fuzzModelsDir(t)}
	defer st.stop()
	seeds := fuzzSeeds()
	for i := 0; i < n; i++ {
		// Half mutated seeds, half fresh random bytes.
		var data []byte
		if i%2 == 0 {
			data = append([]byte(nil), seeds[rng.IntN(len(seeds))]...)
			for k := rng.IntN(8); k >= 0 && len(data) > 0; k-- {
				data[rng.IntN(len(data))] = byte(rng.Uint32())
			}
		} else {
			data = make([]byte, 8+rng.IntN(120))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
		}
		if !t.Run(fmt.Sprint(i), func(t *testing.T) { st.run(t, data) }) {
			t.Fatalf("input %d failed (TADPOLE_ENGINEFUZZ_SEED=%d); its bytes: %q", i, seed, data)
		}
	}
	t.Logf("TestEngineFuzzRandom: %d inputs, 0 failures", st.runs.Load())
}

// fuzzState is the child server the inputs go to, started again after a
// crash.
type fuzzState struct {
	dir   string
	child *fuzzChild
	runs  atomic.Int64
}

func (st *fuzzState) stop() {
	if st.child != nil {
		st.child.stop()
	}
}

// run sends one input and checks the invariants.
func (st *fuzzState) run(t *testing.T, data []byte) {
	st.runs.Add(1)
	if st.child == nil || !st.child.alive() {
		st.stop()
		c, err := startFuzzChild(st.dir)
		if err != nil {
			t.Fatal(err)
		}
		st.child = c
	}
	child := st.child
	req := decodeFuzz(data)
	var status2 int
	var body2 []byte
	var err2 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if req.twice {
			status2, body2, err2 = fuzzSend(child.url, req)
		}
	}()
	start := time.Now()
	status, body, sendErr := fuzzSend(child.url, req)
	<-done
	fuzzLog(start, status, sendErr, req)
	if err := fuzzLiveness(child); err != nil {
		last := child.stderr.String()
		child.stop()
		st.child = nil
		t.Fatalf("%v\nrequest: %s\nstatus %d, send error %v\nserver stderr (tail):\n%s", err, req, status, sendErr, last)
	}
	t.Logf("%s -> %d %.300s", req, status, body)
	if sendErr != nil {
		return // cut off by the client's deadline, as a client gives up
	}
	if err := checkAnswer(req.path, status, body); err != nil {
		t.Fatalf("%v\nrequest: %s\nbody: %.2000s", err, req, body)
	}
	if req.twice && err2 == nil {
		if err := checkAnswer(req.path, status2, body2); err != nil {
			t.Fatalf("second copy: %v\nrequest: %s\nbody: %.2000s", err, req, body2)
		}
	}
}

// fuzzLog appends one line per input (time taken, status, request) to
// the file $TADPOLE_ENGINEFUZZ_LOG names, if any: a record of what the
// fuzzer sent and which inputs ran into the client's deadline.
func fuzzLog(start time.Time, status int, err error, r fuzzRequest) {
	name := os.Getenv("TADPOLE_ENGINEFUZZ_LOG")
	if name == "" {
		return
	}
	f, ferr := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if ferr != nil {
		return
	}
	defer f.Close()
	req := r.String()
	if len(req) > 400 {
		req = req[:400] + "…"
	}
	fmt.Fprintf(f, "%6.2fs %d %v %s\n", time.Since(start).Seconds(), status, err, req)
}

// fuzzLiveness: the process lives and answers. A process that died is
// waited for briefly so that its exit status is known.
func fuzzLiveness(c *fuzzChild) error {
	if !c.alive() {
		return fmt.Errorf("the server died: %v", c.err)
	}
	if err := c.responsive(30 * time.Second); err != nil {
		select {
		case <-c.done:
			return fmt.Errorf("the server died: %v", c.err)
		case <-time.After(time.Second):
		}
		return fmt.Errorf("the server does not answer: %w", err)
	}
	return nil
}

// fuzzSend sends the request and reads the answer, giving up after a few
// seconds (a request may generate without end, as num_predict -1 allows).
// An Anura job is then polled until it ends or the deadline passes.
func fuzzSend(base string, r fuzzRequest) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	status, body, err := fuzzDo(ctx, http.MethodPost, base+r.path, r.body)
	if err != nil || !r.job || status/100 != 2 {
		return status, body, err
	}
	var sub struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &sub); err != nil || sub.Data.ID == "" {
		return status, body, nil // checkAnswer reports the shape
	}
	for {
		st, b, err := fuzzDo(ctx, http.MethodGet, base+"/api/v1/jobs/"+sub.Data.ID, nil)
		if err != nil {
			// Cancel what is left so that it does not run into the next input.
			fuzzDo(context.Background(), http.MethodDelete, base+"/api/v1/jobs/"+sub.Data.ID, nil)
			return status, body, err
		}
		var job struct {
			Data struct {
				State string `json:"state"`
			} `json:"data"`
		}
		if st != http.StatusOK || json.Unmarshal(b, &job) != nil {
			return st, b, nil
		}
		switch job.Data.State {
		case "completed", "failed", "cancelled":
			return st, b, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func fuzzDo(ctx context.Context, method, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, b, err
}

// checkAnswer: no 5xx but 503, and a 4xx in the dialect's error shape.
func checkAnswer(path string, status int, body []byte) error {
	switch {
	case status >= 500 && status != http.StatusServiceUnavailable:
		return fmt.Errorf("status %d", status)
	case status < 400:
		return nil
	}
	d := dialect.Of(path)
	var ok bool
	switch d {
	case dialect.OpenAI:
		var e dialect.OpenAIError
		ok = json.Unmarshal(body, &e) == nil && e.Error.Message != "" && e.Error.Type != ""
	case dialect.Anura:
		var e dialect.AnuraError
		ok = json.Unmarshal(body, &e) == nil && e.Error != "" && e.Message != "" && e.Status == status
	case dialect.Anthropic:
		var e dialect.AnthropicError
		ok = json.Unmarshal(body, &e) == nil && e.Type == "error" && e.Error.Type == dialect.AnthropicType(status) && e.Error.Message != ""
	default:
		var e struct {
			Error string `json:"error"`
		}
		ok = json.Unmarshal(body, &e) == nil && e.Error != ""
	}
	if !ok {
		return errors.New("status " + fmt.Sprint(status) + ": the body is not in " + d.String() + "'s error shape")
	}
	return nil
}

// fuzzSeeds are the inputs `make test` runs: every endpoint streamed and
// not, the worst values of the options that reach the engine, and every
// crash the fuzzer found (see the regression list at the end).
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, ep := range fuzzEndpoints {
		for _, stream := range []bool{false, true} {
			seeds = append(seeds, fuzzSeed(ep.path, "stories", stream, 2, 0, 0, 0, 0))
		}
	}
	huge := int64(288230376151711800)
	seeds = append(seeds,
		fuzzSeed("/api/chat", "bigram", false, 2, 0, 1, 0, 1, "options.temperature", 0),
		fuzzSeed("/api/generate", "stories", true, 0, 0, 2, 1, 0, "options.num_ctx", 1, "options.num_keep", -1),
		fuzzSeed("/api/generate", "stories", false, 3, 200, 0, 0, 0, "options.num_ctx", 100, "options.num_predict", -2),
		fuzzSeed("/api/generate", "old", false, 2, 0, 0, 0, 0),
		fuzzSeed("/api/generate", "junk", false, 2, 0, 0, 0, 0),
		fuzzSeed("/api/embed", "bigram", false, 1, 0, 0, 0, 4),
		fuzzSeed("/v1/embeddings", "stories", false, 2, 0, 0, 0, 5),
		fuzzSeed("/v1/chat/completions", "stories", true, 2, 0, 3, 0, 2, "logit_bias", fuzzBias, "top_logprobs", 100000, "logprobs", true, "n", huge),
		fuzzSeed("/v1/chat/completions", "bigram", false, 2, 0, 6, 0, 0, "tools", fuzzBadTools, "stop", fuzzLongStop),
		fuzzSeed("/v1/completions", "stories", false, 4, 0, 0, 0, 0, "max_tokens", -1, "seed", 1e300, "logprobs", 100000),
		fuzzSeed("/api/v1/chat/completions", "stories", true, 2, 0, 0, 2, 0, "options.top_k", int64(1)<<32, "temperature", "x"),
		fuzzSeed("/api/generate", "stories", true, 2, 0, 0, 0, 0, "options.stop", fuzzStops, "options.repeat_last_n", -2, "options.mirostat", 2),
		fuzzSeed("/api/chat", "stories", false, 2, 0, 8, 0, 0),
		fuzzSeed("/v1/rerank", "reranker", false, 2, 0, 0, 0, 4, "top_n", huge),
		fuzzSeed("/api/rerank", "reranker", false, 5, 255, 0, 0, 1),
		fuzzSeed("/api/generate", "reranker", true, 2, 0, 0, 0, 0),
		fuzzSeed("/v1/embeddings", "reranker", false, 2, 0, 0, 0, 1),
		fuzzSeed("/v1/messages", "bigram", true, 2, 0, 0, 0, 0, "top_k", int64(1)<<32, "stop_sequences", fuzzStops),
		fuzzSeed("/v1/messages", "stories", false, 2, 0, 0, 0, 7, "thinking", map[string]any{"a": 1}),
		fuzzSeed("/v1/responses", "bigram", true, 2, 0, 2, 0, 1, "max_output_tokens", huge),
		fuzzSeed("/v1/responses", "stories", false, 4, 0, 0, 0, 0, "previous_response_id", "x"),
	)
	// Twice at once (flag bit 1): two slots, and two instances of one
	// model when num_ctx keys another window.
	for _, s := range [][]byte{
		fuzzSeed("/api/generate", "stories", true, 4, 0, 0, 0, 0, "options.num_ctx", 4096),
		fuzzSeed("/api/embed", "stories", false, 3, 140, 0, 0, 1, "options.num_ctx", 256),
		fuzzSeed("/v1/chat/completions", "bigram", false, 2, 0, 0, 1, 0),
	} {
		s[2] |= 2
		seeds = append(seeds, s)
	}
	// Crashes FuzzEngine found (kept as regression cases; see
	// /tmp/fuzz-findings.md of issue 19).
	seeds = append(seeds, fuzzRegressions()...)
	return seeds
}

// fuzzRegressions are the requests that took the server down.
func fuzzRegressions() [][]byte {
	huge := int64(288230376151711800)
	return [][]byte{
		// GGML_ASSERT(n_tokens_all <= cparams.n_batch): embedding context
		// smaller than the padded n_ctx the batch was sized for.
		fuzzSeed("/api/embed", "stories", false, 3, 140, 0, 0, 0, "options.num_ctx", 100),
		// num_ctx past uint32: the estimate wraps, n_ctx is truncated.
		fuzzSeed("/api/generate", "stories", false, 4, 0, 0, 0, 0, "options.num_ctx", huge),
		// num_batch past int32: llama_batch_init gets a truncated size.
		fuzzSeed("/api/chat", "stories", false, 2, 0, 0, 0, 0, "options.num_batch", huge),
		// num_thread 100000: ggml starts that many threads.
		fuzzSeed("/api/generate", "stories", false, 2, 0, 0, 0, 0, "options.num_thread", 100000),
	}
}
