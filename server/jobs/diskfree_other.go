//go:build !linux && !darwin && !freebsd

package jobs

// diskFree cannot tell the free space on this system; the free-disk
// floor is not enforced (writes still fail cleanly when the disk fills).
func diskFree(string) (uint64, bool) { return 0, false }
