package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// keyClient is an Ollama API client of ts sending key.
func keyClient(ts *testServer, key string) *client.Client {
	c, err := client.New(ts.URL, &http.Client{Transport: bearer{key}})
	if err != nil {
		panic(err)
	}
	return c
}

// bearer adds an API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// Model management needs an admin key: an inference key gets 403 (and
// changes nothing), no key 401; generation is open to both scopes.
func TestAdminScope(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"user-key", "admin-key admin"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	digest := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/api/copy", `{"source":"stories","destination":"copied"}`},
		{"DELETE", "/api/delete", `{"model":"stories"}`},
		{"POST", "/api/create", `{"model":"made","from":"stories"}`},
		{"POST", "/api/pull", `{"model":"127.0.0.1:1/x/y","stream":false}`},
		{"POST", "/api/push", `{"model":"stories","stream":false}`},
		{"POST", "/api/blobs/" + digest, `abc`},
		{"HEAD", "/api/blobs/" + digest, ``},
	} {
		what := tc.method + " " + tc.path
		if code, _, b := do(t, tc.method, ts.URL+tc.path, "", tc.body); code != 401 {
			t.Errorf("%s without a key: %d %s", what, code, b)
		}
		code, _, b := do(t, tc.method, ts.URL+tc.path, "user-key", tc.body)
		if code != 403 {
			t.Errorf("%s with an inference key: %d %s", what, code, b)
			continue
		}
		if tc.method != "HEAD" {
			checkShape(t, what, "ollama", 403, b, "")
			if !strings.Contains(string(b), "admin key") {
				t.Errorf("%s: %s", what, b)
			}
		}
	}
	// Nothing was copied, deleted or created.
	ctx := context.Background()
	list, err := keyClient(ts, "user-key").List(ctx)
	if err != nil || len(list.Models) != 1 || list.Models[0].Name != "stories:latest" {
		t.Fatalf("models after refused management: %+v %v", list, err)
	}
	// The Ollama API client with an inference key: generation works, a
	// copy is refused with the server's message.
	user := keyClient(ts, "user-key")
	if err := user.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once", Stream: ptr(false), Options: greedyOpts(2)}, func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
		t.Fatalf("generate with an inference key: %v", err)
	}
	var se *client.StatusError
	if err := user.Copy(ctx, &ollamaapi.CopyRequest{Source: "stories", Destination: "copied"}); !errors.As(err, &se) || se.StatusCode != 403 {
		t.Fatalf("copy with an inference key: %v", err)
	}
	// An admin key manages models (and generates).
	admin := keyClient(ts, "admin-key")
	if err := admin.Copy(ctx, &ollamaapi.CopyRequest{Source: "stories", Destination: "copied"}); err != nil {
		t.Fatalf("copy with an admin key: %v", err)
	}
	if err := admin.Delete(ctx, &ollamaapi.DeleteRequest{Model: "copied"}); err != nil {
		t.Fatalf("delete with an admin key: %v", err)
	}
	if err := admin.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once", Stream: ptr(false), Options: greedyOpts(2)}, func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
		t.Fatalf("generate with an admin key: %v", err)
	}
}

// With keys set, /metrics needs one (any scope); on its own listener
// (--metrics-host) it needs none and is gone from the API's.
func TestMetricsNeedKey(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"user-key"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	if code, _, b := do(t, "GET", ts.URL+"/metrics", "", ""); code != 401 {
		t.Fatalf("metrics without a key: %d %s", code, b)
	}
	if code, _, b := do(t, "GET", ts.URL+"/metrics", "user-key", ""); code != 200 || !strings.Contains(string(b), "tadpole_") {
		t.Fatalf("metrics with a key: %d %s", code, b)
	}

	srv := New(Config{ModelsDir: t.TempDir(), Sched: sched.Config{Threads: 1, FlashAttn: engine.FlashAttentionOn}, Auth: a, MetricsListener: true})
	api := serveForTest(t, srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeMetrics(ln)
	metricsURL := fmt.Sprintf("http://%s/metrics", ln.Addr())
	if code, _, b := do(t, "GET", metricsURL, "", ""); code != 200 || !strings.Contains(string(b), "tadpole_") {
		t.Fatalf("metrics on their own listener: %d %s", code, b)
	}
	if code, _, _ := do(t, "GET", api.URL+"/metrics", "user-key", ""); code != 404 {
		t.Fatalf("metrics still on the API listener: %d", code)
	}
	if code, _, _ := do(t, "GET", fmt.Sprintf("http://%s/api/tags", ln.Addr()), "user-key", ""); code != 404 {
		t.Fatalf("the API on the metrics listener: %d", code)
	}
	req, _ := http.NewRequest("GET", metricsURL, nil)
	req.Host = "attacker.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Fatalf("metrics listener for a foreign host: %v %v", resp, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if _, err := http.Get(metricsURL); err == nil {
		t.Fatal("the metrics listener outlived Shutdown")
	}
}
