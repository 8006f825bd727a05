package models

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// ErrDigestMismatch is wrapped when data does not have the digest it was
// announced with.
var ErrDigestMismatch = errors.New("digest mismatch")

// ErrInvalidDigest is wrapped for a digest that is not "sha256:" followed
// by 64 lower-case hex digits.
var ErrInvalidDigest = errors.New("invalid digest")

// ErrBlobTooLarge is wrapped when a blob is larger than the store's
// MaxBlobSize.
var ErrBlobTooLarge = errors.New("blob too large")

// ErrInsufficientStorage is wrapped when writing would leave less free
// disk than the store's MinFreeDisk, or the disk is full.
var ErrInsufficientStorage = errors.New("not enough free disk space")

// CheckCapacity tells whether blobs of the given sizes (bytes; a size
// below zero is unknown) may be written: each within MaxBlobSize, and
// all together leaving MinFreeDisk free on the store's file system. It
// is checked before an upload, import, pull or quantization starts, so a
// client learns at once that the data will not fit.
func (s *Store) CheckCapacity(sizes ...int64) error {
	var total uint64
	for _, n := range sizes {
		if s.MaxBlobSize > 0 && n > s.MaxBlobSize {
			return fmt.Errorf("%w: %d bytes, the server accepts at most %d (--max-blob-size)", ErrBlobTooLarge, n, s.MaxBlobSize)
		}
		if n > 0 {
			total += uint64(n)
		}
	}
	return s.checkFree(total)
}

// checkFree refuses a write of need bytes that would leave less than
// MinFreeDisk free (or that does not fit at all). The floor applies to
// the directory the blobs go to (or the store's, before it exists).
func (s *Store) checkFree(need uint64) error {
	if (s.MinFreeDisk <= 0 && need == 0) || s.Dir == "" {
		return nil
	}
	dir := s.blobsDir()
	if _, err := os.Stat(dir); err != nil {
		dir = s.Dir
	}
	free, ok := diskFree(dir)
	if !ok {
		return nil
	}
	floor := uint64(max(s.MinFreeDisk, 0))
	if free < floor || free-floor < need {
		return fmt.Errorf("%w: %d MiB free on the models disk, %d MiB needed and %d MiB must stay free (--min-free-disk)",
			ErrInsufficientStorage, free>>20, need>>20, floor>>20)
	}
	return nil
}

// diskError marks a write that failed because the disk is full.
func diskError(err error) error {
	if errors.Is(err, syscall.ENOSPC) && !errors.Is(err, ErrInsufficientStorage) {
		return fmt.Errorf("%w: %w", ErrInsufficientStorage, err)
	}
	return err
}

// capReader reads at most max bytes and then fails with
// [ErrBlobTooLarge] (max <= 0: no limit).
type capReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *capReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.max > 0 && c.n > c.max {
		return n, fmt.Errorf("%w: more than %d bytes (--max-blob-size)", ErrBlobTooLarge, c.max)
	}
	return n, err
}

var digestRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// blobFileRe matches the file names of finished blobs in blobs/.
var blobFileRe = regexp.MustCompile(`^sha256-[0-9a-f]{64}$`)

// blobTempPrefix starts the names of blobs being written; nothing else
// in blobs/ has it, and garbage collection leaves such files alone
// unless they are a day old (left behind by a crash).
const blobTempPrefix = "tmp-blob-"

// ValidDigest reports whether d is a well-formed blob digest,
// "sha256:<64 lower-case hex digits>".
func ValidDigest(d string) bool { return digestRe.MatchString(d) }

// DigestBytes is the blob digest of b: "sha256:<hex>".
func DigestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func checkDigest(d string) error {
	if !ValidDigest(d) {
		return fmt.Errorf("%w %q: want sha256:<64 hex digits>", ErrInvalidDigest, d)
	}
	return nil
}

func (s *Store) blobsDir() string { return filepath.Join(s.Dir, "blobs") }

// blobPath is where the blob with digest d lives. d must be valid: the
// file name is built only from the checked hex digits, so it cannot
// point outside blobs/.
func (s *Store) blobPath(d string) (string, error) {
	if s.Dir == "" {
		return "", errNoDir
	}
	if err := checkDigest(d); err != nil {
		return "", err
	}
	return filepath.Join(s.blobsDir(), "sha256-"+d[len("sha256:"):]), nil
}

