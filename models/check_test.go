package models

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// writeBadStories writes a copy of stories260K whose llama.block_count is
// v to path.
func writeBadStories(t *testing.T, path string, v any) {
	t.Helper()
	err := gguf.Rewrite(path, testmodels.Testdata("stories260K.gguf"), func(kvs []gguf.KV) []gguf.KV {
		return gguf.SetKV(kvs, "llama.block_count", v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, dst, src string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// captureWarnings sends slog's default logger to a buffer for the test.
func captureWarnings(t *testing.T) *bytes.Buffer {
	var b bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&b, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &b
}

// A broken NAME.gguf in the models directory and a manifest whose model
// blob is broken are left out of List with one logged warning each, and
// resolving them is an error naming the key, not a model to load.
func TestStoreSkipsInvalidGGUF(t *testing.T) {
	logs := captureWarnings(t)
	s := newStore(t)
	copyFile(t, filepath.Join(s.Dir, "good.gguf"), testmodels.Testdata("stories260K.gguf"))
	writeBadStories(t, filepath.Join(s.Dir, "bad.gguf"), uint32(0xFFFFFFFF))

	// A manifest written without create (as an older Tadpole, or a copy
	// of another store, might have).
	badBlob := filepath.Join(t.TempDir(), "bad.gguf")
	writeBadStories(t, badBlob, uint64(1)<<37)
	f, err := os.Open(badBlob)
	if err != nil {
		t.Fatal(err)
	}
	d, size, _, err := s.writeBlob(f, "")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := ParseName("badmanifest")
	if err := s.WriteLayers(n, Layer{MediaType: MediaTypeModel, Digest: d, Size: size}); err != nil {
		t.Fatal(err)
	}

	for range 2 {
		list, err := s.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Name.Model != "good" {
			t.Fatalf("List = %v, want only good", list)
		}
	}
	for name, want := range map[string]string{
		"bad":         "llama.block_count is 4294967295 but the file has tensors for 5 blocks",
		"badmanifest": "llama.block_count is 137438953472 but the file has tensors for 5 blocks",
	} {
		_, err := s.Resolve(name)
		if !errors.Is(err, ErrInvalidModel) || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%s) = %v, want %q", name, err, want)
		}
		if got := strings.Count(logs.String(), "model="+name+":latest"); got != 1 {
			t.Errorf("%s: %d warnings logged, want 1:\n%s", name, got, logs)
		}
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("logs: %s", logs)
	}

	// A listed model whose file is replaced by a broken one leaves the
	// list; fixed again, it comes back.
	good := filepath.Join(s.Dir, "good.gguf")
	writeBadStories(t, good, uint32(0))
	if list, _ := s.List(); len(list) != 0 {
		t.Fatalf("List after breaking good.gguf = %v", list)
	}
	copyFile(t, good, testmodels.Testdata("stories260K.gguf"))
	if list, _ := s.List(); len(list) != 1 {
		t.Fatalf("List after fixing good.gguf = %v", list)
	}
}

// Create refuses a broken GGUF given as a path or as a blob, naming the
// key; no manifest is written and an imported file leaves no blob.
func TestCreateRefusesInvalidGGUF(t *testing.T) {
	s := newStore(t)
	src := t.TempDir()
	bad64, bad32 := filepath.Join(src, "bad64.gguf"), filepath.Join(src, "bad32.gguf")
	writeBadStories(t, bad64, uint64(1)<<37)
	writeBadStories(t, bad32, uint32(0xFFFFFFFF))
	f, err := os.Open(bad64)
	if err != nil {
		t.Fatal(err)
	}
	digest, _, _, err := s.writeBlob(f, "")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	blobsBefore := blobFiles(t, s)

	for _, from := range []string{bad32, "@" + digest, digest} {
		mf, err := ParseModelfile(strings.NewReader("FROM " + from + "\nSYSTEM hi\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Create("bad", mf, nil)
		if !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), "llama.block_count is ") {
			t.Errorf("FROM %s: %v", from, err)
		}
		if _, err := s.Resolve("bad"); !errors.Is(err, ErrNotFound) {
			t.Errorf("FROM %s: the model exists after a refused create: %v", from, err)
		}
	}
	if got := blobFiles(t, s); len(got) != len(blobsBefore) {
		t.Errorf("blobs %v, want %v: a refused import wrote a blob", got, blobsBefore)
	}
	// A valid create still works.
	mf, _ := ParseModelfile(strings.NewReader("FROM " + testmodels.Testdata("stories260K.gguf") + "\n"))
	if err := s.Create("good", mf, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve("good"); err != nil {
		t.Fatal(err)
	}
}

// CheckGGUF tells a file's content at fault (ErrInvalidModel) from an
// error reading it.
func TestCheckGGUFErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello"), 0o644)
	trunc := filepath.Join(dir, "trunc.gguf")
	b, _ := os.ReadFile(testmodels.Testdata("stories260K.gguf"))
	os.WriteFile(trunc, b[:len(b)/2], 0o644)
	for _, p := range []string{text, trunc, testmodels.Testdata("unsupported/tinyllamas-stories-260k-f32.gguf")} {
		if _, err := CheckGGUF(p); !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), "not a usable GGUF file") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := CheckGGUF(filepath.Join(dir, "missing.gguf")); err == nil || errors.Is(err, ErrInvalidModel) {
		t.Errorf("missing file: %v", err)
	}
}
