package runner

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"
)

// A reader slower than the model gets the tokens that queued meanwhile in
// one Next, every one of them, in order; a fast reader beside it on the
// same runner gets the same text, and neither holds the other back.
func TestStreamCoalescesWithoutLoss(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 2, NumCtx: 256})
	prompt := tokenize(t, m, "Once upon a time")
	want := run(t, r, Request{Prompt: prompt, NumPredict: 120})

	read := func(delay time.Duration) (text string, events, maxBatch int, final Event) {
		s, err := r.Generate(context.Background(), Request{Prompt: prompt, NumPredict: 120})
		if err != nil {
			t.Error(err)
			return
		}
		var buf []Event
		for {
			buf, err = s.Next(context.Background(), buf[:0])
			maxBatch = max(maxBatch, len(buf))
			for _, ev := range buf {
				text += ev.Text
				events++
				if ev.Done {
					final = ev
				}
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(delay)
		}
	}
	var wg sync.WaitGroup
	var slow, fast struct {
		text           string
		events, maxBat int
		final          Event
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		slow.text, slow.events, slow.maxBat, slow.final = read(20 * time.Millisecond)
	}()
	go func() {
		defer wg.Done()
		fast.text, fast.events, fast.maxBat, fast.final = read(0)
	}()
	wg.Wait()
	for name, got := range map[string]struct {
		text           string
		events, maxBat int
		final          Event
	}{"slow": slow, "fast": fast} {
		if got.text != want.text {
			t.Errorf("%s reader: text %q, want %q", name, got.text, want.text)
		}
		if !got.final.Done || got.final.Stats.EvalCount != 120 {
			t.Errorf("%s reader: final event %+v", name, got.final)
		}
	}
	if slow.maxBat < 2 {
		t.Errorf("the slow reader never got more than one event per Next (%d events)", slow.events)
	}
}

// Next gives up when its context ends; TryNext never waits; after the
// final event both report io.EOF.
func TestStreamNextContext(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 1, NumCtx: 128})
	s, err := r.Generate(context.Background(), Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 5})
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Collect(context.Background())
	if err != nil || len(all) == 0 || !all[len(all)-1].Done {
		t.Fatalf("collect: %d events, %v", len(all), err)
	}
	if _, err := s.TryNext(nil); err != io.EOF {
		t.Fatalf("TryNext after the end: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Next(ctx, nil); err != io.EOF {
		t.Fatalf("Next after the end: %v", err)
	}
	// A stream with nothing queued: Next returns the context's error.
	gctx, gcancel := context.WithCancel(context.Background())
	busy, err := r.Generate(gctx, Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: -1})
	if err != nil {
		t.Fatal(err)
	}
	go busy.Collect(context.Background()) // until the cancel below ends it
	blocked, err := r.Generate(gctx, Request{Prompt: tokenize(t, m, "Once upon a"), NumPredict: 5})
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	if evs, err := blocked.Next(short, nil); err != context.DeadlineExceeded || len(evs) != 0 {
		t.Fatalf("Next on a waiting request: %d events, %v", len(evs), err)
	}
	gcancel()
	evs, err := blocked.Collect(context.Background())
	if err != nil || len(evs) == 0 || evs[len(evs)-1].DoneReason != "cancel" {
		t.Fatalf("cancelled waiting request: %+v, %v", evs, err)
	}
}
