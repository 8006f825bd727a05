package runner

import (
	"context"
	"sync/atomic"
)

// A task is a function queued to run on the runner's loop (Do).
type task struct {
	f     func()
	state atomic.Int32 // taskQueued, then taskTaken (the loop runs it) or taskDropped (its caller left)
	done  chan struct{}
}

const (
	taskQueued int32 = iota
	taskTaken
	taskDropped
)

// Do runs f on the runner's loop, between two decode steps, and returns
// when it has run: f sees the slots as the loop leaves them between two
// steps, and delays the other slots' next step by its own duration. At
// most one task runs per step.
//
// If ctx ends before the loop takes f, f never runs and Do returns ctx's
// error; once taken, f runs to its end and Do waits for it. Do on a closed
// runner returns ErrClosed.
func (r *Runner) Do(ctx context.Context, f func()) error {
	t := &task{f: f, done: make(chan struct{})}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	r.tasks = append(r.tasks, t)
	r.mu.Unlock()
	r.signal()
	select {
	case <-t.done:
	case <-ctx.Done():
		if t.state.CompareAndSwap(taskQueued, taskDropped) {
			return ctx.Err()
		}
		<-t.done // taken: f is running
	}
	if t.state.Load() == taskDropped {
		return ErrClosed
	}
	return nil
}

// taskStep runs the oldest queued task, if any, and reports whether it
// ran one.
func (r *Runner) taskStep() bool {
	for {
		r.mu.Lock()
		if len(r.tasks) == 0 {
			r.mu.Unlock()
			return false
		}
		t := r.tasks[0]
		r.tasks = r.tasks[1:]
		r.mu.Unlock()
		if !t.state.CompareAndSwap(taskQueued, taskTaken) {
			continue // its caller left
		}
		t.f()
		close(t.done)
		return true
	}
}

// closeTasks ends the tasks still queued when the runner closes: they
// never run, and Do returns ErrClosed.
func (r *Runner) closeTasks() {
	r.mu.Lock()
	tasks := r.tasks
	r.tasks = nil
	r.mu.Unlock()
	for _, t := range tasks {
		if t.state.CompareAndSwap(taskQueued, taskDropped) {
			close(t.done)
		}
	}
}
