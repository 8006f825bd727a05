package runner

import (
	"log/slog"
	"sync"
	"syscall"
)

var priorityWarn sync.Once

// encodeNice is the nice value of an encoder's thread: the lowest
// priority of the normal policy. A decoding thread (nice 0) weighs about
// 70 times more, so it gets a core back within a scheduler tick, while
// the encode still progresses when other processes keep the cores busy
// (SCHED_IDLE would not: on a machine shared with other work, it starved
// image requests for good).
const encodeNice = 19

// lowerThreadPriority sets the calling OS thread's nice value to
// encodeNice (on Linux a nice value is a thread's own, and threads it
// starts inherit it). Lowering needs no privilege; if it fails anyway (a
// seccomp profile), the work runs at normal priority and a warning is
// logged once.
func lowerThreadPriority() {
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), encodeNice); err != nil {
		priorityWarn.Do(func() {
			slog.Warn("could not lower an encoder thread's CPU priority: image encodes will compete with decoding", "error", err)
		})
	}
}

// isMainThread: the calling OS thread is the process's first.
func isMainThread() bool { return syscall.Gettid() == syscall.Getpid() }
