package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// loraServer is startServer with the bigram model in the store as
// "base", and two adapter models created the way Ollama's clients create
// them (blob upload, then /api/create with FROM base and ADAPTER):
// "colors" and "counter". The three share base's weights file.
func loraServer(t *testing.T) *testServer {
	t.Helper()
	ts := startServer(t)
	ctx := context.Background()
	dir := t.TempDir()
	bp := filepath.Join(dir, "bigram.gguf")
	if err := testmodels.WriteBigram(bp); err != nil {
		t.Fatal(err)
	}
	digest, data := fileDigest(t, bp)
	if err := ts.Client.CreateBlob(ctx, digest, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if err := ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "base", Files: map[string]string{"bigram.gguf": digest}},
		func(ollamaapi.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for name, changes := range map[string]map[string]string{"colors": testmodels.AdapterColors, "counter": testmodels.AdapterCount} {
		p := filepath.Join(dir, name+".gguf")
		if err := testmodels.WriteBigramAdapter(p, name, changes); err != nil {
			t.Fatal(err)
		}
		digest, data := fileDigest(t, p)
		if err := ts.Client.CreateBlob(ctx, digest, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		err := ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: name, From: "base", Adapters: map[string]string{name + ".gguf": digest}},
			func(ollamaapi.ProgressResponse) error { return nil })
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	return ts
}

func chatText(t *testing.T, c *client.Client, model string, opts map[string]any) (string, error) {
	t.Helper()
	stream := false
	var out string
	err := c.Chat(context.Background(), &ollamaapi.ChatRequest{Model: model, Messages: []ollamaapi.Message{{Role: "user", Content: "Hi"}}, Options: opts, Stream: &stream},
		func(r ollamaapi.ChatResponse) error { out += r.Message.Content; return nil })
	return out, err
}

// TestLoRAModels: Ollama's way (issue 38). Models made with ADAPTER over
// the bigram model answer with their adapter, the base without, all at
// once, on one instance of the base (the weights loaded once); a request
// names adapters by name in options.lora (scale 0 = the base); bad
// values are 400s.
func TestLoRAModels(t *testing.T) {
	ts := loraServer(t)
	want := map[string]string{"base": testmodels.BigramAnswer, "colors": testmodels.AdapterColorsAnswer, "counter": testmodels.AdapterCountAnswer}
	var wg sync.WaitGroup
	for range 3 {
		for model, w := range want {
			wg.Go(func() {
				got, err := chatText(t, ts.Client, model, greedyOpts(40))
				if err != nil || got != w {
					t.Errorf("%s: %q, %v; want %q", model, got, err, w)
				}
			})
		}
	}
	wg.Wait()
	ps, err := ts.Client.Ps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Models) != 1 {
		t.Fatalf("%d instances loaded for one base and two adapters, want 1 (the weights once): %+v", len(ps.Models), ps.Models)
	}
	// /api/ps lists the instance's adapters, their memory counted.
	if ad := ps.Models[0].Tadpole.LoRAAdapters; len(ad) != 2 || ad[0].Bytes == 0 || ad[1].ID != 1 || ad[0].Scale != 0 {
		t.Errorf("/api/ps adapters: %+v", ad)
	}
	opts := func(lora any) map[string]any {
		o := greedyOpts(40)
		o["lora"] = lora
		return o
	}
	for _, c := range []struct {
		model string
		lora  any
		want  string
	}{
		{"base", []map[string]any{{"name": "colors", "scale": 1}}, testmodels.AdapterColorsAnswer},
		{"base", []map[string]any{{"name": "colors"}}, testmodels.AdapterColorsAnswer}, // scale defaults to 1
		{"colors", []map[string]any{{"name": "colors", "scale": 0}}, testmodels.BigramAnswer},
		{"colors", []map[string]any{{"name": "counter", "scale": 1}}, testmodels.AdapterColorsAndCountAnswer},
		{"base", []map[string]any{{"name": "colors", "scale": 0.25}}, testmodels.BigramAnswer},
		{"base", []map[string]any{}, testmodels.BigramAnswer},
	} {
		got, err := chatText(t, ts.Client, c.model, opts(c.lora))
		if err != nil || got != c.want {
			t.Errorf("%s with lora %v: %q, %v; want %q", c.model, c.lora, got, err, c.want)
		}
	}
	for _, c := range []struct {
		lora any
		want string
	}{
		{[]map[string]any{{"name": "colors", "scale": 1e9}}, "out of range"},
		{[]map[string]any{{"name": "stories"}}, "has no LoRA adapter"},
		{[]map[string]any{{"name": "nope"}}, "lora[0]"},
		{[]map[string]any{{"id": 99}}, "no LoRA adapter with id 99"},
		{[]map[string]any{{"id": 0, "name": "colors"}}, "both an id and a name"},
		{[]map[string]any{{"scale": 1}}, "names no adapter"},
		{"colors", "must be a list"},
		{make([]map[string]any, 17), "at most 16"},
	} {
		_, err := chatText(t, ts.Client, "base", opts(c.lora))
		var se client.StatusError
		if !asStatus(err, &se) || se.StatusCode != 400 || !strings.Contains(se.Message, c.want) {
			t.Errorf("lora %v: %v, want a 400 naming %q", c.lora, err, c.want)
		}
	}
}

