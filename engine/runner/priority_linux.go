package runner

import (
	"log/slog"
	"sync"
	"syscall"
)

var priorityWarn sync.Once

// lowerThreadPriority sets the calling OS thread's nice value to 19, the
// lowest priority (on Linux a nice value is a thread's own, and threads
// it starts inherit it). Lowering needs no privilege; if it fails anyway
// (a seccomp profile), the work runs at normal priority and a warning is
// logged once.
func lowerThreadPriority() {
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19); err != nil {
		priorityWarn.Do(func() {
			slog.Warn("could not lower an encoder thread's CPU priority: image encodes will compete with decoding", "error", err)
		})
	}
}

// isMainThread: the calling OS thread is the process's first.
func isMainThread() bool { return syscall.Gettid() == syscall.Getpid() }
