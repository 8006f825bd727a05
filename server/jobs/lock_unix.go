//go:build unix

package jobs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on the file name (in data directory
// dir), held until the file is closed (or the process ends, however it
// ends).
func lockFile(name, dir string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another Tadpole server", dir)
		}
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	return f, nil
}
