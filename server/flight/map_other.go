//go:build !unix

package flight

import (
	"errors"
	"os"
)

// mapFile: without mmap, slots are written with pwrite.
func mapFile(*os.File, int) ([]byte, error) { return nil, errors.New("no mmap") }

func unmap([]byte) error { return nil }
