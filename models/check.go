package models

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// ErrInvalidModel is wrapped for a GGUF file llama.cpp cannot load: not a
// GGUF file, truncated, or refused by [gguf.File.Validate] (a header that
// contradicts its tensors, or a count llama.cpp would abort on or
// allocate without bound from). Such a file never enters the store by
// create or pull, and a model whose file is one (a NAME.gguf copied into
// the directory, a blob changed on disk) is left out of List and refused
// by Resolve, so nothing sizes memory from it.
var ErrInvalidModel = errors.New("invalid model file")

// invalidModelError wraps the reason a file was refused; it matches
// ErrInvalidModel and the gguf error with errors.Is.
type invalidModelError struct{ err error }

func (e *invalidModelError) Error() string   { return "not a usable GGUF file: " + e.err.Error() }
func (e *invalidModelError) Unwrap() []error { return []error{ErrInvalidModel, e.err} }

// CheckGGUF reads the header of the GGUF file at path and validates it.
// A file whose content is at fault gives an error wrapping
// [ErrInvalidModel] that names the key and the bad value; an error
// reading the file (missing, unreadable) is returned as it is.
func CheckGGUF(path string) (*gguf.File, error) {
	f, err := gguf.ValidateFile(path)
	if err != nil {
		if errors.Is(err, gguf.ErrNotGGUF) || errors.Is(err, gguf.ErrUnsupportedVersion) || errors.Is(err, gguf.ErrCorrupt) ||
			errors.Is(err, gguf.ErrInvalid) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, &invalidModelError{err}
		}
		return nil, err
	}
	return f, nil
}

// CheckBlob validates the GGUF blob with the given digest ("sha256:…");
// see [CheckGGUF].
func (s *Store) CheckBlob(digest string) error {
	p, err := s.blobPath(digest)
	if err != nil {
		return err
	}
	return s.checkFile(p)
}

// checkedFile is the outcome of validating one version of a file.
type checkedFile struct {
	size    int64
	modTime time.Time
	err     error
}

// checkFile validates the GGUF file at p through a cache keyed by its
// size and modification time, so that listing the store does not read
// every header every time and a changed file is checked again.
func (s *Store) checkFile(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	c, ok := s.checked[p]
	s.mu.Unlock()
	if ok && c.size == fi.Size() && c.modTime.Equal(fi.ModTime()) {
		return c.err
	}
	_, err = CheckGGUF(p)
	if err != nil && !errors.Is(err, ErrInvalidModel) {
		return err // not the file's content: do not remember it
	}
	s.mu.Lock()
	if s.checked == nil {
		s.checked = map[string]checkedFile{}
	}
	s.checked[p] = checkedFile{size: fi.Size(), modTime: fi.ModTime(), err: err}
	s.mu.Unlock()
	return err
}

// warnInvalid logs that a model is left out of the store's list, once
// until its reason changes (List runs for every /api/tags).
func (s *Store) warnInvalid(name Name, path string, err error) {
	msg := err.Error()
	s.mu.Lock()
	first := s.warned[name.Full()] != msg
	if first {
		if s.warned == nil {
			s.warned = map[string]string{}
		}
		s.warned[name.Full()] = msg
	}
	s.mu.Unlock()
	if first {
		slog.Warn("model skipped: its GGUF file cannot be loaded", "model", name.String(), "path", path, "error", err)
	}
}
