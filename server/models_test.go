package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/registry/registrytest"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

func fileDigest(t *testing.T, path string) (string, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), b
}

func TestModelLifecycle(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	list, err := ts.Client.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	// The bare files of the test store (old.gguf and junk.gguf are not
	// GGUF files llama.cpp loads: they are left out).
	if !strings.Contains(strings.Join(names, ","), "bigram:latest") || !strings.Contains(strings.Join(names, ","), "stories:latest") {
		t.Fatalf("list: %v", names)
	}

	// Create from an uploaded GGUF with parameters, a system prompt and a
	// template, as Ollama's clients do (blobs first, then create).
	digest, data := fileDigest(t, testmodels.Testdata("stories260K.gguf"))
	if err := ts.Client.CreateBlob(ctx, digest, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	var statuses []string
	err = ts.Client.Create(ctx, &ollamaapi.CreateRequest{
		Model: "mystories", Files: map[string]string{"stories260K.gguf": digest},
		System: "Tell a story.", Parameters: map[string]any{"temperature": 0, "num_predict": 12, "stop": []string{"Lily"}},
		License: "MIT",
	}, func(p ollamaapi.ProgressResponse) error { statuses = append(statuses, p.Status); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if statuses[len(statuses)-1] != "success" {
		t.Fatalf("create statuses %v", statuses)
	}
	show, err := ts.Client.Show(ctx, &ollamaapi.ShowRequest{Model: "mystories"})
	if err != nil {
		t.Fatal(err)
	}
	if show.System != "Tell a story." || show.License != "MIT" || !strings.Contains(show.Parameters, "num_predict") ||
		!strings.Contains(show.Modelfile, "PARAMETER stop Lily") || show.Details.Family != "llama" || show.Details.QuantizationLevel != "F32" ||
		show.ModelInfo["llama.context_length"] == nil {
		t.Fatalf("show: %+v", show)
	}
	if show.ModelInfo["tokenizer.ggml.tokens"] != nil {
		t.Fatal("vocabulary shown without verbose")
	}
	// The model's parameters apply: greedy, 12 tokens at most, stop at "Lily".
	var got ollamaapi.GenerateResponse
	err = ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "mystories", Prompt: "Once upon a time", Raw: true, Stream: ptr(false)},
		func(r ollamaapi.GenerateResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got.Response != ", there was a little girl named " || got.DoneReason != "stop" {
		t.Fatalf("model parameters not applied: %q %s", got.Response, got.DoneReason)
	}
	// Copy, then delete the original: the copy still works.
	if err := ts.Client.Copy(ctx, &ollamaapi.CopyRequest{Source: "mystories", Destination: "tales:v2"}); err != nil {
		t.Fatal(err)
	}
	if err := ts.Client.Delete(ctx, &ollamaapi.DeleteRequest{Model: "mystories"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Client.Show(ctx, &ollamaapi.ShowRequest{Model: "mystories"}); err == nil {
		t.Fatal("deleted model still shown")
	}
	err = ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "tales:v2", Prompt: "Once upon a time", Raw: true, Stream: ptr(false)},
		func(r ollamaapi.GenerateResponse) error { got = r; return nil })
	if err != nil || got.Response != ", there was a little girl named " {
		t.Fatalf("copy: %v %q", err, got.Response)
	}
	// A whole Modelfile (Tadpole's extra) FROM an existing model.
	err = ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "short", From: "tales:v2", Parameters: map[string]any{"num_predict": 3}}, func(ollamaapi.ProgressResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Quantize on create (a model whose rows fit Q8_0's 32-wide blocks).
	small := t.TempDir() + "/small.gguf"
	if err := testmodels.WriteRandomLlama(small, testmodels.Small, 0, 1); err != nil {
		t.Fatal(err)
	}
	sd, sdata := fileDigest(t, small)
	if err := ts.Client.CreateBlob(ctx, sd, bytes.NewReader(sdata), int64(len(sdata))); err != nil {
		t.Fatal(err)
	}
	if err := ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "small-q8", Files: map[string]string{"s.gguf": sd}, Quantize: "q8_0"}, func(ollamaapi.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if show, err := ts.Client.Show(ctx, &ollamaapi.ShowRequest{Model: "small-q8"}); err != nil || show.Details.QuantizationLevel != "Q8_0" {
		t.Fatalf("quantized: %v %+v", err, show.Details)
	}
	// Bad input.
	for _, tc := range []struct {
		req  *ollamaapi.CreateRequest
		code int
	}{
		{&ollamaapi.CreateRequest{Model: "x", From: "/etc/passwd"}, 400},
		{&ollamaapi.CreateRequest{Model: "x", From: "nope"}, 400},
		{&ollamaapi.CreateRequest{Model: "x", Files: map[string]string{"a": "sha256:" + strings.Repeat("0", 64)}}, 400},
		{&ollamaapi.CreateRequest{Model: "x", From: "tales:v2", Parameters: map[string]any{"tempurature": 1}}, 400},
		{&ollamaapi.CreateRequest{Model: "../x", From: "tales:v2"}, 400},
	} {
		err := ts.Client.Create(ctx, tc.req, func(ollamaapi.ProgressResponse) error { return nil })
		var se client.StatusError
		if !asStatus(err, &se) || se.StatusCode != tc.code {
			t.Errorf("create %+v: %v", tc.req, err)
		}
	}
	if err := ts.Client.CreateBlob(ctx, "sha256:"+strings.Repeat("1", 64), strings.NewReader("data"), 4); err == nil {
		t.Fatal("a blob with the wrong digest was accepted")
	}
	if err := ts.Client.Delete(ctx, &ollamaapi.DeleteRequest{Model: "nope"}); err == nil {
		t.Fatal("deleting an unknown model succeeded")
	}
}

// A model in use is not deleted under its requests.
func TestDeleteBusyModel(t *testing.T) {
	ts := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once", Options: map[string]any{"num_predict": -1}},
			func(ollamaapi.GenerateResponse) error {
				if n++; n == 1 {
					close(started)
				}
				return nil
			})
	}()
	<-started
	err := ts.Client.Delete(context.Background(), &ollamaapi.DeleteRequest{Model: "stories"})
	var se client.StatusError
	if !asStatus(err, &se) || se.StatusCode != http.StatusConflict {
		t.Fatalf("delete of a busy model: %v", err)
	}
	cancel()
	<-done
}

func TestPullPushFromLocalRegistry(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	ts := startStoreServer(t, "", func(c *Config) { c.AllowRegistries = []string{reg.Host()} })
	path := t.TempDir() + "/bigram.gguf"
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	reg.PublishModel("library/chatty", "latest", data, "Be nice.")
	ctx := context.Background()
	name := reg.Host() + "/library/chatty"
	var last ollamaapi.ProgressResponse
	sawBytes := false
	err := ts.Client.Pull(ctx, &ollamaapi.PullRequest{Model: name, Insecure: true}, func(p ollamaapi.ProgressResponse) error {
		if p.Total > 0 && p.Completed > 0 {
			sawBytes = true
		}
		last = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if last.Status != "success" || !sawBytes {
		t.Fatalf("pull progress: last %+v, bytes seen %v", last, sawBytes)
	}
	var chat ollamaapi.ChatResponse
	err = ts.Client.Chat(ctx, &ollamaapi.ChatRequest{Model: name, Messages: []ollamaapi.Message{{Role: "user", Content: "Hi"}}, Stream: ptr(false), Options: greedyOpts(40)},
		func(r ollamaapi.ChatResponse) error { chat = r; return nil })
	if err != nil || chat.Message.Content != testmodels.BigramAnswer {
		t.Fatalf("chat with the pulled model: %v %q", err, chat.Message.Content)
	}
	// Push a copy back under another name.
	if err := ts.Client.Copy(ctx, &ollamaapi.CopyRequest{Source: name, Destination: reg.Host() + "/me/chatty:v1"}); err != nil {
		t.Fatal(err)
	}
	if err := ts.Client.Push(ctx, &ollamaapi.PullRequest{Model: reg.Host() + "/me/chatty:v1", Insecure: true}, func(p ollamaapi.ProgressResponse) error { last = p; return nil }); err != nil || last.Status != "success" {
		t.Fatalf("push: %v %+v", err, last)
	}
	if err := ts.Client.Pull(ctx, &ollamaapi.PullRequest{Model: reg.Host() + "/library/missing", Insecure: true}, func(ollamaapi.ProgressResponse) error { return nil }); err == nil {
		t.Fatal("pulling a missing model succeeded")
	}
}

// `tadpole serve --models DIR` on an Ollama-layout store serves its models.
func TestOllamaLayoutStore(t *testing.T) {
	dir := t.TempDir()
	st := &models.Store{Dir: dir}
	f, _ := os.Open(testmodels.Testdata("stories260K.gguf"))
	d, size, err := st.WriteBlob(f, "")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := models.ParseName("someone/tiny:q")
	if err := st.WriteLayers(n, models.Layer{MediaType: models.MediaTypeModel, Digest: d, Size: size}); err != nil {
		t.Fatal(err)
	}
	srv := New(Config{ModelsDir: dir, Sched: testSched(2, 128)})
	ts := serveForTest(t, srv)
	list, err := ts.Client.List(context.Background())
	if err != nil || len(list.Models) != 1 || list.Models[0].Name != "someone/tiny:q" || list.Models[0].Details.ParameterSize == "" {
		t.Fatalf("list %v %+v", err, list)
	}
	var got ollamaapi.GenerateResponse
	err = ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "someone/tiny:q", Prompt: "Once upon a time", Stream: ptr(false), Options: greedyOpts(30)},
		func(r ollamaapi.GenerateResponse) error { got = r; return nil })
	if err != nil || !strings.HasPrefix(got.Response, storiesContinuation) {
		t.Fatalf("%v %q", err, got.Response)
	}
}

// An ADAPTER that is not a LoRA adapter of the base (here the demo
// model's own GGUF), or an adapter of another base (the bigram model's
// adapter over the demo model: same architecture, other shapes), is a
// 400 at create naming the adapter and the base, before anything is
// stored or streamed.
func TestAdapterRefused(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	digest, data := fileDigest(t, testmodels.Testdata("stories260K.gguf"))
	if err := ts.Client.CreateBlob(ctx, digest, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	ap := filepath.Join(t.TempDir(), "colors.gguf")
	if err := testmodels.WriteBigramAdapter(ap, "colors", testmodels.AdapterColors); err != nil {
		t.Fatal(err)
	}
	adigest, adata := fileDigest(t, ap)
	if err := ts.Client.CreateBlob(ctx, adigest, bytes.NewReader(adata), int64(len(adata))); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, digest, want string
	}{
		{"a model as adapter", digest, "general.type"},
		{"another base's adapter", adigest, "does not fit the base model"},
	} {
		err := ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "withlora", From: "stories", Adapters: map[string]string{"lora.gguf": c.digest}},
			func(ollamaapi.ProgressResponse) error { return nil })
		var se client.StatusError
		if !asStatus(err, &se) || se.StatusCode != 400 || !strings.Contains(se.Message, c.want) || !strings.Contains(se.Message, "ADAPTER") {
			t.Errorf("%s: %v, want a 400 naming %q", c.name, err, c.want)
		}
	}
	if _, err := ts.Client.Show(ctx, &ollamaapi.ShowRequest{Model: "withlora"}); !client.IsNotFound(err) {
		t.Errorf("a refused create left a model: %v", err)
	}
}
