//go:build linux || darwin || freebsd

package jobs

import "syscall"

// diskFree is the space available to unprivileged writers on the file
// system holding dir; ok is false when it cannot be told.
func diskFree(dir string) (free uint64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