// TestLoRAAdaptersEndpoint: llama-server's GET and POST /lora-adapters
// on a model's instance, and loading an adapter while serving.
func TestLoRAAdaptersEndpoint(t *testing.T) {
	ts := loraServer(t)
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	list := func(b []byte) []map[string]any {
		var l []map[string]any
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return l
	}
	if code, b := call("GET", "/lora-adapters?model=base", ""); code != 200 || len(list(b)) != 0 {
		t.Fatalf("before any adapter: %d %s", code, b)
	}
	// Hot load onto the loaded base.
	code, b := call("POST", "/lora-adapters/load", `{"model":"base","name":"colors"}`)
	if l := list(b); code != 200 || len(l) != 1 || l[0]["id"] != 0.0 || l[0]["scale"] != 0.0 {
		t.Fatalf("load: %d %s", code, b)
	}
	// Off by default: the base answers as the base.
	if got, err := chatText(t, ts.Client, "base", greedyOpts(40)); err != nil || got != testmodels.BigramAnswer {
		t.Fatalf("base after the load: %q %v", got, err)
	}
	// Global scale 1: requests that name no adapters get it.
	if code, b := call("POST", "/lora-adapters?model=base", `[{"id":0,"scale":1}]`); code != 200 || list(b)[0]["scale"] != 1.0 {
		t.Fatalf("set: %d %s", code, b)
	}
	if got, err := chatText(t, ts.Client, "base", greedyOpts(40)); err != nil || got != testmodels.AdapterColorsAnswer {
		t.Fatalf("base with the global scale: %q %v", got, err)
	}
	// A request's own list replaces the global scales.
	o := greedyOpts(40)
	o["lora"] = []any{}
	if got, err := chatText(t, ts.Client, "base", o); err != nil || got != testmodels.BigramAnswer {
		t.Fatalf("lora [] over the global scale: %q %v", got, err)
	}
	// An empty list turns them all off again.
	if code, b := call("POST", "/lora-adapters?model=base", `[]`); code != 200 || list(b)[0]["scale"] != 0.0 {
		t.Fatalf("reset: %d %s", code, b)
	}
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/lora-adapters", "", "model"},
		{"POST", "/lora-adapters?model=base", `[{"id":5,"scale":1}]`, "no LoRA adapter with id 5"},
		{"POST", "/lora-adapters?model=base", `[{"scale":1}]`, "id is required"},
		{"POST", "/lora-adapters?model=base", `[{"id":0,"scale":1e30}]`, "out of range"},
		{"POST", "/lora-adapters?model=base", `{"id":0}`, "list"},
		{"POST", "/lora-adapters/load", `{"model":"base","name":"stories"}`, "has no LoRA adapter"},
		{"POST", "/lora-adapters/load", `{"model":"base"}`, "required"},
	} {
		code, b := call(c.method, c.path, c.body)
		if code != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s %s: %d %s, want a 400 naming %q", c.method, c.path, c.body, code, b, c.want)
		}
	}
	if code, _ := call("GET", "/lora-adapters?model=nope", ""); code != 404 {
		t.Errorf("unknown model: %d", code)
	}
	if code, _ := call("DELETE", "/lora-adapters", ""); code != 405 {
		t.Errorf("DELETE: %d", code)
	}
}

