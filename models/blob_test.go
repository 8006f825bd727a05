package models

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	return &Store{Dir: t.TempDir()}
}

// blobFiles lists the file names in the store's blobs directory.
func blobFiles(t *testing.T, s *Store) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(s.Dir, "blobs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func TestWriteBlob(t *testing.T) {
	s := newStore(t)
	data := []byte("hello, blobs")
	want := DigestBytes(data)
	d, n, err := s.WriteBlob(bytes.NewReader(data), "")
	if err != nil || d != want || n != int64(len(data)) {
		t.Fatalf("WriteBlob = %q, %d, %v; want %q, %d", d, n, err, want, len(data))
	}
	p, err := s.BlobPath(d)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("blob file holds %q, %v", got, err)
	}
	if filepath.Base(p) != "sha256-"+want[7:] || filepath.Dir(p) != filepath.Join(s.Dir, "blobs") {
		t.Errorf("BlobPath = %s, want blobs/sha256-<hex>", p)
	}
	if !s.HasBlob(d) {
		t.Error("HasBlob = false after WriteBlob")
	}
	// Again, with the digest announced: harmless.
	if d2, _, err := s.WriteBlob(bytes.NewReader(data), want); err != nil || d2 != want {
		t.Fatalf("second WriteBlob = %q, %v", d2, err)
	}
	if files := blobFiles(t, s); len(files) != 1 {
		t.Errorf("blobs/ holds %q, want one file", files)
	}
}

func TestWriteBlobDigestMismatch(t *testing.T) {
	s := newStore(t)
	wrong := DigestBytes([]byte("something else"))
	_, _, err := s.WriteBlob(strings.NewReader("the real data"), wrong)
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("err = %v, want ErrDigestMismatch", err)
	}
	if s.HasBlob(wrong) || s.HasBlob(DigestBytes([]byte("the real data"))) {
		t.Error("a blob was kept after a digest mismatch")
	}
	if files := blobFiles(t, s); len(files) != 0 {
		t.Errorf("blobs/ holds %q after a failed write, want nothing", files)
	}
}

func TestWriteBlobReadError(t *testing.T) {
	s := newStore(t)
	r := io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(errors.New("connection reset")))
	if _, _, err := s.WriteBlob(r, ""); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("err = %v", err)
	}
	if files := blobFiles(t, s); len(files) != 0 {
		t.Errorf("blobs/ holds %q after a failed write, want nothing", files)
	}
}

func TestBlobDigestValidation(t *testing.T) {
	s := newStore(t)
	hex := strings.Repeat("ab", 32)
	bad := []string{
		"", "sha256:", "sha256:" + hex[:63], "sha256:" + hex + "0", "sha256:" + strings.ToUpper(hex),
		"sha256-" + hex, "sha512:" + hex, "sha256:../../../../etc/passwd", "sha256:" + hex[:62] + "/.",
		"../sha256:" + hex, "sha256:" + hex + "/../x", hex,
	}
	for _, d := range bad {
		if p, err := s.BlobPath(d); !errors.Is(err, ErrInvalidDigest) {
			t.Errorf("BlobPath(%q) = %q, %v; want ErrInvalidDigest", d, p, err)
		}
		if s.HasBlob(d) {
			t.Errorf("HasBlob(%q) = true", d)
		}
		if _, _, err := s.WriteBlob(strings.NewReader("x"), d); d != "" && !errors.Is(err, ErrInvalidDigest) {
			t.Errorf("WriteBlob(…, %q) = %v; want ErrInvalidDigest", d, err)
		}
	}
	if p, err := s.BlobPath("sha256:" + hex); err != nil || p != filepath.Join(s.Dir, "blobs", "sha256-"+hex) {
		t.Errorf("BlobPath(valid) = %q, %v", p, err)
	}
}

func TestZeroStore(t *testing.T) {
	var s Store
	if _, err := s.Resolve("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve on the zero Store: %v", err)
	}
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Errorf("List on the zero Store = %v, %v", l, err)
	}
	if _, _, err := s.WriteBlob(strings.NewReader("x"), ""); err == nil {
		t.Error("WriteBlob on the zero Store succeeded")
	}
}
