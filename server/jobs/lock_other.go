//go:build !unix

package jobs

import (
	"fmt"
	"os"
)

// lockFile creates the file name (in dir); without flock, two servers on one data
// directory are not detected.
func lockFile(name, dir string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	return f, nil
}
