package server

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// The prompt cache through a real server and an Ollama API client:
// a conversation whose slot another took comes back with its prefix
// restored (prompt_eval_count counts only what was prefilled) and the same
// greedy answer as a server without the cache; after a restart over the
// same data directory it is restored from disk; /metrics counts the hits.
func TestServerPromptCache(t *testing.T) {
	models, data := t.TempDir(), t.TempDir()
	if err := linkFile(testmodels.Testdata("stories260K.gguf"), filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	start := func(pc *runner.PromptCache) *testServer {
		srv := New(Config{ModelsDir: models, Sched: sched.Config{Parallel: 1, NumCtx: 512, KeepAlive: time.Minute,
			FlashAttn: engine.FlashAttentionOn, Threads: 1, PromptCache: pc}})
		return serveForTest(t, srv)
	}
	history := func(topic string) string {
		return strings.Repeat("Once upon a time there was a little "+topic+" who lived in a big house. ", 8)
	}
	ask := func(ts *testServer, prompt string) ollamaapi.GenerateResponse {
		t.Helper()
		var last ollamaapi.GenerateResponse
		err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "stories", Prompt: prompt, Raw: true, Stream: ptr(false),
			Options: map[string]any{"temperature": 0, "num_predict": 16}}, func(r ollamaapi.GenerateResponse) error { last = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		return last
	}
	a, b := history("cat"), history("dog")

	plain := start(nil)
	want := ask(plain, a)
	plain.srv.Shutdown(context.Background())

	dir := filepath.Join(data, "prompt-cache")
	ts := start(runner.NewPromptCache(1<<30, dir, 1<<30))
	ask(ts, a)
	ask(ts, b) // takes the only slot: a is saved
	got := ask(ts, a+" The end.")
	if got.PromptEvalCount > 16 {
		t.Errorf("returning conversation prefilled %d tokens (of %d): its prefix was not restored", got.PromptEvalCount, want.PromptEvalCount)
	}
	again := ask(ts, a)
	if again.Response != want.Response {
		t.Errorf("restored: %q, without the cache %q", again.Response, want.Response)
	}
	if m := metricsText(t, ts.URL); metricValue(m, "tadpole_prompt_cache_hits_total", `tier="ram"`) < 1 {
		t.Errorf("/metrics shows no RAM hit:\n%s", grepLines(m, "prompt_cache"))
	}
	ps, err := ts.Client.Ps(context.Background())
	if err != nil || len(ps.Models) != 1 {
		t.Fatalf("/api/ps: %+v %v", ps, err)
	}
	if raw := psRaw(t, ts.URL); !strings.Contains(raw, `"prompt_cache":{"ram_bytes":`) || strings.Contains(raw, `"ram_entries":0`) {
		t.Errorf("/api/ps does not show the prompt cache's entries: %s", raw)
	}
	ts.srv.Shutdown(context.Background()) // the slot and the RAM tier go to disk

	// A restart: a new cache over the same directory.
	ts = start(runner.NewPromptCache(1<<30, dir, 1<<30))
	got = ask(ts, a)
	if got.Response != want.Response || got.PromptEvalCount >= want.PromptEvalCount/2 {
		t.Errorf("after a restart: %q, %d tokens prefilled; want %q with the prefix restored from disk (%d tokens cold)", got.Response, got.PromptEvalCount, want.Response, want.PromptEvalCount)
	}
	if m := metricsText(t, ts.URL); metricValue(m, "tadpole_prompt_cache_hits_total", `tier="disk"`) < 1 {
		t.Errorf("/metrics shows no disk hit:\n%s", grepLines(m, "prompt_cache"))
	}
}

// psRaw is /api/ps's body.
func psRaw(t *testing.T, base string) string { return getBody(t, base+"/api/ps") }

// metricsText is /metrics' text.
func metricsText(t *testing.T, base string) string { return getBody(t, base+"/metrics") }

// getBody is the body of a GET of url.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
