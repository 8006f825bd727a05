package runner

import (
	"context"
	"runtime"
)

// Encode runs an encoder's work — f, a projector encoding an image with
// the CPU threads it is given — where it costs the runner's requests
// least:
//
//   - when the runner is idle (no request running or waiting, no task
//     queued), on the loop between two steps (Do) with the runner's own
//     threads: nothing is there to stall, and the encode is as fast as
//     the machine allows;
//   - otherwise beside the loop, with one thread, on an OS thread of its
//     own at the lowest CPU priority (nice 19): decoding keeps the cores
//     it needs and the encode takes the cycles decoding leaves (the gaps
//     between steps, a core decoding does not fill). On the loop, every
//     slot would wait for the whole encode; at the same priority beside
//     it, the two thread pools would fight over the cores and slow each
//     other many times over (ggml's threads spin at their barriers).
//
// The price is the image request's own time when text keeps every core
// busy: its encode then runs only in the gaps. The text requests already
// decoding are what a user watches; an image request has not shown its
// first token yet.
//
// If ctx ends before f starts, f never runs and Encode returns ctx's
// error; once started, f runs to its end and Encode waits for it.
func (r *Runner) Encode(ctx context.Context, f func(threads int)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.idle() {
		return r.Do(ctx, func() { f(r.cfg.Threads) })
	}
	onLowPriorityThread(func() { f(1) })
	return nil
}

// onLowPriorityThread runs f on an OS thread of its own at the lowest CPU
// priority and returns when it has run. The thread's priority cannot be
// raised back without privileges, so it stays locked to f's goroutine
// and ends with it (Go creates its other threads from a thread of its
// own, never from a locked one, so none inherits the priority). Never the
// process's main thread: Go keeps that one when its goroutine exits
// locked, and its priority is what ps shows for the whole process.
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

// idle: no request running or waiting and no task queued.
func (r *Runner) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.waiting) > 0 || len(r.tasks) > 0 {
		return false
	}
	for _, s := range r.slots {
		if s.req != nil {
			return false
		}
	}
	return true
}
