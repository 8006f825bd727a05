package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// The queue bound holds exactly under a burst: with the only slot busy
// and room for 4 waiting requests, 16 requests sent at once get 4 places
// in the queue and 12 answers of 503 with Retry-After — never more
// places, however the requests interleave — and the 4 are answered once
// the slot frees.
func TestQueueBoundExactUnderBurst(t *testing.T) {
	dir := testModels(t, "stories")
	srv := New(Config{ModelsDir: dir, Sched: sched.Config{
		Parallel: 1, NumCtx: 128, MaxQueue: 4, KeepAlive: time.Minute, FlashAttn: engine.FlashAttentionOn, Threads: 1,
	}})
	ts := serveForTest(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Hold the only slot with an endless generation.
	hold, release := context.WithCancel(ctx)
	defer release()
	held := make(chan struct{})
	go ts.Client.Generate(hold, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Options: map[string]any{"num_predict": -1}},
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

	const burst = 16
	var mu sync.Mutex
	codes := map[int]int{}
	retryAfter := 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < burst; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			body := fmt.Sprintf(`{"model":"stories","prompt":"Tell me %d","stream":false,"options":{"num_predict":2}}`, i)
			req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/api/generate", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" {
				retryAfter++
			}
			mu.Unlock()
		}()
	}
	close(start)
	// Wait until every request of the burst was either refused or queued.
	testkit.Eventually(t, time.Minute, "every request of the burst to be refused or queued", func() bool {
		mu.Lock()
		refused := codes[http.StatusServiceUnavailable]
		mu.Unlock()
		waiting := 0
		for _, in := range srv.sched.Status() {
			waiting += in.Runner.Waiting()
		}
		if refused+waiting > burst {
			t.Fatalf("%d queued and %d refused of a burst of %d", waiting, refused, burst)
		}
		if refused+waiting < burst {
			return false
		}
		if waiting != 4 || refused != burst-4 {
			t.Fatalf("%d queued and %d refused, want 4 and %d", waiting, refused, burst-4)
		}
		return true
	})
	// Embeddings take their place in the same queue: with it full, 503
	// in each dialect's shape.
	_, err := ts.Client.Embed(ctx, &ollamaapi.EmbedRequest{Model: "stories", Input: jsonOf("The cat sat.")})
	if se := (*client.StatusError)(nil); !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/api/embed with the queue full: %v, want a 503", err)
	}
	for _, c := range []struct{ path, body, want string }{
		{"/v1/embeddings", `{"model":"stories","input":"The cat sat."}`, "server_overloaded"},
		{"/api/embeddings", `{"model":"stories","prompt":"The cat sat."}`, "too many requests waiting"},
	} {
		resp, err := http.Post(ts.URL+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), c.want) {
			t.Errorf("%s with the queue full: %d %s", c.path, resp.StatusCode, b)
		}
	}
	release()
	wg.Wait()
	if codes[http.StatusOK] != 4 || codes[http.StatusServiceUnavailable] != burst-4 || retryAfter != burst-4 {
		t.Fatalf("answers %v (%d with Retry-After), want 4×200 and %d×503 with Retry-After", codes, retryAfter, burst-4)
	}
	// The places are given back: more embeddings than the bound, one
	// after another, all answer.
	for i := 0; i < 6; i++ {
		if _, err := ts.Client.Embed(ctx, &ollamaapi.EmbedRequest{Model: "stories", Input: jsonOf("The cat sat.")}); err != nil {
			t.Fatalf("embedding %d after the burst: %v", i, err)
		}
	}
}
