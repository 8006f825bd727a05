package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Copy makes dst a copy of the model src (Ollama's "cp"): dst gets the
// same manifest, so the two share every blob. Copying a bare GGUF file
// imports it into the blobs first. An existing dst is replaced.
func (s *Store) Copy(src, dst string) error {
	sn, err := ParseName(src)
	if err != nil {
		return err
	}
	dn, err := ParseName(dst)
	if err != nil {
		return err
	}
	if s.Dir == "" {
		return errNoDir
	}
	defer s.lockName(dn)()
	// The source is read and the copy written under the store's lock,
	// which a delete holds too: the source is copied whole or not found.
	s.mu.Lock()
	p, _, err := s.findManifest(sn)
	if errors.Is(err, fs.ErrNotExist) {
		s.mu.Unlock()
		if bp, _, ok := s.bareFile(sn); ok {
			mf := &Modelfile{Commands: []Command{{Name: CmdFrom, Value: bp}}}
			return s.create(dn, mf, nil)
		}
		return fmt.Errorf("copy %s: model %q: %w", sn, sn.String(), ErrNotFound)
	} else if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("copy %s: %w", sn, err)
	}
	defer s.mu.Unlock()
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("copy %s: model %q: %w", sn, sn.String(), ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("copy %s: %w", sn, err)
	}
	if err := s.writeManifestLocked(dn, raw); err != nil {
		return fmt.Errorf("copy %s to %s: %w", sn, dn, err)
	}
	return nil
}

// Delete removes a model: its manifest, then every blob that no manifest
// references any more. Blobs another model uses are never removed, nor
// are blobs this Store wrote or looked up in the last hour that no
// manifest references yet (an upload waiting for its create, a download
// waiting for its manifest). If some manifest cannot be read and was
// changed in the last minute (another process may be writing it), no
// blob is removed this time. A bare NAME.gguf model is deleted by
// removing the file (or the link to it).
func (s *Store) Delete(name string) error {
	n, err := ParseName(name)
	if err != nil {
		return err
	}
	if s.Dir == "" {
		return fmt.Errorf("delete %s: %w", n, ErrNotFound)
	}
	defer s.lockName(n)()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, _, err := s.findManifest(n)
	if errors.Is(err, fs.ErrNotExist) {
		if bp, _, ok := s.bareFile(n); ok {
			if err := os.Remove(bp); err != nil {
				return fmt.Errorf("delete %s: %w", n, err)
			}
			return nil
		}
		return fmt.Errorf("delete %s: model %q: %w", n, n.String(), ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("delete %s: %w", n, err)
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("delete %s: %w", n, err)
	}
	s.pruneManifestDirs(filepath.Dir(p))
	if err := s.gcLocked(); err != nil {
		return fmt.Errorf("delete %s: model removed, but cleaning blobs failed: %w", n, err)
	}
	return nil
}

// gcLocked removes unreferenced blobs; s.mu is held.
func (s *Store) gcLocked() error {
	refs, ok, err := s.referencedBlobs()
	if err != nil || !ok {
		return err
	}
	des, err := os.ReadDir(s.blobsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	now := time.Now()
	var errs []error
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, blobTempPrefix) {
			// A crash left it behind if it is a day old.
			if fi, err := de.Info(); err == nil && now.Sub(fi.ModTime()) > 24*time.Hour {
				os.Remove(filepath.Join(s.blobsDir(), name))
			}
			continue
		}
		d := blobDigestOfFile(name)
		if d == "" || refs[d] || s.pinnedLocked(d, now) {
			continue // not a blob (e.g. a partial download), or in use
		}
		if err := os.Remove(filepath.Join(s.blobsDir(), name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// referencedBlobs collects the digests every file under manifests/
// references, at any depth and whatever its name. ok is false when a
// manifest could not be read and may be in the middle of being written.
func (s *Store) referencedBlobs() (refs map[string]bool, ok bool, err error) {
	refs = map[string]bool{}
	ok = true
	now := time.Now()
	err = filepath.WalkDir(s.manifestsDir(), func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !de.Type().IsRegular() {
			return nil
		}
		var m struct {
			Config struct{ Digest string }
			Layers []struct{ Digest string }
		}
		b, readErr := os.ReadFile(p)
		if readErr == nil {
			readErr = json.Unmarshal(b, &m)
		}
		if readErr != nil {
			if fi, err := de.Info(); err != nil || now.Sub(fi.ModTime()) < time.Minute {
				ok = false
			}
			return nil
		}
		refs[m.Config.Digest] = true
		for _, l := range m.Layers {
			refs[l.Digest] = true
		}
		return nil
	})
	return refs, ok, err
}
