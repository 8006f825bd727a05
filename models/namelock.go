package models

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// nameLocks serializes the management operations of one model name:
// create, copy to it and delete run one at a time per name (names
// compared without case, as the store finds them), so that concurrent
// ones each see the store as the one before left it.
type nameLocks struct {
	mu    sync.Mutex
	locks map[string]*nameLock
}

type nameLock struct {
	sync.Mutex
	users int
}

// lockName takes the management lock of n and returns its release.
func (s *Store) lockName(n Name) func() {
	key := strings.ToLower(n.withDefaults().Full())
	l := &s.names
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*nameLock{}
	}
	nl := l.locks[key]
	if nl == nil {
		nl = &nameLock{}
		l.locks[key] = nl
	}
	nl.users++
	l.mu.Unlock()
	nl.Lock()
	return func() {
		nl.Unlock()
		l.mu.Lock()
		if nl.users--; nl.users == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}

// resolveTries bounds how often a model whose files went while it was
// read (its manifest deleted or replaced meanwhile) is read again.
const resolveTries = 3

// resolve finds a model by name. A file that goes while the model is
// read (a concurrent delete or replacement of the name, whose garbage
// collection removed the blobs of the manifest read) means the name is
// read again: the reader sees the old model or the new one, or none (an
// error wrapping ErrNotFound), never the half of one.
func (s *Store) resolve(n Name) (Entry, error) {
	for try := 1; ; try++ {
		e, err := s.resolveOnce(n)
		if err == nil || errors.Is(err, ErrNotFound) || !errors.Is(err, fs.ErrNotExist) {
			return e, err
		}
		if _, _, ferr := s.findManifest(n); errors.Is(ferr, fs.ErrNotExist) {
			if _, _, ok := s.bareFile(n); !ok {
				return Entry{}, fmt.Errorf("model %q: %w (deleted while it was read)", n.String(), ErrNotFound)
			}
		}
		if try == resolveTries {
			return e, err
		}
	}
}

// resolvePinned resolves a model whose blobs another manifest is about
// to reference (a create FROM it): its blobs are pinned against garbage
// collection, then checked to be still there (a delete may have
// collected them between the read and the pin), else it is read again.
func (s *Store) resolvePinned(n Name) (Entry, error) {
	for try := 1; ; try++ {
		e, err := s.resolve(n)
		if err != nil || e.Manifest == nil {
			return e, err
		}
		all := true
		for _, d := range e.Manifest.blobs() {
			s.pin(d)
			p, _ := s.blobPath(d)
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				all = false
			}
		}
		if all {
			return e, nil
		}
		if try == resolveTries {
			return Entry{}, fmt.Errorf("model %q: %w (deleted while it was read)", n.String(), ErrNotFound)
		}
	}
}
