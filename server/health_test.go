package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/server/auth"
)

// The probes need no key; /readyz waits for the preloaded model; a drain
// fails readiness, keeps liveness and /metrics, refuses new requests with
// a 503 in each dialect's shape, and returns once the request in flight
// has ended.
func TestProbesAndDrain(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := testModels(t, "stories")
	srv := New(Config{ModelsDir: dir, Auth: a, Preload: []string{"stories"},
		Sched: testSched(2, 256)})
	ts := serveForTest(t, srv)

	ready := func() (int, readiness) {
		t.Helper()
		code, _, b := do(t, "GET", ts.URL+"/readyz", "", "")
		var r readiness
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("/readyz: %d %s", code, b)
		}
		return code, r
	}
	if code, r := ready(); code != 503 || r.Status != "loading" {
		t.Fatalf("/readyz before the preload: %d %+v", code, r)
	}
	if code, _, b := do(t, "GET", ts.URL+"/healthz", "", ""); code != 200 || !strings.Contains(string(b), `"ok"`) {
		t.Fatalf("/healthz: %d %s", code, b)
	}
	if err := srv.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Without a key (or with a wrong one) the probe counts the loaded
	// models but does not name them; a key holder gets the names.
	{
		for _, key := range []string{"", "wrong"} {
			code, _, b := do(t, "GET", ts.URL+"/readyz", key, "")
			if code != 200 || strings.Contains(string(b), "stories") || !strings.Contains(string(b), `"loaded":1`) ||
				!strings.Contains(string(b), `"ready"`) {
				t.Fatalf("/readyz after the preload, key %q: %d %s", key, code, b)
			}
		}
		code, _, b := do(t, "GET", ts.URL+"/readyz", "k", "")
		var r readiness
		if err := json.Unmarshal(b, &r); err != nil || code != 200 || r.Status != "ready" || len(r.Models) != 1 || r.Models[0] != "stories:latest" || r.Loaded != 1 {
			t.Fatalf("/readyz after the preload, with the key: %d %s", code, b)
		}
	}

	// A stream of about a minute, in flight when the drain starts.
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "POST", ts.URL+"/v1/chat/completions", strings.NewReader(
		`{"model":"stories","stream":true,"temperature":0,"max_tokens":100000,"messages":[{"role":"user","content":"Once upon a time"}]}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if resp.StatusCode != 200 || !sc.Scan() {
		t.Fatalf("stream: %d", resp.StatusCode)
	}

	drained := make(chan error, 1)
	go func() { drained <- srv.Drain(context.Background()) }()
	testkit.Eventually(t, time.Minute, "the drain to start", srv.Draining)
	if code, r := ready(); code != 503 || r.Status != "draining" {
		t.Fatalf("/readyz while draining: %d %+v", code, r)
	}
	if code, _, _ := do(t, "GET", ts.URL+"/healthz", "", ""); code != 200 {
		t.Fatalf("/healthz while draining: %d", code)
	}
	if code, _, _ := do(t, "GET", ts.URL+"/metrics", "k", ""); code != 200 {
		t.Fatalf("/metrics while draining: %d", code)
	}
	chat := `{"model":"stories","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		path, body string
		shape      func(map[string]any) bool
	}{
		{"/api/generate", `{"model":"stories","prompt":"Once"}`, func(m map[string]any) bool {
			s, _ := m["error"].(string)
			return strings.Contains(s, "shutting down")
		}},
		{"/v1/chat/completions", chat, func(m map[string]any) bool {
			e, _ := m["error"].(map[string]any)
			s, _ := e["message"].(string)
			return strings.Contains(s, "shutting down") && e["type"] != nil
		}},
		{"/v1/messages", chat, func(m map[string]any) bool {
			e, _ := m["error"].(map[string]any)
			s, _ := e["message"].(string)
			return m["type"] == "error" && strings.Contains(s, "shutting down")
		}},
		{"/api/v1/chat/completions", chat, func(m map[string]any) bool {
			s, _ := m["message"].(string)
			return m["status"] == float64(503) && strings.Contains(s, "shutting down")
		}},
	} {
		code, h, b := do(t, "POST", ts.URL+tc.path, "k", tc.body)
		var m map[string]any
		json.Unmarshal(b, &m)
		if code != 503 || h.Get("Retry-After") == "" || !tc.shape(m) {
			t.Errorf("POST %s while draining: %d Retry-After %q %s", tc.path, code, h.Get("Retry-After"), b)
		}
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned (%v) while a stream was running", err)
	default:
	}
	cancel() // the client leaves: its request ends, nothing is in flight
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

// A drain whose context ends with a request running reports it.
func TestDrainTimeout(t *testing.T) {
	ts := startServer(t)
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "POST", ts.URL+"/api/generate", strings.NewReader(
		`{"model":"stories","prompt":"Once upon a time","options":{"num_predict":100000}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !bufio.NewScanner(resp.Body).Scan() {
		t.Fatal("no first line")
	}
	ctx, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer stop()
	if err := ts.srv.Drain(ctx); err == nil || !strings.Contains(err.Error(), "requests still running: 1") {
		t.Fatalf("Drain: %v", err)
	}
}
