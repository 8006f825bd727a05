package models

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// ollamaBlob writes data as Ollama does (blobs/sha256-<hex>), without the
// Store, and returns its layer.
func ollamaBlob(t *testing.T, dir, mediaType string, data []byte) Layer {
	t.Helper()
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256-"+h), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return Layer{MediaType: mediaType, Digest: "sha256:" + h, Size: int64(len(data))}
}

// ollamaManifest writes a manifest as Ollama does, by hand, and returns
// its bytes.
func ollamaManifest(t *testing.T, dir, host, ns, model, tag string, config Layer, layers ...Layer) []byte {
	t.Helper()
	var ls string
	for i, l := range layers {
		if i > 0 {
			ls += ","
		}
		ls += fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d}`, l.MediaType, l.Digest, l.Size)
	}
	raw := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",`+
		`"config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":%q,"size":%d},"layers":[%s]}`,
		config.Digest, config.Size, ls))
	p := filepath.Join(dir, "manifests", host, ns, model, tag)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return raw
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestOllamaLayout reads a store written the way Ollama writes one.
func TestOllamaLayout(t *testing.T) {
	dir := t.TempDir()
	s := &Store{Dir: dir}
	stories := readFile(t, testmodels.Testdata("stories260K.gguf"))
	model := ollamaBlob(t, dir, MediaTypeModel, stories)
	tmpl := ollamaBlob(t, dir, MediaTypeTemplate, []byte("{{ if .System }}<|system|>{{ .System }}{{ end }}<|user|>{{ .Prompt }}<|assistant|>"))
	system := ollamaBlob(t, dir, MediaTypeSystem, []byte("You are a storyteller."))
	params := ollamaBlob(t, dir, MediaTypeParams, []byte(`{"num_ctx":4096,"stop":["<|user|>","<|end|>"],"temperature":0.7,"future_option":"kept"}`))
	lic1 := ollamaBlob(t, dir, MediaTypeLicense, []byte("MIT License"))
	lic2 := ollamaBlob(t, dir, MediaTypeLicense, []byte("Second license\nwith two lines"))
	msgs := ollamaBlob(t, dir, MediaTypeMessages, []byte(`[{"role":"user","content":"Once upon a time?"},{"role":"assistant","content":"there was a frog."}]`))
	config := ollamaBlob(t, dir, MediaTypeConfig, []byte(`{"model_format":"gguf","model_family":"llama","model_families":["llama"],"model_type":"260K","file_type":"F32","architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`))
	raw := ollamaManifest(t, dir, "registry.ollama.ai", "library", "storyteller", "latest", config, model, tmpl, system, params, lic1, lic2, msgs)
	mtime := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "manifests/registry.ollama.ai/library/storyteller/latest"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	// A non-default host and namespace, and a config without details (so
	// they come from the GGUF header).
	bareConfig := ollamaBlob(t, dir, MediaTypeConfig, []byte(`{"architecture":"amd64","os":"linux"}`))
	rawHF := ollamaManifest(t, dir, "hf.co", "someone", "model", "Q4_0", bareConfig, model)
	// A cloud model (no model layer) and a corrupt manifest are left out.
	ollamaManifest(t, dir, "registry.ollama.ai", "library", "cloudy", "latest", bareConfig)
	os.MkdirAll(filepath.Join(dir, "manifests/registry.ollama.ai/library/broken"), 0o755)
	os.WriteFile(filepath.Join(dir, "manifests/registry.ollama.ai/library/broken/latest"), []byte("{not json"), 0o644)

	e, err := s.Resolve("storyteller")
	if err != nil {
		t.Fatal(err)
	}
	blobs := filepath.Join(dir, "blobs")
	if e.Name.String() != "storyteller:latest" || e.Name.Full() != "registry.ollama.ai/library/storyteller:latest" {
		t.Errorf("Name = %v (%s)", e.Name, e.Name.Full())
	}
	if e.Path != filepath.Join(blobs, "sha256-"+model.Digest[7:]) || e.ModelDigest != model.Digest {
		t.Errorf("Path = %s, ModelDigest = %s", e.Path, e.ModelDigest)
	}
	if e.Digest != sha(raw) || e.ShortDigest() != sha(raw)[:12] {
		t.Errorf("Digest = %s, want sha256 of the manifest %s", e.Digest, sha(raw))
	}
	wantSize := config.Size + model.Size + tmpl.Size + system.Size + params.Size + lic1.Size + lic2.Size + msgs.Size
	if e.Size != wantSize {
		t.Errorf("Size = %d, want %d", e.Size, wantSize)
	}
	if !e.Modified.Equal(mtime) {
		t.Errorf("Modified = %v, want %v", e.Modified, mtime)
	}
	if e.Template != "{{ if .System }}<|system|>{{ .System }}{{ end }}<|user|>{{ .Prompt }}<|assistant|>" || e.System != "You are a storyteller." {
		t.Errorf("Template = %q, System = %q", e.Template, e.System)
	}
	if !reflect.DeepEqual(e.License, []string{"MIT License", "Second license\nwith two lines"}) {
		t.Errorf("License = %q", e.License)
	}
	wantParams := map[string]any{"num_ctx": 4096, "stop": []string{"<|user|>", "<|end|>"}, "temperature": 0.7, "future_option": "kept"}
	if !reflect.DeepEqual(e.Params, wantParams) {
		t.Errorf("Params = %#v, want %#v", e.Params, wantParams)
	}
	wantMsgs := []Message{{"user", "Once upon a time?"}, {"assistant", "there was a frog."}}
	if !reflect.DeepEqual(e.Messages, wantMsgs) {
		t.Errorf("Messages = %v", e.Messages)
	}
	wantDetails := Details{Format: "gguf", Family: "llama", Families: []string{"llama"}, ParameterSize: "260K", QuantizationLevel: "F32"}
	if !reflect.DeepEqual(e.Details, wantDetails) {
		t.Errorf("Details = %+v, want %+v (from the config)", e.Details, wantDetails)
	}

	// The Hugging Face model, by any spelling of its name.
	for _, name := range []string{"hf.co/someone/model:Q4_0", "HF.CO/someone/Model:q4_0"} {
		e, err := s.Resolve(name)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", name, err)
		}
		if e.Name.String() != "hf.co/someone/model:Q4_0" || e.Digest != sha(rawHF) || e.ModelDigest != model.Digest {
			t.Errorf("Resolve(%q) = %v %s %s", name, e.Name, e.Digest, e.ModelDigest)
		}
		wantDetails.ParameterSize = "293K" // counted from the tensors
		if !reflect.DeepEqual(e.Details, wantDetails) {
			t.Errorf("Details = %+v, want %+v (from the GGUF)", e.Details, wantDetails)
		}
		if e.Template != "" || e.Params != nil || e.Messages != nil {
			t.Errorf("model without layers has %q %v %v", e.Template, e.Params, e.Messages)
		}
	}

	// A config with some details: the rest come from the GGUF header.
	partial := ollamaBlob(t, dir, MediaTypeConfig, []byte(`{"model_format":"gguf","file_type":"Q4_0"}`))
	ollamaManifest(t, dir, "registry.ollama.ai", "someone", "partial", "latest", partial, model)
	p := mustResolve(t, s, "someone/partial")
	wantPartial := Details{Format: "gguf", Family: "llama", Families: []string{"llama"}, ParameterSize: "293K", QuantizationLevel: "Q4_0"}
	if p.Name.String() != "someone/partial:latest" || !reflect.DeepEqual(p.Details, wantPartial) {
		t.Errorf("partial: %v %+v, want %+v", p.Name, p.Details, wantPartial)
	}

	for _, name := range []string{"hf.co/someone/model", "someone/model:Q4_0", "other"} {
		if _, err := s.Resolve(name); !errors.Is(err, ErrNotFound) {
			t.Errorf("Resolve(%q) = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.Resolve("cloudy"); !errors.Is(err, ErrUnsupportedModel) {
		t.Errorf("Resolve(cloudy) = %v, want ErrUnsupportedModel", err)
	}
	if _, err := s.Resolve("broken"); err == nil {
		t.Error("Resolve(broken) succeeded")
	}

	// A bare GGUF file beside the Ollama directories.
	if err := os.Symlink(testmodels.Testdata("stories260K.gguf"), filepath.Join(dir, "bare.gguf")); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name.String())
	}
	want := []string{"bare:latest", "hf.co/someone/model:Q4_0", "someone/partial:latest", "storyteller:latest"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("List = %q, want %q", names, want)
	}
	raw2, err := s.ReadManifest(e.Name)
	if err != nil || string(raw2) != string(raw) {
		t.Errorf("ReadManifest = %q, %v", raw2, err)
	}
}

