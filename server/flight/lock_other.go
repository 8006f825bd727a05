//go:build !unix

package flight

import "os"

// lock: without flock, two servers sharing a data directory are not
// detected.
func lock(*os.File) error { return nil }
