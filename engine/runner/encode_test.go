//go:build linux

package runner

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
)

// threadNice is the calling OS thread's nice value (Linux's getpriority
// answers 20 - nice).
func threadNice(t *testing.T) int {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		t.Error(err)
	}
	return 20 - p
}

// Encode: on an idle runner the work runs on the loop with the runner's
// threads; beside a running generation it runs with one thread on a
// thread of the lowest priority, and the generation's output does not
// change; the process's priority is untouched; a context already ended
// runs nothing.
func TestEncode(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r, err := New(m, Config{Parallel: 2, NumCtx: 2048, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx := context.Background()

	threads, nice := 0, -1
	if err := r.Encode(ctx, func(n int) { threads, nice = n, threadNice(t) }); err != nil {
		t.Fatal(err)
	}
	if threads != 2 || nice != 0 {
		t.Errorf("idle runner: %d threads at nice %d, want the runner's 2 at 0", threads, nice)
	}

	req := Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 1500}
	want := run(t, r, req).text
	evs, err := generate(r, ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	<-evs // the first token: the slot is busy
	for range 20 { // a new thread each: never the main thread (checked below)
		threads, nice = 0, -1
		if err := r.Encode(ctx, func(n int) { threads, nice = n, threadNice(t) }); err != nil {
			t.Fatal(err)
		}
		if threads != 1 || nice != 19 {
			t.Errorf("busy runner: %d threads at nice %d, want 1 at 19", threads, nice)
		}
	}
	got := collect(t, evs)
	if got.last.Err != nil {
		t.Fatal(got.last.Err)
	}
	if r.Busy() != 0 {
		t.Fatal("still busy")
	}
	// the first piece was read above; compare the rest
	if len(want) < len(got.text) || want[len(want)-len(got.text):] != got.text {
		t.Errorf("with encodes beside it the generation changed: %q…, alone %q…", trim(got.text), trim(want))
	}
	if p, err := syscall.Getpriority(syscall.PRIO_PROCESS, os.Getpid()); err != nil || 20-p != 0 {
		t.Errorf("the process's main thread is at nice %d (%v), want 0", 20-p, err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.Encode(cctx, func(int) { t.Error("ran with its context ended") }); !errors.Is(err, context.Canceled) {
		t.Errorf("Encode with an ended context: %v", err)
	}
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}