func TestBareGGUF(t *testing.T) {
	dir := t.TempDir()
	s := &Store{Dir: dir}
	p := filepath.Join(dir, "bigram.gguf")
	if err := testmodels.WriteBigram(p); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a model"), 0o644)
	os.WriteFile(filepath.Join(dir, ".hidden.gguf"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "dir.gguf"), 0o755)

	e, err := s.Resolve("bigram")
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	if e.Path != p || e.Size != fi.Size() || !e.Modified.Equal(fi.ModTime()) || e.Name.String() != "bigram:latest" {
		t.Errorf("entry = %+v", e)
	}
	if len(e.Digest) != 64 || e.ModelDigest != "" || e.Manifest != nil {
		t.Errorf("Digest = %q, ModelDigest = %q", e.Digest, e.ModelDigest)
	}
	if e.Details.Family != "llama" || e.Details.Format != "gguf" || e.Details.ParameterSize != "939K" {
		t.Errorf("Details = %+v", e.Details)
	}
	// The id is stable while the file is unchanged, and changes with it.
	again, _ := s.Resolve("bigram:latest")
	if again.Digest != e.Digest {
		t.Errorf("Digest changed: %s, %s", e.Digest, again.Digest)
	}
	later := fi.ModTime().Add(time.Second)
	os.Chtimes(p, later, later)
	if changed, _ := s.Resolve("bigram"); changed.Digest == e.Digest {
		t.Error("Digest did not change with the file's modification time")
	}
	for _, name := range []string{"bigram:v2", "ns/bigram", "dir", "notes", "hidden"} {
		if _, err := s.Resolve(name); !errors.Is(err, ErrNotFound) {
			t.Errorf("Resolve(%q) = %v, want ErrNotFound", name, err)
		}
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Name.String() != "bigram:latest" {
		t.Errorf("List = %v, %v", list, err)
	}
}

func TestResolveRejectsTraversal(t *testing.T) {
	dir := t.TempDir()
	s := &Store{Dir: filepath.Join(dir, "store")}
	os.MkdirAll(s.Dir, 0o755)
	// Files outside the store that a traversal would reach.
	os.WriteFile(filepath.Join(dir, "secret.gguf"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(dir, "latest"), 0o755)
	for _, name := range []string{"../secret", "../../etc/passwd", "..", "x/../../secret", "../secret:latest", "..:..", "a/b/../../../secret"} {
		if _, err := s.Resolve(name); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Resolve(%q) = %v, want a name error", name, err)
		}
		if err := s.Delete(name); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Delete(%q) = %v, want a name error", name, err)
		}
		if err := s.Copy("x", name); err == nil {
			t.Errorf("Copy(x, %q) succeeded", name)
		}
	}
	if err := s.WriteManifest(Name{Host: "..", Namespace: "..", Model: "x", Tag: "y"}, []byte(`{"schemaVersion":2}`)); err == nil {
		t.Error("WriteManifest with a '..' host succeeded")
	}
	if _, err := s.ReadManifest(Name{Host: "h", Namespace: "..", Model: "..", Tag: "secret.gguf"}); err == nil {
		t.Error("ReadManifest with '..' parts succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.gguf")); err != nil {
		t.Errorf("the file outside the store is gone: %v", err)
	}
}
