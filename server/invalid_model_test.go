package server

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// writeBlockCount writes a copy of stories260K whose llama.block_count is
// v (the crafted files of issue 19) and returns its path.
func writeBlockCount(t *testing.T, dir, name string, v any) string {
	t.Helper()
	p := filepath.Join(dir, name)
	err := gguf.Rewrite(p, testmodels.Testdata("stories260K.gguf"), func(kvs []gguf.KV) []gguf.KV {
		return gguf.SetKV(kvs, "llama.block_count", v)
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 19: a stories260K copy whose block_count is 2^37 (u64) or
// 0xFFFFFFFF (u32), uploaded with the Ollama API client's CreateBlob and
// Create, used to be accepted and then ended the process with "out of
// memory" at the first generate. Now create answers 400 naming
// block_count and writes nothing; a broken NAME.gguf in the models
// directory is not listed and a request for it is a 400; valid creates
// and generations still work.
func TestCreateRefusesBrokenGGUF(t *testing.T) {
	dir := testModels(t, "stories")
	writeBlockCount(t, dir, "broken.gguf", uint32(0xFFFFFFFF))
	srv := New(Config{ModelsDir: dir, Sched: testSched(1, 256)})
	ts := serveForTest(t, srv)
	ctx := context.Background()
	src := t.TempDir()

	for _, tc := range []struct {
		name   string
		value  any
		want   string
		stream *bool
	}{
		{"u64", uint64(1) << 37, "llama.block_count is 137438953472 but the file has tensors for 5 blocks", nil},
		{"u32", uint32(0xFFFFFFFF), "llama.block_count is 4294967295 but the file has tensors for 5 blocks", ptr(false)},
	} {
		digest, data := fileDigest(t, writeBlockCount(t, src, tc.name+".gguf", tc.value))
		if err := ts.Client.CreateBlob(ctx, digest, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatalf("%s: upload: %v", tc.name, err)
		}
		err := ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "bad", Files: map[string]string{"x.gguf": digest}, Stream: tc.stream},
			func(ollamaapi.ProgressResponse) error { return nil })
		var se client.StatusError
		if !asStatus(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.Message, tc.want) {
			t.Errorf("%s: create = %v, want a 400 containing %q", tc.name, err, tc.want)
		}
		// The same blob as "from".
		err = ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "bad", From: "@" + digest, System: "hi"},
			func(ollamaapi.ProgressResponse) error { return nil })
		if !asStatus(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.Message, "block_count") {
			t.Errorf("%s: create from the blob = %v, want a 400 naming block_count", tc.name, err)
		}
	}

	list, err := ts.Client.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "stories:latest" {
		t.Errorf("models %v, want only stories:latest", names)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "manifests")); len(entries) != 0 {
		t.Errorf("a refused create wrote manifests: %v", entries)
	}

	// The broken file in the directory: a 400 naming the key, the server
	// keeps serving.
	err = ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "broken", Prompt: "Once", Options: map[string]any{"num_predict": 2}},
		func(ollamaapi.GenerateResponse) error { return nil })
	var se client.StatusError
	if !asStatus(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.Message, "llama.block_count is 4294967295") {
		t.Errorf("generate with the broken model: %v", err)
	}
	if _, err := ts.Client.Show(ctx, &ollamaapi.ShowRequest{Model: "broken"}); !asStatus(err, &se) || se.StatusCode != http.StatusBadRequest {
		t.Errorf("show of the broken model: %v", err)
	}

	// A valid create and a generation on it still work.
	digest, data := fileDigest(t, testmodels.Testdata("stories260K.gguf"))
	if err := ts.Client.CreateBlob(ctx, digest, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if err := ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "good", Files: map[string]string{"x.gguf": digest}},
		func(ollamaapi.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var text string
	err = ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "good", Prompt: "Once upon a time", Stream: ptr(false),
		Options: map[string]any{"num_predict": 4, "temperature": 0}}, func(r ollamaapi.GenerateResponse) error { text += r.Response; return nil })
	if err != nil || text == "" {
		t.Fatalf("generate with the valid model: %q, %v", text, err)
	}
}

// A GGUF of an architecture the engine does not know (stories260K with
// its architecture renamed) is a 400 naming the architecture and the
// llama.cpp release: at create (from an uploaded blob, as files and as
// FROM) and at first use (a NAME.gguf in the models directory); the
// server keeps serving.
func TestUnknownArchitecture(t *testing.T) {
	dir := testModels(t, "stories")
	alien := func(path string) {
		err := gguf.Rewrite(path, testmodels.Testdata("stories260K.gguf"), func(kvs []gguf.KV) []gguf.KV {
			for i := range kvs {
				if kvs[i].Key == "general.architecture" {
					kvs[i].Value = "tadpolenet"
				} else if k, ok := strings.CutPrefix(kvs[i].Key, "llama."); ok {
					kvs[i].Key = "tadpolenet." + k
				}
			}
			return kvs
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	alien(filepath.Join(dir, "alien.gguf"))
	srv := New(Config{ModelsDir: dir, Sched: sched.Config{Parallel: 1, NumCtx: 256, KeepAlive: time.Minute, Threads: 1}})
	ts := serveForTest(t, srv)
	ctx := context.Background()
	want := []string{`"tadpolenet"`, engine.LlamaRelease()}
	check := func(what string, err error) {
		t.Helper()
		var se client.StatusError
		if !asStatus(err, &se) || se.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %v, want a 400", what, err)
			return
		}
		for _, w := range want {
			if !strings.Contains(se.Message, w) {
				t.Errorf("%s: %q does not name %s", what, se.Message, w)
			}
		}
	}

	err := ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "alien", Prompt: "Once", Options: map[string]any{"num_predict": 2}},
		func(ollamaapi.GenerateResponse) error { return nil })
	check("generate", err)

	src := filepath.Join(t.TempDir(), "alien.gguf")
	alien(src)
	digest, data := fileDigest(t, src)
	if err := ts.Client.CreateBlob(ctx, digest, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	err = ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "alien2", Files: map[string]string{"x.gguf": digest}},
		func(ollamaapi.ProgressResponse) error { return nil })
	check("create from files", err)
	err = ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "alien3", From: "@" + digest, Stream: ptr(false)},
		func(ollamaapi.ProgressResponse) error { return nil })
	check("create from the blob", err)

	var text string
	err = ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Stream: ptr(false),
		Options: map[string]any{"num_predict": 4, "temperature": 0}}, func(r ollamaapi.GenerateResponse) error { text += r.Response; return nil })
	if err != nil || text == "" {
		t.Fatalf("generate with the valid model after: %q, %v", text, err)
	}
}
