package server

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// A model file replaced or truncated after it was loaded (issue 19's
// fault matrix): the old instance is never served again, the new file is
// validated when it loads, and a broken one is a clear 400 while the
// server goes on serving.
func TestModelFileChangedAfterLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	copyFile(t, testmodels.Testdata("stories260K.gguf"), path)
	if err := testmodels.WriteBigram(filepath.Join(dir, "bigram.gguf")); err != nil {
		t.Fatal(err)
	}
	srv := New(Config{ModelsDir: dir, Sched: testSched(2, 256)})
	ts := serveForTest(t, srv)
	gen := func() (string, error) {
		var out string
		err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "m", Prompt: "Once upon a time", Stream: ptr(false), Options: greedyOpts(12)},
			func(r ollamaapi.GenerateResponse) error { out = r.Response; return nil })
		return out, err
	}
	story, err := gen()
	if err != nil || !strings.HasPrefix(story, ", there was a little girl") {
		t.Fatalf("%q %v", story, err)
	}
	old := srv.sched.Loaded()[0]

	// Replaced atomically (written beside it, renamed over it) with
	// another model: the next request gets the new model.
	next := filepath.Join(dir, "m.gguf.new")
	copyFile(t, filepath.Join(dir, "bigram.gguf"), next)
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	if got, err := gen(); err != nil || got == story {
		t.Fatalf("after the file was replaced: %q %v (the old model answered)", got, err)
	}
	for _, in := range srv.sched.Loaded() {
		if in == old {
			t.Fatal("the instance of the replaced file is still loaded")
		}
	}

	// Truncated in place while its instance is idle: refused with a 400
	// naming the problem; the server serves other models.
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	_, err = gen()
	var se client.StatusError
	if !asStatus(err, &se) || se.StatusCode != 400 {
		t.Fatalf("truncated model: %v", err)
	}
	// (The idle instance of the previous version stays until its
	// keep_alive ends: the store refuses the name before the scheduler is
	// asked, so no request reaches it, and unloading it is only an unmap.)
	var chat ollamaapi.ChatResponse
	if err := ts.Client.Chat(context.Background(), &ollamaapi.ChatRequest{Model: "bigram", Messages: []ollamaapi.Message{{Role: "user", Content: "Hi"}}, Stream: ptr(false), Options: greedyOpts(40)},
		func(r ollamaapi.ChatResponse) error { chat = r; return nil }); err != nil || chat.Message.Content != testmodels.BigramAnswer {
		t.Fatalf("another model after the truncation: %v %q", err, chat.Message.Content)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
