package runner

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Do runs a function on the loop, between steps, while generations run,
// without changing their output; a caller that leaves before its turn
// never has its function run; a closed runner refuses.
func TestDo(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 2, NumCtx: 256})
	req := Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 24}
	want := run(t, r, req).text
	ctx := context.Background()
	evs, err := generate(r, ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for range 5 {
		if err := r.Do(ctx, func() { ran++ }); err != nil {
			t.Fatal(err)
		}
	}
	if ran != 5 {
		t.Fatalf("ran %d of 5 tasks", ran)
	}
	if got := collect(t, evs).text; got != want {
		t.Errorf("with tasks between steps: %q, alone %q", got, want)
	}

	// Block the loop with one task, queue another whose caller leaves.
	release := make(chan struct{})
	started := make(chan struct{})
	go r.Do(ctx, func() { close(started); <-release })
	<-started
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	dropped := false
	if err := r.Do(cctx, func() { dropped = true }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do with its context ending in the queue: %v", err)
	}
	close(release)
	if err := r.Do(ctx, func() {}); err != nil {
		t.Fatal(err)
	}
	if dropped {
		t.Error("a task whose caller left ran anyway")
	}
	r.Close()
	if err := r.Do(ctx, func() { t.Error("ran on a closed runner") }); !errors.Is(err, ErrClosed) {
		t.Errorf("Do on a closed runner: %v", err)
	}
}
