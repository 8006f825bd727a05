package runner

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Encode runs beside the loop: with the runner's threads when it is
// idle, with one beside a running generation, which neither waits for it
// (an encode that waits for the generation to end does not deadlock) nor
// changes its output; a context already ended runs nothing; encodes run
// one at a time.
func TestEncode(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r, err := New(m, Config{Parallel: 2, NumCtx: 2048, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx := context.Background()

	threads := 0
	if err := r.Encode(ctx, func(n int) { threads = n }); err != nil {
		t.Fatal(err)
	}
	if threads != 2 {
		t.Errorf("idle runner: %d threads, want the runner's 2", threads)
	}

	req := Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 100}
	want := run(t, r, req).text
	for range 3 {
		evs, err := generate(r, ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		first := <-evs // the slot is busy
		var got result
		threads = 0
		err = r.Encode(ctx, func(n int) {
			threads = n
			got = collect(t, evs) // the generation goes on to its end meanwhile
		})
		if err != nil {
			t.Fatal(err)
		}
		if threads != 1 {
			t.Fatalf("busy runner: %d threads, want 1", threads)
		}
		if got.last.Err != nil {
			t.Fatal(got.last.Err)
		}
		if text := first.Text + got.text; text != want {
			t.Fatalf("with an encode beside it the generation changed: %q, alone %q", text, want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.Encode(cctx, func(int) { t.Error("ran with its context ended") }); !errors.Is(err, context.Canceled) {
		t.Errorf("Encode with an ended context: %v", err)
	}
	// One at a time: a second Encode waits for the first.
	release, entered := make(chan struct{}), make(chan struct{})
	go r.Encode(ctx, func(int) { close(entered); <-release })
	<-entered
	second := make(chan struct{})
	go func() { r.Encode(ctx, func(int) {}); close(second) }()
	select {
	case <-second:
		t.Error("two encodes ran at once")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-second
}