// TestLoRADialects: the per-request "lora" field on OpenAI chat and
// completions (llama-server's), Anthropic messages and Responses (an
// extra body field), by name and by id, and a bad list in each dialect's
// error shape.
func TestLoRADialects(t *testing.T) {
	ts := loraServer(t)
	// Load colors onto the base so that it has id 0.
	resp := postJSON(t, ts.URL+"/lora-adapters/load", `{"model":"base","name":"colors"}`)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("load: %d", resp.StatusCode)
	}
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp := postJSON(t, ts.URL+path, body)
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	text := func(v any, path ...any) string {
		for _, p := range path {
			switch k := p.(type) {
			case string:
				m, _ := v.(map[string]any)
				v = m[k]
			case int:
				l, _ := v.([]any)
				if k >= len(l) {
					return ""
				}
				v = l[k]
			}
		}
		s, _ := v.(string)
		return s
	}
	const msgs = `"messages":[{"role":"user","content":"Hi"}]`
	for _, c := range []struct {
		name, path, body string
		get              []any
		want             string
	}{
		{"openai chat by name", "/v1/chat/completions", `{"model":"base",` + msgs + `,"temperature":0,"lora":[{"name":"colors","scale":1}]}`,
			[]any{"choices", 0, "message", "content"}, testmodels.AdapterColorsAnswer},
		{"openai chat by id", "/v1/chat/completions", `{"model":"base",` + msgs + `,"temperature":0,"lora":[{"id":0,"scale":1}]}`,
			[]any{"choices", 0, "message", "content"}, testmodels.AdapterColorsAnswer},
		{"openai chat, id at 0", "/v1/chat/completions", `{"model":"colors",` + msgs + `,"temperature":0,"lora":[{"id":0,"scale":0}]}`,
			[]any{"choices", 0, "message", "content"}, testmodels.BigramAnswer},
		{"openai completions", "/v1/completions", `{"model":"base","prompt":"Hello","temperature":0,"max_tokens":20,"lora":[{"name":"colors"}]}`,
			[]any{"choices", 0, "text"}, " from red green blue"},
		{"anthropic", "/v1/messages", `{"model":"base","max_tokens":40,` + msgs + `,"temperature":0,"lora":[{"name":"colors"}]}`,
			[]any{"content", 0, "text"}, testmodels.AdapterColorsAnswer},
		{"responses", "/v1/responses", `{"model":"base","input":"Hi","temperature":0,"store":false,"lora":[{"name":"colors"}]}`,
			[]any{"output", 0, "content", 0, "text"}, testmodels.AdapterColorsAnswer},
	} {
		code, out := post(c.path, c.body)
		if got := text(out, c.get...); code != 200 || got != c.want {
			t.Errorf("%s: %d %q, want %q (%v)", c.name, code, got, c.want, out)
		}
	}
	for _, c := range []struct{ name, path, body string }{
		{"openai", "/v1/chat/completions", `{"model":"base",` + msgs + `,"lora":[{"id":7}]}`},
		{"openai shape", "/v1/chat/completions", `{"model":"base",` + msgs + `,"lora":{"id":0}}`},
		{"anthropic", "/v1/messages", `{"model":"base","max_tokens":4,` + msgs + `,"lora":[{"name":"colors","scale":500}]}`},
		{"responses", "/v1/responses", `{"model":"base","input":"Hi","lora":[{"name":"stories"}]}`},
	} {
		code, out := post(c.path, c.body)
		if code != 400 || !strings.Contains(text(out, "error", "message"), "lora") {
			t.Errorf("%s: %d %v, want a 400 in the dialect's shape naming lora", c.name, code, out)
		}
	}
}
