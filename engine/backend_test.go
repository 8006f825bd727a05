package engine

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A backend library that cannot load is a warning naming the file and the
// reason; a missing directory is not an error. The CPU keeps working.
func TestLoadBackendsFailures(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	dir := t.TempDir()
	bad := filepath.Join(dir, "libggml-cuda.so")
	if err := os.WriteFile(bad, []byte("not a shared library"), 0o644); err != nil {
		t.Fatal(err)
	}
	loadBackends(dir)
	loadBackends(filepath.Join(dir, "missing"))
	out := buf.String()
	if !strings.Contains(out, "GPU backend failed to load") || !strings.Contains(out, bad) || !strings.Contains(out, "reason=") {
		t.Fatalf("log:\n%s", out)
	}
	if !strings.Contains(out, "no GPU backends") {
		t.Fatalf("missing directory not reported:\n%s", out)
	}
	for _, d := range Devices() {
		if d.Type == "gpu" {
			t.Fatalf("a GPU appeared from a broken library: %+v", d)
		}
	}
	m := loadStories(t)
	toks, _ := m.Tokenize("Once upon a time", true, false)
	if text, _ := greedy(t, m, toks, 10); !strings.HasPrefix(storiesContinuation, text) {
		t.Fatalf("CPU generation after a failed backend: %q", text)
	}
}
