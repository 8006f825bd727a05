//go:build linux

package runner

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// threadPolicy is the calling OS thread's scheduling policy and nice
// value (Linux's getpriority answers 20 - nice).
func threadPolicy(t *testing.T) (policy, nice int) {
	tid := syscall.Gettid()
	p, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
	if errno != 0 {
		t.Error(errno)
	}
	n, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		t.Error(err)
	}
	return int(p), 20 - n
}

// Encode runs beside the loop on a thread at the lowest priority: with
// the runner's threads when it is idle, with one beside a running
// generation, which neither waits for it (an encode that waits for the
// generation to end does not deadlock) nor changes its output; the
// process's main thread keeps its priority; a context already ended runs
// nothing.
func TestEncode(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r, err := New(m, Config{Parallel: 2, NumCtx: 2048, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx := context.Background()

	threads, nice := 0, -1
	if err := r.Encode(ctx, func(n int) { threads = n; _, nice = threadPolicy(t) }); err != nil {
		t.Fatal(err)
	}
	if threads != 2 || nice != encodeNice {
		t.Errorf("idle runner: %d threads at nice %d; want the runner's 2 at %d", threads, nice, encodeNice)
	}

	req := Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 100}
	want := run(t, r, req).text
	for range 10 { // a new thread each time: never the main thread (checked below)
		evs, err := generate(r, ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		first := <-evs // the slot is busy
		var got result
		threads, nice = 0, -1
		err = r.Encode(ctx, func(n int) {
			threads = n
			_, nice = threadPolicy(t)
			got = collect(t, evs) // the generation goes on to its end meanwhile
		})
		if err != nil {
			t.Fatal(err)
		}
		if threads != 1 || nice != encodeNice {
			t.Fatalf("busy runner: %d threads at nice %d; want 1 at %d", threads, nice, encodeNice)
		}
		if got.last.Err != nil {
			t.Fatal(got.last.Err)
		}
		if text := first.Text + got.text; text != want {
			t.Fatalf("with an encode beside it the generation changed: %q, alone %q", text, want)
		}
	}
	if policy, nice := mainThreadPolicy(t); policy != 0 || nice != 0 {
		t.Errorf("the process's main thread has policy %d at nice %d, want 0 and 0", policy, nice)
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

func mainThreadPolicy(t *testing.T) (policy, nice int) {
	pid := os.Getpid()
	p, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(pid), 0, 0)
	if errno != 0 {
		t.Error(errno)
	}
	n, err := syscall.Getpriority(syscall.PRIO_PROCESS, pid)
	if err != nil {
		t.Error(err)
	}
	return int(p), 20 - n
}
