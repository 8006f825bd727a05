package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ErrNotFound is returned for a name the store does not have.
var ErrNotFound = errors.New("model not found")

// Store finds models in a directory. A file NAME.gguf in the directory is
// the model NAME:latest. The zero value is an empty store.
type Store struct {
	Dir string
}

// Entry is one model of the store.
type Entry struct {
	Name     Name
	Path     string
	Size     int64
	Modified time.Time
}

// Resolve finds the GGUF file of a model name.
func (s *Store) Resolve(name string) (Entry, error) {
	n, err := ParseName(name)
	if err != nil {
		return Entry{}, err
	}
	if s.Dir != "" && n.Host == "" && n.Namespace == "" && n.Tag == DefaultTag {
		p := filepath.Join(s.Dir, n.Model+".gguf")
		// os.Stat follows links, so a link to a GGUF file is a model too.
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return Entry{Name: n, Path: p, Size: fi.Size(), Modified: fi.ModTime()}, nil
		}
	}
	return Entry{}, fmt.Errorf("model %q: %w", n.String(), ErrNotFound)
}

// List returns every model of the store, sorted by name.
func (s *Store) List() ([]Entry, error) {
	if s.Dir == "" {
		return nil, nil
	}
	des, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("list models in %s: %w", s.Dir, err)
	}
	var out []Entry
	for _, de := range des {
		base, ok := strings.CutSuffix(de.Name(), ".gguf")
		if !ok {
			continue
		}
		if e, err := s.Resolve(base); err == nil {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name.String() < out[j].Name.String() })
	return out, nil
}
