package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// hugeCtx survives the options' float64 round trip, is not a power of two,
// and wraps the memory estimate around when multiplied by the slots.
const hugeCtx = 288230376151711800

// longPrompt is a prompt of several hundred tokens for the demo model.
var longPrompt = strings.Repeat("Once upon a time, there was a little girl named Lily. ", 30)

// postContract posts body and returns the status and the decoded body.
func postContract(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v (did the server die?)", body[:min(len(body), 120)], err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func alive(t *testing.T, ts *testServer) {
	t.Helper()
	resp, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatalf("server gone: %v", err)
	}
	resp.Body.Close()
}

// Issue 19's measured aborts, each against a real listening server: the
// server answers in the dialect's shape and keeps serving.
func TestEngineBoundInput(t *testing.T) {
	ts := startServer(t)
	prompt, _ := json.Marshal(longPrompt)
	for _, tc := range []struct {
		name, path, body string
		code             int
		msg              string
	}{
		// GGML_ASSERT(n_tokens_all <= n_batch) through the embedding context.
		{"embed num_ctx 100", "/api/embed", `{"model":"stories","input":` + string(prompt) + `,"options":{"num_ctx":100}}`, 200, ""},
		{"embed num_ctx 100, no truncation", "/api/embed", `{"model":"stories","input":` + string(prompt) + `,"truncate":false,"options":{"num_ctx":100}}`, 400, "more than the context of 100"},
		// The estimate wrapped around and n_ctx was truncated to uint32;
		// now capped at the trained context (issue 41), as Ollama does.
		{"num_ctx huge", "/api/generate", `{"model":"stories","prompt":` + string(prompt) + `,"stream":false,"options":{"num_ctx":288230376151711800,"num_predict":4}}`, 200, ""},
		{"num_ctx negative", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"num_ctx":-5}}`, 400, "num_ctx"},
		// Past the trained context: capped to it (issue 41, as Ollama).
		{"num_ctx past trained", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"num_ctx":4096,"num_predict":4}}`, 200, ""},
		// llama_batch_init got a truncated int32 while Go kept the length:
		// now a load-time option, the operator's; a request's is ignored.
		{"num_batch huge", "/api/chat", `{"model":"stories","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_batch":288230376151711800,"num_predict":4}}`, 200, ""},
		{"num_thread huge", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"num_thread":100000,"num_predict":4}}`, 200, ""},
		{"num_gpu, main_gpu, mlock, mmap", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"num_gpu":99999,"main_gpu":77,"use_mlock":true,"use_mmap":false,"num_predict":4}}`, 200, ""},
		// Per-request options, each against the limit behind it.
		{"repeat_last_n huge", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"repeat_last_n":2147483647}}`, 400, "repeat_last_n"},
		{"top_k past int32", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"top_k":4294967297}}`, 400, "top_k"},
		{"num_keep past the window", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"num_keep":100000}}`, 400, "num_keep"},
		{"num_predict past int32", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"num_predict":4294967296}}`, 400, "num_predict"},
		{"mirostat 3", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"mirostat":3}}`, 400, "mirostat"},
		{"too many stops", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"options":{"stop":[` + strings.Repeat(`"x",`, 64) + `"y"]}}`, 400, "stop"},
		{"context token past the vocabulary", "/api/generate", `{"model":"stories","prompt":"hi","stream":false,"context":[1,99999999]}`, 400, "vocabulary"},
	} {
		code, body := postContract(t, ts.URL+tc.path, tc.body)
		msg, _ := body["error"].(string)
		if code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %d %q, want %d containing %q", tc.name, code, msg, tc.code, tc.msg)
		}
		alive(t, ts)
	}
	// The OpenAI dialect answers in its own shape.
	for _, tc := range []struct{ body, param string }{
		{`{"model":"stories","prompt":"hi","logprobs":21}`, "logprobs"},
		{`{"model":"stories","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":1000}`, "top_logprobs"},
	} {
		path := "/v1/completions"
		if strings.Contains(tc.body, "messages") {
			path = "/v1/chat/completions"
		}
		code, body := postContract(t, ts.URL+path, tc.body)
		e, _ := body["error"].(map[string]any)
		if code != 400 || e == nil || !strings.Contains(fmt.Sprint(e["message"]), tc.param) {
			t.Errorf("%s: %d %v", tc.body, code, body)
		}
	}
	// Load-time options from requests keyed no new instance (the two
	// num_ctx past the trained context share one of the trained 2048
	// tokens beside the default one), and ggml made no thousands of
	// threads.
	loaded := ts.srv.sched.Loaded()
	if len(loaded) != 2 || max(loaded[0].NumCtx, loaded[1].NumCtx) != 2048 {
		t.Fatalf("%d instances after requests with load-time options", len(loaded))
	}
	if th := threads(t); th > 200 {
		t.Fatalf("%d threads", th)
	}
}

