package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// A client that goes away while its request waits for a slot is counted
// and logged as 499 (client closed request, as Nginx says), never as a
// 500: anyone could otherwise inflate the server's error rate. Each
// dialect, streamed or not: the only slot is held by an endless
// generation, the request is cancelled once it is queued, and /metrics
// then counts a 499 for its endpoint and no 500 at all.
func TestClientGoneWhileQueuedIs499(t *testing.T) {
	dir := testModels(t, "stories")
	srv := New(Config{ModelsDir: dir, Sched: testSched(1, 128)})
	ts := serveForTest(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hold, release := context.WithCancel(ctx)
	defer release()
	held := make(chan struct{})
	go ts.Client.Generate(hold, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Options: map[string]any{"num_predict": -1, "temperature": 0}}, // greedy: no end
		func(ollamaapi.GenerateResponse) error {
			select {
			case <-held:
			default:
				close(held)
			}
			return nil
		})
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the holding request never started")
	}
	waiting := func() int {
		n := 0
		for _, in := range srv.sched.Status() {
			n += in.Runner.Waiting()
		}
		return n
	}
	metrics := func() string {
		resp, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	cases := []struct{ path, body string }{
		{"/api/generate", `{"model":"stories","prompt":"Hi","options":{"num_predict":2}}`},
		{"/api/generate", `{"model":"stories","prompt":"Hi","stream":false,"options":{"num_predict":2}}`},
		{"/api/chat", `{"model":"stories","messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":2}}`},
		{"/v1/chat/completions", `{"model":"stories","messages":[{"role":"user","content":"Hi"}],"max_tokens":2}`},
		{"/v1/chat/completions", `{"model":"stories","messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"stream":true}`},
	}
	want := map[string]float64{}
	for _, c := range cases {
		rctx, rcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(rctx, "POST", ts.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil { // a stream's headers may come before its slot
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
		for waiting() != 1 {
			if ctx.Err() != nil {
				t.Fatalf("%s %s never queued", c.path, c.body)
			}
			time.Sleep(5 * time.Millisecond)
		}
		rcancel()
		if err := <-done; err == nil {
			t.Fatalf("%s: answered though cancelled while queued", c.path)
		}
		want[c.path]++
		// The server logs and counts the request once its handler
		// returns, after the cancellation reaches it.
		for {
			text := metrics()
			got := metricValue(text, "tadpole_requests_total", `status="499"`, `endpoint="`+c.path+`"`)
			if got == want[c.path] {
				break
			}
			if ctx.Err() != nil || strings.Contains(text, `status="500"`) {
				t.Fatalf("%s %s cancelled while queued: 499 counted %v times, want %v\n%s", c.path, c.body, got, want[c.path], grepLines(text, "tadpole_requests_total"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if text := metrics(); strings.Contains(text, `status="500"`) {
		t.Fatalf("a 500 counted:\n%s", grepLines(text, "tadpole_requests_total"))
	}
}
