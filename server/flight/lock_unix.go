//go:build unix

package flight

import (
	"errors"
	"os"
	"syscall"
)

// lock takes an exclusive lock on f, held until it is closed (or the
// process ends, however it ends), so two servers sharing a data
// directory do not write one file.
func lock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errors.New("in use by another Tadpole server")
	}
	return err
}
