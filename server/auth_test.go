package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/client"
)

// checkShape checks an error answer's body against its dialect's shape.
func checkShape(t *testing.T, what, dialect string, code int, body []byte, openAICode string) {
	t.Helper()
	switch dialect {
	case "ollama":
		var e map[string]any
		if json.Unmarshal(body, &e) != nil || len(e) != 1 || e["error"] == "" {
			t.Errorf("%s: not Ollama's shape: %s", what, body)
		}
	case "openai":
		var e struct {
			Error map[string]any `json:"error"`
		}
		json.Unmarshal(body, &e)
		if e.Error["message"] == nil || e.Error["type"] == nil || e.Error["code"] != openAICode {
			t.Errorf("%s: not OpenAI's shape with code %s: %s", what, openAICode, body)
		}
		if _, ok := e.Error["param"]; !ok {
			t.Errorf("%s: no param: %s", what, body)
		}
	case "anura":
		var e struct {
			Error, Message string
			Status         int
		}
		if json.Unmarshal(body, &e) != nil || e.Error == "" || e.Message != e.Error || e.Status != code {
			t.Errorf("%s: not Anura's shape: %s", what, body)
		}
	}
}

func TestAuthEveryDialect(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"right-key", auth.Hash("hashed-key")}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	chat := `{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":3}`
	for _, tc := range []struct {
		dialect, method, path, body string
		ok                          int
	}{
		{"ollama", "GET", "/api/tags", "", 200},
		{"ollama", "POST", "/api/generate", `{"model":"stories","prompt":"Once","stream":false,"options":{"num_predict":3}}`, 200},
		{"ollama", "POST", "/api/chat", `{"model":"stories","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":3}}`, 200},
		{"ollama", "GET", "/api/ps", "", 200},
		{"ollama", "GET", "/api/nothing", "", 404},
		{"openai", "GET", "/v1/models", "", 200},
		{"openai", "POST", "/v1/chat/completions", chat, 200},
		{"openai", "POST", "/api/chat/completions", chat, 200},
		{"anura", "GET", "/api/v1/models", "", 200},
		{"anura", "POST", "/api/v1/cowsay", `{"message":"moo"}`, 202},
		{"anura", "GET", "/api/v1/jobs", "", 200},
		{"anura", "POST", "/api/v1/chat/completions", chat, 200},
	} {
		for _, key := range []string{"", "wrong-key", "right-key", "hashed-key", "sha256:" + strings.TrimPrefix(auth.Hash("hashed-key"), "sha256:")} {
			what := fmt.Sprintf("%s %s with key %q", tc.method, tc.path, key)
			code, h, b := do(t, tc.method, ts.URL+tc.path, key, tc.body)
			if key == "right-key" || key == "hashed-key" {
				if code != tc.ok {
					t.Errorf("%s: %d %s", what, code, b)
				}
				continue
			}
			// No key, a wrong key, and the hash itself are refused.
			if code != 401 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Errorf("%s: %d %s", what, code, b)
				continue
			}
			checkShape(t, what, tc.dialect, 401, b, "invalid_api_key")
			if strings.Contains(string(b), key) && key != "" {
				t.Errorf("%s: the answer repeats the key: %s", what, b)
			}
		}
	}
	// The liveness and version routes need no key.
	for _, p := range []string{"/", "/api/version"} {
		if code, _, b := do(t, "GET", ts.URL+p, "", ""); code != 200 {
			t.Errorf("GET %s: %d %s", p, code, b)
		}
	}
	if code, _, _ := do(t, "HEAD", ts.URL+"/", "", ""); code != 200 {
		t.Errorf("HEAD /: %d", code)
	}
	if code, _, _ := do(t, "POST", ts.URL+"/api/version", "", "{}"); code != 401 {
		t.Errorf("POST /api/version: %d", code)
	}
	// X-API-Key (older Anura clients) works too.
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/models", nil)
	req.Header.Set("X-API-Key", "right-key")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("X-API-Key: %v %v", resp, err)
	}

	// Usage per key: requests and tokens, under the key's id.
	snap := a.Usage().Snapshot()
	if len(snap) != 2 {
		t.Fatalf("usage %+v", snap)
	}
	for _, u := range snap {
		if len(u.Key) != 12 || u.Requests < 12 || u.TokensIn == 0 || u.TokensOut == 0 {
			t.Errorf("usage %+v", u)
		}
	}

	// Jobs belong to the key that submitted them.
	j := submitJob(t, ts, "right-key", "/api/v1/cowsay", `{"message":"mine"}`)
	if code, _, _ := do(t, "GET", ts.URL+"/api/v1/jobs/"+j.ID, "hashed-key", ""); code != 404 {
		t.Errorf("another key's job: %d", code)
	}
	if code, _, _ := do(t, "DELETE", ts.URL+"/api/v1/jobs/"+j.ID, "hashed-key", ""); code != 404 {
		t.Errorf("cancel another key's job: %d", code)
	}
	_, _, b := do(t, "GET", ts.URL+"/api/v1/jobs?type=cowsay", "hashed-key", "")
	if list, _ := envelopeOf[struct{ Jobs []anuraJob }](t, b); len(list.Jobs) != 1 {
		t.Errorf("hashed-key sees %d cowsay jobs, want its own 1: %s", len(list.Jobs), b)
	}
	if got := waitJob(t, ts, "right-key", j.ID); got.Status != 2 {
		t.Errorf("own job: %+v", got)
	}
}