// BlobPath is the path of the blob with the given digest, which may not
// exist yet (a download writes it); the blobs directory is created if
// needed. A malformed digest is an error wrapping [ErrInvalidDigest].
// The blob is protected from garbage collection for a while (see
// [Store.Delete]) so that a manifest can be written for it.
func (s *Store) BlobPath(digest string) (string, error) {
	p, err := s.blobPath(digest)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(s.blobsDir(), 0o755); err != nil {
		return "", fmt.Errorf("blob %s: %w", digest, err)
	}
	s.pin(digest)
	return p, nil
}

// HasBlob reports whether the store holds the blob with the given digest.
// A blob it reports is protected from garbage collection for a while, so
// a caller can reference it in a manifest it is about to write.
func (s *Store) HasBlob(digest string) bool {
	p, err := s.blobPath(digest)
	if err != nil {
		return false
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	s.pin(digest)
	return true
}

// WriteBlob streams r into the store and returns its digest and size.
// The data goes to a temporary file in blobs/ that is renamed into place
// only once complete (and, when wantDigest is not empty, only when the
// data has that digest; otherwise the error wraps [ErrDigestMismatch] and
// nothing is kept). Writing a blob the store already has is harmless.
func (s *Store) WriteBlob(r io.Reader, wantDigest string) (digest string, size int64, err error) {
	digest, size, _, err = s.writeBlob(r, wantDigest)
	return digest, size, err
}

// writeBlob is WriteBlob that also tells whether the blob was there.
func (s *Store) writeBlob(r io.Reader, wantDigest string) (digest string, size int64, existed bool, err error) {
	if s.Dir == "" {
		return "", 0, false, errNoDir
	}
	if wantDigest != "" {
		if err := checkDigest(wantDigest); err != nil {
			return "", 0, false, err
		}
	}
	if err := s.checkFree(0); err != nil {
		return "", 0, false, fmt.Errorf("write blob: %w", err)
	}
	if err := os.MkdirAll(s.blobsDir(), 0o755); err != nil {
		return "", 0, false, fmt.Errorf("write blob: %w", diskError(err))
	}
	f, err := os.CreateTemp(s.blobsDir(), blobTempPrefix+"*")
	if err != nil {
		return "", 0, false, fmt.Errorf("write blob: %w", diskError(err))
	}
	tmp := f.Name()
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	size, err = io.Copy(io.MultiWriter(f, h), &capReader{r: r, max: s.MaxBlobSize})
	if err != nil {
		return "", 0, false, fmt.Errorf("write blob: %w", diskError(err))
	}
	digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	if wantDigest != "" && digest != wantDigest {
		return "", 0, false, fmt.Errorf("write blob: %w: announced %s, data has %s", ErrDigestMismatch, wantDigest, digest)
	}
	if err = f.Sync(); err != nil {
		return "", 0, false, fmt.Errorf("write blob: %w", diskError(err))
	}
	if err = f.Close(); err != nil {
		f = nil
		return "", 0, false, fmt.Errorf("write blob: %w", diskError(err))
	}
	f = nil
	final, _ := s.blobPath(digest)
	s.pin(digest)
	if fi, statErr := os.Stat(final); statErr == nil && fi.Mode().IsRegular() && fi.Size() == size {
		os.Remove(tmp) // already there: keep the existing file
		return digest, size, true, nil
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return "", 0, false, fmt.Errorf("write blob: %w", err)
	}
	if err = os.Rename(tmp, final); err != nil {
		return "", 0, false, fmt.Errorf("write blob: %w", err)
	}
	return digest, size, false, nil
}

// readBlob reads a small blob (template, params, ...) whole. Blobs
// larger than max are refused rather than read into memory.
func (s *Store) readBlob(d string, max int64) ([]byte, error) {
	p, err := s.blobPath(d)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("blob %s is larger than %d bytes", d, max)
	}
	return b, nil
}

// pinFor is how long a blob written or looked up through the store is
// kept from garbage collection when no manifest references it yet: an
// upload followed by a create, or a download followed by its manifest.
const pinFor = time.Hour

// pin protects a blob from garbage collection for pinFor.
func (s *Store) pin(d string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pinned == nil {
		s.pinned = map[string]time.Time{}
	}
	s.pinned[d] = time.Now()
}

// pinnedLocked reports whether a blob is pinned; s.mu is held.
func (s *Store) pinnedLocked(d string, now time.Time) bool {
	t, ok := s.pinned[d]
	if ok && now.Sub(t) > pinFor {
		delete(s.pinned, d)
		return false
	}
	return ok
}

// blobDigestOfFile turns a blob file name back into its digest, or "".
func blobDigestOfFile(name string) string {
	if !blobFileRe.MatchString(name) {
		return ""
	}
	return "sha256:" + strings.TrimPrefix(name, "sha256-")
}
