//go:build !linux

package runner

// lowerThreadPriority: a per-thread nice value is Linux's; elsewhere the
// encode runs at normal priority.
func lowerThreadPriority() {}

func isMainThread() bool { return false }