func TestRateLimit(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"k", "other"}, Rate: 3, Per: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	for _, tc := range []struct{ dialect, path string }{
		{"ollama", "/api/tags"}, {"openai", "/v1/models"}, {"anura", "/api/v1/models"},
	} {
		// Let the bucket fill again.
		time.Sleep(2100 * time.Millisecond)
		for i := range 3 {
			if code, _, b := do(t, "GET", ts.URL+tc.path, "k", ""); code != 200 {
				t.Fatalf("%s request %d: %d %s", tc.path, i, code, b)
			}
		}
		code, h, b := do(t, "GET", ts.URL+tc.path, "k", "")
		retry, _ := strconv.Atoi(h.Get("Retry-After"))
		if code != 429 || retry < 1 || retry > 2 {
			t.Fatalf("%s over the limit: %d (Retry-After %q) %s", tc.path, code, h.Get("Retry-After"), b)
		}
		checkShape(t, tc.path+" over the limit", tc.dialect, 429, b, "rate_limit_exceeded")
		// Another key has its own limit.
		if code, _, _ := do(t, "GET", ts.URL+tc.path, "other", ""); code != 200 {
			t.Fatalf("other key: %d", code)
		}
		// It recovers after Retry-After.
		time.Sleep(time.Duration(retry) * time.Second)
		if code, _, b := do(t, "GET", ts.URL+tc.path, "k", ""); code != 200 {
			t.Fatalf("%s after Retry-After: %d %s", tc.path, code, b)
		}
	}
	var limited int64
	for _, u := range a.Usage().Snapshot() {
		limited += u.RateLimited
	}
	if limited != 3 {
		t.Fatalf("rate limited %d times, want 3", limited)
	}
}

