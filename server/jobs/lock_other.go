//go:build !unix

package jobs

import (
	"fmt"
	"os"
)

// lockDir creates dir/LOCK; without flock, two servers on one data
// directory are not detected.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+"/LOCK", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	return f, nil
}
