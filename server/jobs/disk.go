package jobs

import (
	"errors"
	"fmt"
	"path/filepath"
)

// ErrDiskLow: the disk of the SQLite database has less free space than
// Config.MinFreeDisk (with what is to be written); nothing was written.
var ErrDiskLow = errors.New("not enough free disk space for the job database")

// dbDir is the directory of the SQLite database ("" for PostgreSQL,
// whose disk is the database server's).
func (s *Store) dbDir() string {
	if s.pg {
		return ""
	}
	if _, path, err := ParseURL(s.cfg.URL); err == nil && path != "" {
		return filepath.Dir(path)
	}
	return s.cfg.Dir
}

// checkDisk refuses a write of need bytes that would leave the
// database's disk with less than MinFreeDisk free, so that a full disk
// refuses new data before SQLite fails a write (the data stored stays
// readable either way).
func (s *Store) checkDisk(need int64) error {
	dir := s.dbDir()
	if s.cfg.MinFreeDisk <= 0 || dir == "" {
		return nil
	}
	free, ok := diskFree(dir)
	if !ok {
		return nil
	}
	floor := uint64(s.cfg.MinFreeDisk)
	if free < floor || free-floor < uint64(max(need, 0)) {
		return fmt.Errorf("%w: %d MiB free on its disk, %d MiB needed and %d MiB must stay free (--min-free-disk)",
			ErrDiskLow, free>>20, need>>20, floor>>20)
	}
	return nil
}

// SetMinFreeDisk sets Config.MinFreeDisk (the server's --min-free-disk,
// read after the store opens); call it before the store serves.
func (s *Store) SetMinFreeDisk(n int64) { s.cfg.MinFreeDisk = n }
