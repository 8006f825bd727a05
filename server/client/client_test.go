package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

func TestParseHost(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", "http://127.0.0.1:11434"},
		{"127.0.0.1:11434", "http://127.0.0.1:11434"},
		{"localhost", "http://localhost:11434"},
		{":8080", "http://127.0.0.1:8080"},
		{"0.0.0.0:9000", "http://0.0.0.0:9000"},
		{"[::1]:9000", "http://[::1]:9000"},
		{"::1", "http://[::1]:11434"},
		{"http://example.com", "http://example.com:80"},
		{"https://example.com", "https://example.com:443"},
		{"https://example.com:8443/tadpole/", "https://example.com:8443/tadpole"},
		{"  box:1234  ", "http://box:1234"},
	} {
		u, err := ParseHost(tc.in)
		if err != nil {
			t.Errorf("ParseHost(%q): %v", tc.in, err)
			continue
		}
		if u.String() != tc.want {
			t.Errorf("ParseHost(%q) = %s, want %s", tc.in, u, tc.want)
		}
	}
	for _, bad := range []string{"ftp://x", "host:0", "host:99999", "host:port"} {
		if _, err := ParseHost(bad); err == nil {
			t.Errorf("ParseHost(%q) accepted", bad)
		}
	}
}

func TestConnectError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := New(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Version(context.Background())
	var ce *ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want a ConnectError", err, err)
	}
	want := "could not connect to a running Tadpole server at http://" + addr + "; start one with `tadpole serve`"
	if err.Error() != want {
		t.Fatalf("message %q", err)
	}
}

// fakeServer answers each path with a fixed status and body.
func fakeServer(t *testing.T, routes map[string]func(w http.ResponseWriter, r *http.Request)) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := routes[r.Method+" "+r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"no route %s %s"}`, r.Method, r.URL.Path)
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestErrorsAndStreams(t *testing.T) {
	c := fakeServer(t, map[string]func(http.ResponseWriter, *http.Request){
		"POST /api/show": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"model \"nope:latest\" not found"}`)
		},
		"POST /api/copy": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "upstream down")
		},
		"POST /api/pull": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"status":"pulling manifest"}`+"\n")
			io.WriteString(w, `{"status":"pulling abc","digest":"sha256:abc","total":10,"completed":5}`+"\n")
			io.WriteString(w, `{"error":"disk full"}`+"\n")
		},
		"POST /api/generate": func(w http.ResponseWriter, r *http.Request) {
			// Not streamed: one JSON object without a newline.
			io.WriteString(w, `{"model":"m","response":"all of it","done":true,"eval_count":3}`)
		},
		"HEAD /api/blobs/sha256:aa": func(w http.ResponseWriter, r *http.Request) {},
		"HEAD /":                    func(w http.ResponseWriter, r *http.Request) {},
		"POST /api/embed": func(w http.ResponseWriter, r *http.Request) {
			var req ollamaapi.EmbedRequest
			if json.NewDecoder(r.Body).Decode(&req) != nil || string(req.Input) != `["a","b"]` {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":"bad input"}`)
				return
			}
			io.WriteString(w, `{"model":"m","embeddings":[[0.5,1],[2,3]],"prompt_eval_count":2}`)
		},
		"POST /api/embeddings": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"server busy"}`)
		},
		"POST /api/blobs/sha256:bb": func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if string(b) != "blob" || r.ContentLength != 4 {
				w.WriteHeader(http.StatusBadRequest)
			}
			w.WriteHeader(http.StatusCreated)
		},
	})
	ctx := context.Background()

	_, err := c.Show(ctx, &ollamaapi.ShowRequest{Model: "nope"})
	if !IsNotFound(err) || err.Error() != `model "nope:latest" not found` {
		t.Errorf("show: %v", err)
	}
	if err := c.Copy(ctx, &ollamaapi.CopyRequest{Source: "a", Destination: "b"}); err == nil || err.Error() != "upstream down" {
		t.Errorf("copy: %v", err)
	}

	var got []ollamaapi.ProgressResponse
	err = c.Pull(ctx, &ollamaapi.PullRequest{Model: "x"}, func(p ollamaapi.ProgressResponse) error { got = append(got, p); return nil })
	if err == nil || err.Error() != "disk full" || len(got) != 2 || got[1].Completed != 5 || got[1].Total != 10 {
		t.Errorf("pull: %v, %+v", err, got)
	}
	stop := errors.New("stop")
	err = c.Pull(ctx, &ollamaapi.PullRequest{Model: "x"}, func(ollamaapi.ProgressResponse) error { return stop })
	if err != stop {
		t.Errorf("pull stopped by the callback: %v", err)
	}

	var gen []ollamaapi.GenerateResponse
	err = c.Generate(ctx, &ollamaapi.GenerateRequest{Model: "m"}, func(r ollamaapi.GenerateResponse) error { gen = append(gen, r); return nil })
	if err != nil || len(gen) != 1 || gen[0].Response != "all of it" || gen[0].EvalCount != 3 {
		t.Errorf("generate: %v %+v", err, gen)
	}

	for digest, want := range map[string]bool{"sha256:aa": true, "sha256:zz": false} {
		if has, err := c.HasBlob(ctx, digest); err != nil || has != want {
			t.Errorf("HasBlob(%s) = %v, %v", digest, has, err)
		}
	}
	if err := c.Heartbeat(ctx); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
	emb, err := c.Embed(ctx, &ollamaapi.EmbedRequest{Model: "m", Input: json.RawMessage(`["a","b"]`)})
	if err != nil || len(emb.Embeddings) != 2 || emb.Embeddings[1][0] != 2 || emb.PromptEvalCount != 2 {
		t.Errorf("embed: %v %+v", err, emb)
	}
	_, err = c.Embed(ctx, &ollamaapi.EmbedRequest{Model: "m", Input: json.RawMessage(`"a"`)})
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || se.Message != "bad input" {
		t.Errorf("embed refused: %v", err)
	}
	_, err = c.Embeddings(ctx, &ollamaapi.EmbeddingRequest{Model: "m", Prompt: "a"})
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable || err.Error() != "server busy" {
		t.Errorf("embeddings refused: %v", err)
	}

	if err := c.CreateBlob(ctx, "sha256:bb", strings.NewReader("blob"), 4); err != nil {
		t.Errorf("CreateBlob: %v", err)
	}
	if err := c.CreateBlob(ctx, "sha256:cc", strings.NewReader("blob"), 4); !IsNotFound(err) {
		t.Errorf("CreateBlob to a missing route: %v", err)
	}
}
