package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// OnAdmit is called exactly once per request, when it stops waiting: it
// got a slot, it was cancelled while waiting, or the runner closed.
func TestOnAdmitOnce(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r, err := New(m, Config{Parallel: 1, NumCtx: 128, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	prompt := tokenize(t, m, "Once upon a time")
	var holder, cancelled, closed atomic.Int32
	hctx, hcancel := context.WithCancel(context.Background())
	defer hcancel()
	h, err := r.Generate(hctx, Request{Prompt: prompt, NumPredict: -1, OnAdmit: func() { holder.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := h.Next(context.Background(), nil); err != nil || len(evs) == 0 {
		t.Fatalf("holder: %v", err)
	}
	if holder.Load() != 1 {
		t.Fatalf("holder admitted %d times", holder.Load())
	}
	cctx, ccancel := context.WithCancel(context.Background())
	c, err := r.Generate(cctx, Request{Prompt: prompt, NumPredict: 5, OnAdmit: func() { cancelled.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if cancelled.Load() != 0 || r.Waiting() != 1 {
		t.Fatalf("a waiting request was admitted (%d) / waiting %d", cancelled.Load(), r.Waiting())
	}
	ccancel()
	if evs, _ := c.Collect(context.Background()); len(evs) == 0 || evs[len(evs)-1].DoneReason != "cancel" {
		t.Fatalf("cancelled waiting request: %+v", evs)
	}
	if cancelled.Load() != 1 {
		t.Fatalf("cancelled request: OnAdmit %d times", cancelled.Load())
	}
	w, err := r.Generate(context.Background(), Request{Prompt: prompt, NumPredict: 5, OnAdmit: func() { closed.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if evs, _ := w.Collect(context.Background()); len(evs) == 0 || evs[len(evs)-1].Err != ErrClosed {
		t.Fatalf("request waiting at close: %+v", evs)
	}
	if closed.Load() != 1 || holder.Load() != 1 || cancelled.Load() != 1 {
		t.Fatalf("OnAdmit calls: holder %d, cancelled %d, closed %d", holder.Load(), cancelled.Load(), closed.Load())
	}
}
