package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

const storiesContinuation = ", there was a little girl named Lily. She loved to play outside in the park."

type testServer struct {
	URL    string
	Client *client.Client
	srv    *Server
	stop   func() // shuts the server down before the test ends (once)
}

// startServer serves a models directory holding the demo model as
// "stories", the generated bigram chat model as "bigram", a GGUF v1 file
// and a file that is not GGUF, on a real loopback listener.
func startServer(t *testing.T) *testServer {
	t.Helper()
	return serveConfig(t, Config{ModelsDir: testModels(t, "stories", "bigram", "old", "junk"), Sched: testSched(4, 256)})
}

// testSched is the scheduler of the test servers: parallel slots of
// numCtx tokens, flash attention on, one thread, a minute's keep-alive.
func testSched(parallel, numCtx int) sched.Config {
	return sched.Config{Parallel: parallel, NumCtx: numCtx, KeepAlive: time.Minute, FlashAttn: engine.FlashAttentionOn, Threads: 1}
}

// testModels is a new models directory holding the named test models:
// "stories" (the demo model, stories260K), "bigram" (the generated
// bigram chat model), "script" (the scripted tool-calling model),
// "reranker", "vision" (the generated vision model with its projector
// beside it), "old" (a GGUF v1 file) and "junk" (a file that is not
// GGUF). "name=kind" serves a model of that kind as name ("vis=vision").
func testModels(t testing.TB, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		name, kind, ok := strings.Cut(n, "=")
		if !ok {
			kind = name
		}
		path := filepath.Join(dir, name+".gguf")
		var err error
		switch kind {
		case "stories":
			err = linkFile(testmodels.Testdata("stories260K.gguf"), path)
		case "old":
			err = linkFile(testmodels.Testdata("unsupported/tinyllamas-stories-260k-f32.gguf"), path)
		case "junk":
			err = os.WriteFile(path, []byte("not a model"), 0o644)
		case "bigram":
			err = testmodels.WriteBigram(path)
		case "script":
			err = testmodels.WriteScript(path)
		case "reranker":
			err = testmodels.WriteReranker(path)
		case "vision":
			err = testmodels.WriteVision(path, filepath.Join(dir, name+".mmproj.gguf"))
		default:
			t.Fatalf("testModels: no test model %q", kind)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// testJobs opens the job store cfg describes, in a new temporary
// directory unless cfg names a place.
func testJobs(t testing.TB, cfg jobs.Config) *jobs.Store {
	t.Helper()
	if cfg.Dir == "" && cfg.URL == "" {
		cfg.Dir = filepath.Join(t.TempDir(), "data")
	}
	st, err := jobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// serveConfig serves New(cfg) on a loopback port until the test ends.
func serveConfig(t *testing.T, cfg Config) *testServer {
	t.Helper()
	return serveForTest(t, New(cfg))
}

// serveForTest serves srv on a loopback port until the test ends.
func serveForTest(t *testing.T, srv *Server) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveListener(t, srv, ln)
}

// serveListener serves srv on ln until the test ends.
func serveListener(t *testing.T, srv *Server, ln net.Listener) *testServer {
	t.Helper()
	testkit.Full(t, "serves the real engine")
	go srv.Serve(ln)
	stop := sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	t.Cleanup(stop)
	base := "http://" + ln.Addr().String()
	c, err := client.New(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{URL: base, Client: c, srv: srv, stop: stop}
}

// b64Images encodes images for the "images" fields of Ollama's API, as
// base64 strings (what Ollama's own client sends for its []byte images).
func b64Images(images ...[]byte) []string {
	var out []string
	for _, b := range images {
		out = append(out, base64.StdEncoding.EncodeToString(b))
	}
	return out
}

// jsonOf is v as JSON, for the RawMessage fields of package ollamaapi (an
// embedding's input).
func jsonOf(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }

// linkFile makes dst a symbolic link to src's absolute path.
func linkFile(src, dst string) error {
	abs, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	return os.Symlink(abs, dst)
}

func greedyOpts(n int) map[string]any {
	return map[string]any{"temperature": 0, "num_predict": n}
}

func TestGenerateNonStreaming(t *testing.T) {
	ts := startServer(t)
	var got ollamaapi.GenerateResponse
	err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{
		Model: "stories", Prompt: "Once upon a time", Stream: ptr(false), Options: greedyOpts(30),
	}, func(r ollamaapi.GenerateResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Response, storiesContinuation) {
		t.Fatalf("response %q", got.Response)
	}
	if !got.Done || got.DoneReason != "length" || got.EvalCount != 30 || got.PromptEvalCount != 5 ||
		got.TotalDuration <= 0 || got.LoadDuration <= 0 || got.PromptEvalDuration <= 0 || got.EvalDuration <= 0 {
		t.Fatalf("final: %+v", got)
	}
	if len(got.Context) != 35 || got.Model != "stories" || got.CreatedAt.IsZero() {
		t.Fatalf("context %d tokens, model %q", len(got.Context), got.Model)
	}
	// The returned context continues the text where it stopped.
	var next ollamaapi.GenerateResponse
	err = ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{
		Model: "stories", Prompt: " She", Context: got.Context, Stream: ptr(false), Options: greedyOpts(5),
	}, func(r ollamaapi.GenerateResponse) error { next = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Only the new prompt tokens (and the last answer token, which was
	// never decoded) are evaluated: the rest is the slot's cached prefix.
	added := len(next.Context) - len(got.Context) - next.EvalCount
	if next.LoadDuration > next.TotalDuration || added < 1 || next.PromptEvalCount != added+1 || fmt.Sprint(next.Context[:35]) != fmt.Sprint(got.Context) {
		t.Fatalf("continuation: %+v (context %d)", next.Metrics, len(next.Context))
	}
}

func TestGenerateStreaming(t *testing.T) {
	ts := startServer(t)
	var pieces []string
	var last ollamaapi.GenerateResponse
	err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{
		Model: "stories", Prompt: "Once upon a time", Options: greedyOpts(30),
	}, func(r ollamaapi.GenerateResponse) error {
		if last.Done {
			t.Error("a line after done")
		}
		pieces = append(pieces, r.Response)
		last = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 20 {
		t.Fatalf("only %d lines", len(pieces))
	}
	if text := strings.Join(pieces, ""); !strings.HasPrefix(text, storiesContinuation) {
		t.Fatalf("streamed %q", text)
	}
	if !last.Done || last.DoneReason != "length" || last.EvalCount != 30 || last.EvalDuration <= 0 || last.TotalDuration <= 0 {
		t.Fatalf("last line %+v", last)
	}
	// The raw wire format: NDJSON, one object per line.
	resp, err := http.Post(ts.URL+"/api/generate", "application/json",
		strings.NewReader(`{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":5}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("content type %q", ct)
	}
	body, _ := io.ReadAll(resp.Body)
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
	}
	if !strings.Contains(lines[len(lines)-1], `"done":true`) || !strings.Contains(lines[len(lines)-1], `"done_reason":"length"`) {
		t.Fatalf("last line %s", lines[len(lines)-1])
	}
}

func TestGenerateStopStrings(t *testing.T) {
	ts := startServer(t)
	for _, stream := range []bool{false, true} {
		var text string
		var last ollamaapi.GenerateResponse
		err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{
			Model: "stories", Prompt: "Once upon a time", Stream: ptr(stream),
			Options: map[string]any{"temperature": 0, "num_predict": 40, "stop": []string{"tle gi"}},
		}, func(r ollamaapi.GenerateResponse) error { text += r.Response; last = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if text != ", there was a lit" || last.DoneReason != "stop" {
			t.Fatalf("stream=%v: %q (%s)", stream, text, last.DoneReason)
		}
	}
}

func TestGenerateChatTemplateModel(t *testing.T) {
	ts := startServer(t)
	var got ollamaapi.GenerateResponse
	err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{
		Model: "bigram", Prompt: "Hi", Stream: ptr(false), Options: greedyOpts(50),
	}, func(r ollamaapi.GenerateResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got.Response != testmodels.BigramAnswer || got.DoneReason != "stop" {
		t.Fatalf("%q (%s)", got.Response, got.DoneReason)
	}
	// raw skips the template: the counting prompt counts.
	err = ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{
		Model: "bigram", Prompt: testmodels.CountPrompt, Raw: true, Stream: ptr(false), Options: greedyOpts(50),
	}, func(r ollamaapi.GenerateResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got.Response != testmodels.CountAnswer {
		t.Fatalf("raw: %q", got.Response)
	}
}

func TestLoadOnlyAndUnload(t *testing.T) {
	ts := startServer(t)
	var got ollamaapi.GenerateResponse
	err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "stories"},
		func(r ollamaapi.GenerateResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !got.Done || got.DoneReason != "load" || len(ts.srv.sched.Loaded()) != 1 {
		t.Fatalf("load only: %+v, %d loaded", got, len(ts.srv.sched.Loaded()))
	}
	err = ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "stories", KeepAlive: &ollamaapi.Duration{Duration: 0}},
		func(r ollamaapi.GenerateResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got.DoneReason != "unload" || len(ts.srv.sched.Loaded()) != 0 {
		t.Fatalf("unload: %+v, %d loaded", got, len(ts.srv.sched.Loaded()))
	}
}

func TestBadInput(t *testing.T) {
	ts := startServer(t)
	for _, tc := range []struct {
		body string
		code int
		msg  string
	}{
		{`{"model":"stories","prompt":`, 400, "invalid JSON"},
		{``, 400, "missing request body"},
		{`[1,2]`, 400, ""},
		{`{"prompt":"hi"}`, 400, "model is required"},
		{`{"model":"nope","prompt":"hi"}`, 404, "not found"},
		{`{"model":"../../etc/passwd","prompt":"hi"}`, 400, "invalid model name"},
		{`{"model":"stories","prompt":"hi","options":{"temperature":"hot"}}`, 400, `"temperature"`},
		{`{"model":"stories","prompt":"hi","options":{"num_predict":1.5}}`, 400, `"num_predict"`},
		{`{"model":"stories","prompt":"hi","options":{"stop":[1]}}`, 400, `"stop"`},
		{`{"model":"stories","prompt":"hi","keep_alive":"forever"}`, 400, "keep_alive"},
		{`{"model":"stories","prompt":123}`, 400, "prompt"},
		{`{"model":"stories","prompt":"hi","images":["aGk="]}`, 400, "images"},
		{`{"model":"old","prompt":"hi"}`, 400, "GGUF v1"},
		{`{"model":"junk","prompt":"hi"}`, 400, "not a GGUF"},
	} {
		resp, err := http.Post(ts.URL+"/api/generate", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.code || e.Error == "" || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("%s: %d %q, want %d containing %q", tc.body, resp.StatusCode, e.Error, tc.code, tc.msg)
		}
	}
	// The client surfaces the error with its status.
	err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "nope", Prompt: "x"}, func(ollamaapi.GenerateResponse) error { return nil })
	var se client.StatusError
	if !asStatus(err, &se) || se.StatusCode != 404 {
		t.Fatalf("client error %v", err)
	}
	// Still serving.
	resp, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "Tadpole is running" {
		t.Fatalf("GET / = %q", b)
	}
	if len(ts.srv.sched.Loaded()) != 0 {
		t.Fatal("a failed load left an instance behind")
	}
}

// asStatus reports whether err is the server's error answer, and if so
// copies it into se.
func asStatus(err error, se *client.StatusError) bool {
	var e *client.StatusError
	if errors.As(err, &e) {
		*se = *e
		return true
	}
	return false
}

func TestRootAndVersion(t *testing.T) {
	ts := startServer(t)
	v, err := ts.Client.Version(context.Background())
	if err != nil || v == "" {
		t.Fatalf("version %q %v", v, err)
	}
	req, _ := http.NewRequest(http.MethodHead, ts.URL+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD / %v %v", resp, err)
	}
	if err := ts.Client.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledStreamFreesSlot(t *testing.T) {
	ts := startServer(t)
	for i := 0; i < 6; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		_ = ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Options: map[string]any{"num_predict": -1}},
			func(r ollamaapi.GenerateResponse) error {
				n++
				if n == 3 {
					cancel()
				}
				return nil
			})
		cancel()
	}
	testkit.Eventually(t, 5*time.Second, "the cancelled requests to free their slots", func() bool {
		busy := 0
		for _, in := range ts.srv.sched.Loaded() {
			busy += in.Runner.Busy()
		}
		return busy == 0
	})
}

func TestChat(t *testing.T) {
	ts := startServer(t)
	msgs := []ollamaapi.Message{{Role: "system", Content: "You are a test."}, {Role: "user", Content: "Hi"}}
	for _, stream := range []bool{false, true} {
		var content string
		var last ollamaapi.ChatResponse
		lines := 0
		err := ts.Client.Chat(context.Background(), &ollamaapi.ChatRequest{Model: "bigram", Messages: msgs, Stream: ptr(stream), Options: greedyOpts(50)},
			func(r ollamaapi.ChatResponse) error {
				lines++
				content += r.Message.Content
				last = r
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if content != testmodels.BigramAnswer || !last.Done || last.DoneReason != "stop" || last.Message.Role != "assistant" {
			t.Fatalf("stream=%v: %q %+v", stream, content, last)
		}
		if stream && lines < 3 || !stream && lines != 1 {
			t.Fatalf("stream=%v: %d lines", stream, lines)
		}
		if last.PromptEvalCount == 0 || last.EvalCount == 0 || last.EvalDuration <= 0 {
			t.Fatalf("metrics %+v", last.Metrics)
		}
	}
	// Multi-turn: the second turn reuses the first turn's prefix.
	chat := func(msgs []ollamaapi.Message, opts map[string]any) ollamaapi.ChatResponse {
		var got ollamaapi.ChatResponse
		if err := ts.Client.Chat(context.Background(), &ollamaapi.ChatRequest{Model: "bigram", Messages: msgs, Stream: ptr(false), Options: opts},
			func(r ollamaapi.ChatResponse) error { got = r; return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := chat(msgs, greedyOpts(50))
	turn2 := append(msgs, first.Message, ollamaapi.Message{Role: "user", Content: "Again"})
	second := chat(turn2, greedyOpts(50))
	// A window past the default context (256) is another instance, with a
	// cold cache; a narrower window shares the default instance.
	cold := chat(turn2, map[string]any{"temperature": 0, "num_predict": 50, "num_ctx": 300})
	if narrow := chat(turn2, map[string]any{"temperature": 0, "num_predict": 50, "num_ctx": 200}); narrow.PromptEvalCount > 2 || narrow.Message.Content != testmodels.BigramAnswer {
		t.Fatalf("num_ctx 200 on the default instance: %d prompt tokens evaluated, %q", narrow.PromptEvalCount, narrow.Message.Content)
	}
	if second.Message.Content != testmodels.BigramAnswer || cold.Message.Content != testmodels.BigramAnswer {
		t.Fatalf("second turn %q / %q", second.Message.Content, cold.Message.Content)
	}
	if second.PromptEvalCount >= cold.PromptEvalCount-5 {
		t.Fatalf("second turn evaluated %d prompt tokens, a cold cache %d", second.PromptEvalCount, cold.PromptEvalCount)
	}
	// A model without a chat template gets ChatML; stories still answers.
	var got ollamaapi.ChatResponse
	if err := ts.Client.Chat(context.Background(), &ollamaapi.ChatRequest{Model: "stories", Messages: []ollamaapi.Message{{Role: "user", Content: "Once upon a time"}}, Stream: ptr(false), Options: greedyOpts(8)},
		func(r ollamaapi.ChatResponse) error { got = r; return nil }); err != nil || got.EvalCount != 8 {
		t.Fatalf("stories chat: %v %+v", err, got)
	}
	// Load only.
	if err := ts.Client.Chat(context.Background(), &ollamaapi.ChatRequest{Model: "bigram"}, func(r ollamaapi.ChatResponse) error { got = r; return nil }); err != nil || got.DoneReason != "load" {
		t.Fatalf("load only: %v %+v", err, got)
	}
	// Bad roles and images are 400s.
	for _, body := range []string{
		`{"model":"bigram","messages":[{"role":"wizard","content":"hi"}]}`,
		`{"model":"bigram","messages":[{"role":"user","content":"hi","images":["aGk="]}]}`,
		`{"model":"bigram","messages":"hi"}`,
	} {
		resp, err := http.Post(ts.URL+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%s: %d", body, resp.StatusCode)
		}
	}
}

func TestEmbed(t *testing.T) {
	ts := startServer(t)
	resp, err := ts.Client.Embed(context.Background(), &ollamaapi.EmbedRequest{Model: "stories", Input: jsonOf([]string{"The cat sat.", "A dog ran."})})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Embeddings) != 2 || len(resp.Embeddings[0]) != 64 || resp.PromptEvalCount == 0 {
		t.Fatalf("%d embeddings, prompt_eval_count %d", len(resp.Embeddings), resp.PromptEvalCount)
	}
	norm := 0.0
	for _, v := range resp.Embeddings[0] {
		norm += float64(v) * float64(v)
	}
	if norm < 0.999 || norm > 1.001 {
		t.Fatalf("norm² %v", norm)
	}
	one, err := ts.Client.Embed(context.Background(), &ollamaapi.EmbedRequest{Model: "stories", Input: jsonOf("The cat sat."), Dimensions: 16})
	if err != nil || len(one.Embeddings) != 1 || len(one.Embeddings[0]) != 16 {
		t.Fatalf("dimensions: %v %+v", err, one)
	}
	legacy, err := ts.Client.Embeddings(context.Background(), &ollamaapi.EmbeddingRequest{Model: "stories", Prompt: "The cat sat."})
	if err != nil || len(legacy.Embedding) != 64 {
		t.Fatalf("legacy: %v %d", err, len(legacy.Embedding))
	}
	// The same text alone (legacy) and as one of two texts sharing a
	// decode (embed): the same embedding up to float rounding.
	for i, v := range legacy.Embedding {
		if d := v - float64(resp.Embeddings[0][i]); d > 1e-6 || d < -1e-6 {
			t.Fatalf("legacy and embed disagree at %d: %v vs %v", i, v, resp.Embeddings[0][i])
		}
	}
	r, _ := http.Post(ts.URL+"/api/embed", "application/json", strings.NewReader(`{"model":"stories","input":[1,2]}`))
	r.Body.Close()
	if r.StatusCode != 400 {
		t.Fatalf("numeric input: %d", r.StatusCode)
	}
}

func TestPs(t *testing.T) {
	ts := startServer(t)
	for _, m := range []string{"stories", "bigram"} {
		if err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: m, KeepAlive: &ollamaapi.Duration{Duration: time.Hour}}, func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := ts.Client.Ps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Models) != 2 || ps.Models[0].Name != "bigram:latest" || ps.Models[1].Name != "stories:latest" {
		t.Fatalf("ps: %+v", ps.Models)
	}
	for _, m := range ps.Models {
		if m.Size <= 0 || m.ContextLength != 256 || m.Details.Format != "gguf" || m.Details.Family != "llama" ||
			m.ExpiresAt.Before(time.Now().Add(50*time.Minute)) || m.ExpiresAt.After(time.Now().Add(61*time.Minute)) {
			t.Errorf("ps entry %+v", m)
		}
	}
	if ps.Models[1].Details.ParameterSize != "293K" || ps.Models[1].Details.QuantizationLevel != "F32" {
		t.Errorf("stories details %+v", ps.Models[1].Details)
	}
	// Tadpole's extras.
	resp, err := http.Get(ts.URL + "/api/ps")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Models []struct {
			Tadpole struct {
				Processor  string `json:"processor"`
				SlotsTotal int    `json:"slots_total"`
			} `json:"tadpole"`
		} `json:"models"`
	}
	json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if raw.Models[0].Tadpole.Processor != "100% CPU" || raw.Models[0].Tadpole.SlotsTotal != 4 {
		t.Fatalf("extras %+v", raw.Models[0].Tadpole)
	}
	// keep_alive 0 unloads.
	if err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "stories", KeepAlive: &ollamaapi.Duration{Duration: 0}}, func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if ps, _ := ts.Client.Ps(context.Background()); len(ps.Models) != 1 {
		t.Fatalf("after unload: %+v", ps.Models)
	}
}

func TestMetrics(t *testing.T) {
	ts := startServer(t)
	for i := 0; i < 3; i++ {
		if err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Stream: ptr(false), Options: greedyOpts(5)}, func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "nope", Prompt: "x"}, func(ollamaapi.GenerateResponse) error { return nil })
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Parse the exposition format: every sample line is name{labels} value.
	families := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		families[name] = true
	}
	for _, want := range []string{
		"tadpole_requests_total", "tadpole_tokens_total", "tadpole_generations_total",
		"tadpole_time_to_first_token_seconds_bucket", "tadpole_token_latency_seconds_bucket",
		"tadpole_queue_wait_seconds_bucket", "tadpole_model_load_seconds_bucket",
		"tadpole_models_loaded", "tadpole_slots_busy", "tadpole_slots", "tadpole_queue_depth",
		"go_goroutines", "process_resident_memory_bytes", "process_open_fds",
	} {
		if !families[want] {
			t.Errorf("metric %s missing", want)
		}
	}
	text := string(body)
	for _, want := range []string{
		`tadpole_requests_total{endpoint="/api/generate",model="stories",status="200"} 3`,
		`tadpole_requests_total{endpoint="/api/generate",model="nope",status="404"} 1`,
		`tadpole_tokens_total{direction="out",model="stories:latest"} 15`,
		`tadpole_models_loaded 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}
