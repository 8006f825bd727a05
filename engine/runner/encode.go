package runner

import (
	"context"
	"runtime"
)

// Encode runs an encoder's work — f, a projector encoding an image with
// the CPU threads it is given — beside the loop, on an OS thread of its
// own at the lowest CPU priority (nice 19; the threads it starts inherit
// it): a decoding thread that wakes takes its core back within a
// scheduler tick. So decoding slots keep their speed while images are
// encoded; the encode takes the cycles decoding leaves. f gets the runner's threads when no request is
// running or waiting (nothing competes: the encode is as fast as the
// machine allows), one thread otherwise (the gaps between steps are
// short; more threads would wait on each other's barriers there).
//
// The alternatives cost the text more: on the loop between two steps,
// every slot would wait for the whole encode; beside it at normal
// priority, the encode's and the decode's thread pools would fight over
// the cores and slow each other many times over (ggml's threads spin at
// their barriers). The price is the image request's own time while text
// keeps every core busy; the text requests already decoding are what
// users watch, and an image request has not shown its first token yet.
//
// Encodes run one at a time (a projector keeps one output buffer). If ctx
// ends before f starts, f never runs and Encode returns ctx's error; once
// started, f runs to its end and Encode waits for it.
func (r *Runner) Encode(ctx context.Context, f func(threads int)) error {
	r.encodeMu.Lock()
	defer r.encodeMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	threads := 1
	if r.idle() {
		threads = r.cfg.Threads
	}
	onLowPriorityThread(func() { f(threads) })
	return nil
}

// onLowPriorityThread runs f on an OS thread of its own at the lowest CPU priority
// and returns when it has run. The thread's priority cannot be raised
// back without privileges, so it stays locked to f's goroutine and ends
// with it (Go creates its other threads from a thread of its own, never
// from a locked one, so none inherits the priority). Never the process's
// main thread: Go keeps that one when its goroutine exits locked, and its
// priority is what ps shows for the whole process.
func onLowPriorityThread(f func()) {
	done := make(chan struct{})
	var start func()
	start = func() {
		runtime.LockOSThread()
		if isMainThread() {
			go start() // cannot land here: this thread is held until f is done
			<-done
			runtime.UnlockOSThread()
			return
		}
		defer close(done)
		lowerThreadPriority()
		f()
	}
	go start()
	<-done
}

// idle: no request running or waiting, no embedding queued.
func (r *Runner) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.waiting) > 0 || len(r.embeds) > 0 {
		return false
	}
	for _, s := range r.slots {
		if s.req != nil {
			return false
		}
	}
	return true
}