func TestMaxStreams(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"k"}, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	// A generation that runs until the client goes away holds the stream.
	req, _ := http.NewRequest("POST", ts.URL+"/api/generate", strings.NewReader(`{"model":"stories","prompt":"Once upon a time","options":{"num_predict":-1}}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first stream: %v %v", resp, err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	code, h, b := do(t, "POST", ts.URL+"/v1/chat/completions", "k", `{"model":"stories","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	if code != 429 || h.Get("Retry-After") == "" {
		t.Fatalf("second stream: %d %s", code, b)
	}
	checkShape(t, "second stream", "openai", 429, b, "rate_limit_exceeded")
	// Every door is refused by the same check in infer, each in its own
	// shape: Anura's chat before its event stream starts, embeddings too.
	for _, tc := range []struct{ dialect, path, body string }{
		{"anura", "/api/v1/chat/completions", `{"model":"stories","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`},
		{"ollama", "/api/chat", `{"model":"stories","messages":[{"role":"user","content":"hi"}],"stream":false}`},
		{"openai", "/v1/embeddings", `{"model":"stories","input":"hi"}`},
		{"ollama", "/api/embed", `{"model":"stories","input":"hi"}`},
	} {
		code, h, b := do(t, "POST", ts.URL+tc.path, "k", tc.body)
		if code != 429 || h.Get("Retry-After") == "" || strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
			t.Errorf("%s while streaming: %d %q %s", tc.path, code, h.Get("Content-Type"), b)
			continue
		}
		checkShape(t, tc.path, tc.dialect, 429, b, "rate_limit_exceeded")
	}
	// Requests that take no model are not bounded.
	if code, _, b := do(t, "POST", ts.URL+"/api/show", "k", `{"model":"stories"}`); code != 200 {
		t.Fatalf("/api/show while streaming: %d %s", code, b)
	}
	// GETs are not streams.
	if code, _, _ := do(t, "GET", ts.URL+"/api/tags", "k", ""); code != 200 {
		t.Fatalf("GET while streaming: %d", code)
	}
	resp.Body.Close()
	testkit.Eventually(t, 30*time.Second, "the place of the ended stream to be free", func() bool {
		code, _, b = do(t, "POST", ts.URL+"/api/v1/chat/completions", "k", `{"model":"stories","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
		if code != 200 && code != 429 {
			t.Fatalf("after the first stream ended: %d %s", code, b)
		}
		return code == 200
	})
	// A request is one place however many generations it runs.
	code, _, b = do(t, "POST", ts.URL+"/v1/chat/completions", "k", `{"model":"stories","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"n":3}`)
	if code != 200 {
		t.Fatalf("n=3 with one place: %d %s", code, b)
	}
	var limited int64
	for _, u := range a.Usage().Snapshot() {
		limited += u.RateLimited
	}
	if limited < 5 {
		t.Errorf("rate limited %d times, want at least 5", limited)
	}
}

func TestBodyLimit(t *testing.T) {
	ts := startAPIServer(t, apiOptions{maxBody: 1024})
	big := `{"model":"stories","prompt":"` + strings.Repeat("a", 2048) + `","messages":[{"role":"user","content":"hi"}],"message":"moo"}`
	for _, tc := range []struct{ dialect, path string }{
		{"ollama", "/api/generate"}, {"ollama", "/api/chat"}, {"openai", "/v1/chat/completions"},
		{"anura", "/api/v1/cowsay"}, {"anura", "/api/v1/ollama"}, {"anura", "/api/v1/chat/completions"},
	} {
		for _, chunked := range []bool{false, true} {
			var body io.Reader = strings.NewReader(big)
			if chunked {
				body = io.MultiReader(strings.NewReader(big)) // no length: sent chunked
			}
			req, _ := http.NewRequest("POST", ts.URL+tc.path, body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			what := fmt.Sprintf("%s (chunked %v)", tc.path, chunked)
			if resp.StatusCode != 413 {
				t.Errorf("%s: %d %s", what, resp.StatusCode, b)
				continue
			}
			checkShape(t, what, tc.dialect, 413, b, "request_too_large")
		}
	}
	// Under the limit is fine.
	if code, _, b := do(t, "POST", ts.URL+"/api/v1/cowsay", "", `{"message":"moo"}`); code != 202 {
		t.Fatalf("small body: %d %s", code, b)
	}
}

// Per-key usage reaches /metrics under the key's id, never the key; the
// command-line client sends TADPOLE_API_KEY.
func TestKeyUsageMetricsAndClientKey(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"usage-key"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	code, _, _ := do(t, "POST", ts.URL+"/api/generate", "usage-key", `{"model":"stories","prompt":"Once","stream":false,"options":{"num_predict":3}}`)
	if code != 200 {
		t.Fatalf("generate: %d", code)
	}
	code, _, body := do(t, "GET", ts.URL+"/metrics", "usage-key", "")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	text := string(body)
	if strings.Contains(text, "usage-key") {
		t.Fatal("a key appears in /metrics")
	}
	for _, want := range []string{"tadpole_key_requests_total{key=", `direction="out",key=`, "tadpole_key_rate_limited_total{key="} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	c, err := client.New(ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(context.Background()); err == nil {
		t.Fatal("the client without a key was let in")
	}
	t.Setenv(client.APIKeyEnv, "usage-key")
	t.Setenv(client.HostEnv, ts.URL)
	c, err = client.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(context.Background()); err != nil {
		t.Fatalf("the client with TADPOLE_API_KEY: %v", err)
	}
}