// 100 concurrent requests, each with its own num_thread and num_ctx
// (issue 19: 103 instances and 2,248 threads; 200 instances of one model).
func TestLoadOptionsDoNotKeyInstances(t *testing.T) {
	ts := startServer(t) // default context 256
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 1; i <= 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once", Options: map[string]any{
				"num_thread": i, "num_ctx": 16 + i*2, "num_batch": i, "num_predict": 2, "temperature": 0,
			}}
			if err := ts.Client.Generate(context.Background(), req, func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(ts.srv.sched.Loaded()); n != 1 {
		t.Fatalf("%d instances", n)
	}
	if th := threads(t); th > 200 {
		t.Fatalf("%d threads", th)
	}
}

// A window narrower than the instance's context gives the answer of an
// instance loaded with exactly that context: the prompt is cut to the
// window's size and generation shifts at its end.
func TestNumCtxWindowMatchesOwnInstance(t *testing.T) {
	ts := startServer(t) // instance context 256
	narrow := newServerWithCtx(t, 128)
	req := func(url string) (string, int) {
		code, body := postContract(t, url+"/api/generate", `{"model":"stories","prompt":"`+strings.Repeat("Once upon a time. ", 20)+`","stream":false,"options":{"num_ctx":128,"temperature":0,"num_predict":80}}`)
		if code != 200 {
			t.Fatalf("%d %v", code, body)
		}
		return body["response"].(string), int(body["prompt_eval_count"].(float64))
	}
	a, na := req(ts.URL)
	b, nb := req(narrow.URL)
	if a != b || na != nb {
		t.Fatalf("window 128 on a 256 instance: %q (%d prompt tokens)\ninstance of 128: %q (%d)", a, na, b, nb)
	}
}

// A Modelfile context (the operator's) reaches the embedding path too:
// llama.cpp pads n_ctx to 256 but keeps n_batch at 100.
func TestEmbedSmallContextInstance(t *testing.T) {
	ts := newServerWithCtx(t, 100)
	resp, err := ts.Client.Embed(context.Background(), &ollamaapi.EmbedRequest{Model: "stories", Input: jsonOf(longPrompt)})
	if err != nil || len(resp.Embeddings) != 1 || resp.PromptEvalCount != 100 {
		t.Fatalf("%v %+v", err, resp)
	}
}

func newServerWithCtx(t *testing.T, nctx int) *testServer {
	t.Helper()
	return serveConfig(t, Config{ModelsDir: testModels(t, "stories"), Sched: testSched(2, nctx)})
}

// threads is this process's OS thread count, from /proc (Linux, where
// the server and its CI run).
func threads(t *testing.T) int {
	if runtime.GOOS != "linux" {
		t.Skipf("thread counts are read from /proc, which %s does not have", runtime.GOOS)
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("read the thread count: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("Threads line %q: %v", l, err)
			}
			return n
		}
	}
	t.Fatal("/proc/self/status has no Threads line")
	return 0
}

// A Modelfile cannot store a load-time value every request to the model
// would fail on (issue 19: "PARAMETER num_ctx 3000 exposes every user").
func TestCreateRefusesEngineBoundParameters(t *testing.T) {
	ts := startServer(t)
	for _, params := range []map[string]any{
		{"num_thread": 100000}, {"num_ctx": float64(1 << 40)}, {"num_batch": float64(1 << 40)}, {"num_gpu": -7},
	} {
		err := ts.Client.Create(context.Background(), &ollamaapi.CreateRequest{Model: "bad", From: "stories", Parameters: params}, func(ollamaapi.ProgressResponse) error { return nil })
		var se client.StatusError
		if !asStatus(err, &se) || se.StatusCode != 400 || !strings.Contains(se.Message, "out of range") {
			t.Errorf("%v: %v", params, err)
		}
	}
	if _, err := ts.Client.Show(context.Background(), &ollamaapi.ShowRequest{Model: "bad"}); err == nil {
		t.Fatal("a refused model was created")
	}
}

// Pushing a model the store holds only as a bare .gguf (no manifest) is
// the client's 404, not a 500.
func TestPushBareGGUF(t *testing.T) {
	ts := startServer(t)
	err := ts.Client.Push(context.Background(), &ollamaapi.PullRequest{Model: "stories", Insecure: true, Stream: ptr(false)}, func(ollamaapi.ProgressResponse) error { return nil })
	var se client.StatusError
	if !asStatus(err, &se) || se.StatusCode != 404 || !strings.Contains(se.Message, "manifest") {
		t.Fatalf("push of a bare GGUF: %v", err)
	}
}
