//go:build unix

package flight

import (
	"os"
	"syscall"
)

// mapFile maps the whole file (size bytes, shared): a slot is then
// written with a copy, no system call, and what is copied is in the
// page cache at once, where it outlives the process.
func mapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

func unmap(b []byte) error { return syscall.Munmap(b) }
