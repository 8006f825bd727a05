package models

import (
	"path/filepath"
	"slices"
	"strings"
)

// redactedError is an error whose text has the store's paths replaced;
// errors.Is and errors.As still see the original.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Redact returns err with the store's paths taken out of its text, for
// an error a client sees: a blob's path becomes its digest ("sha256:…"),
// any other path in the models directory becomes relative to it. A
// client is never shown where the server keeps its files.
func (s *Store) Redact(err error) error {
	if err == nil || s.Dir == "" {
		return err
	}
	msg := err.Error()
	out := msg
	dirs := []string{s.Dir}
	if abs, aerr := filepath.Abs(s.Dir); aerr == nil && abs != s.Dir {
		dirs = append(dirs, abs)
	}
	if real, rerr := filepath.EvalSymlinks(s.Dir); rerr == nil {
		dirs = append(dirs, real)
	}
	// The longest first: one may end with another ("/private/tmp/m").
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	sep := string(filepath.Separator)
	for _, d := range dirs {
		d = filepath.Clean(d)
		out = strings.ReplaceAll(out, filepath.Join(d, "blobs")+sep+"sha256-", "sha256:")
		out = strings.ReplaceAll(out, d+sep, "")
		out = strings.ReplaceAll(out, d, "the models directory")
	}
	if out == msg {
		return err
	}
	return &redactedError{err: err, msg: out}
}
