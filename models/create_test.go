package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

func mustParse(t *testing.T, text string) *Modelfile {
	t.Helper()
	mf, err := parseString(text)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

func mustCreate(t *testing.T, s *Store, name string, mf *Modelfile) []string {
	t.Helper()
	var statuses []string
	if err := s.Create(name, mf, func(st string) { statuses = append(statuses, st) }); err != nil {
		t.Fatalf("Create(%s): %v", name, err)
	}
	return statuses
}

func mustResolve(t *testing.T, s *Store, name string) Entry {
	t.Helper()
	e, err := s.Resolve(name)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", name, err)
	}
	return e
}

func layerDigests(e Entry) []string {
	var out []string
	for _, l := range e.Manifest.Layers {
		out = append(out, l.MediaType+" "+l.Digest)
	}
	sort.Strings(out)
	return out
}

func TestCreate(t *testing.T) {
	s := newStore(t)
	src := t.TempDir()
	if err := testmodels.WriteBigram(filepath.Join(src, "bigram.gguf")); err != nil {
		t.Fatal(err)
	}

	// FROM a relative path, with every kind of layer.
	mf := mustParse(t, `# the bigram model
FROM ./bigram.gguf
TEMPLATE """{{ if .System }}<|system|>{{ .System }}{{ end }}<|user|>{{ .Prompt }}"""
SYSTEM You are a bigram.
PARAMETER temperature 0.7
PARAMETER num_ctx 256
PARAMETER stop <|user|>
PARAMETER stop "<|system|>"
PARAMETER use_mmap false
LICENSE MIT
LICENSE "Second"
MESSAGE user Hi
MESSAGE assistant Hello there
`)
	mf.Dir = src
	statuses := mustCreate(t, s, "bigram", mf)
	if statuses[0] != "parsing GGUF" || !strings.HasPrefix(statuses[1], "creating new layer sha256:") ||
		!slices.Contains(statuses, "writing manifest") || statuses[len(statuses)-1] != "success" {
		t.Errorf("statuses = %q", statuses)
	}
	e := mustResolve(t, s, "bigram")
	if e.Template != "{{ if .System }}<|system|>{{ .System }}{{ end }}<|user|>{{ .Prompt }}" || e.System != "You are a bigram." {
		t.Errorf("Template = %q, System = %q", e.Template, e.System)
	}
	wantParams := map[string]any{"temperature": 0.7, "num_ctx": 256, "stop": []string{"<|user|>", "<|system|>"}, "use_mmap": false}
	if !reflect.DeepEqual(e.Params, wantParams) {
		t.Errorf("Params = %#v, want %#v", e.Params, wantParams)
	}
	if !reflect.DeepEqual(e.License, []string{"MIT", "Second"}) || !reflect.DeepEqual(e.Messages, []Message{{"user", "Hi"}, {"assistant", "Hello there"}}) {
		t.Errorf("License = %q, Messages = %v", e.License, e.Messages)
	}
	ggufBytes := readFile(t, filepath.Join(src, "bigram.gguf"))
	if got := readFile(t, e.Path); string(got) != string(ggufBytes) || e.ModelDigest != DigestBytes(ggufBytes) {
		t.Errorf("the model blob is not a copy of the GGUF file")
	}
	if want := (Details{Format: "gguf", Family: "llama", Families: []string{"llama"}, ParameterSize: "939K", QuantizationLevel: "F32"}); !reflect.DeepEqual(e.Details, want) {
		t.Errorf("Details = %+v", e.Details)
	}
	if e.Manifest.Config.MediaType != MediaTypeConfig || e.Manifest.MediaType != MediaTypeManifest || e.Manifest.SchemaVersion != 2 {
		t.Errorf("manifest = %+v", e.Manifest)
	}
	// The config blob holds the details, as Ollama's does.
	if d := s.configDetails(e.Manifest.Config); d.ParameterSize != "939K" || d.Family != "llama" {
		t.Errorf("config details = %+v", d)
	}

	// FROM an existing name: inherit, then override.
	mustCreate(t, s, "ns/child:v1", mustParse(t, `FROM bigram
PARAMETER temperature 0.2
PARAMETER stop END
SYSTEM """Be terse."""
LICENSE Third
`))
	c := mustResolve(t, s, "ns/child:v1")
	if c.Template != e.Template || c.System != "Be terse." || c.Path != e.Path {
		t.Errorf("child: Template = %q, System = %q, Path = %s", c.Template, c.System, c.Path)
	}
	wantParams = map[string]any{"temperature": 0.2, "num_ctx": 256, "stop": []string{"END"}, "use_mmap": false}
	if !reflect.DeepEqual(c.Params, wantParams) {
		t.Errorf("child Params = %#v, want %#v", c.Params, wantParams)
	}
	if !reflect.DeepEqual(c.License, []string{"MIT", "Second", "Third"}) || !reflect.DeepEqual(c.Messages, e.Messages) {
		t.Errorf("child License = %q, Messages = %v", c.License, c.Messages)
	}

	// FROM a blob digest, with and without '@'; an empty SYSTEM removes
	// the inherited one; MESSAGE lines replace the inherited ones.
	mustCreate(t, s, "fromblob", mustParse(t, "FROM @"+e.ModelDigest+"\n"))
	mustCreate(t, s, "fromblob2", mustParse(t, "FROM "+e.ModelDigest+"\n"))
	mustCreate(t, s, "nosystem", mustParse(t, "FROM ns/child:v1\nSYSTEM \"\"\nMESSAGE user new\n"))
	for _, name := range []string{"fromblob", "fromblob2"} {
		b := mustResolve(t, s, name)
		if b.Path != e.Path || b.Template != "" || b.Params != nil || len(b.Manifest.Layers) != 1 {
			t.Errorf("%s = %+v", name, b)
		}
	}
	ns := mustResolve(t, s, "nosystem")
	if ns.System != "" || ns.Template != e.Template || !reflect.DeepEqual(ns.Messages, []Message{{"user", "new"}}) {
		t.Errorf("nosystem: System = %q, Messages = %v", ns.System, ns.Messages)
	}

	// ADAPTER by path and by blob (LoRA adapters of the bigram model),
	// a projector by a second FROM.
	adapter := filepath.Join(src, "lora.gguf")
	if err := testmodels.WriteBigramAdapter(adapter, "colors", testmodels.AdapterColors); err != nil {
		t.Fatal(err)
	}
	adapter2 := filepath.Join(src, "lora2.gguf")
	if err := testmodels.WriteBigramAdapter(adapter2, "count", testmodels.AdapterCount); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "countonly", mustParse(t, fmt.Sprintf("FROM bigram\nADAPTER %s\n", adapter2)))
	d2 := mustResolve(t, s, "countonly").Adapters[0]
	proj := filepath.Join(src, "mmproj.gguf")
	writeGGUFWithType(t, proj, "projector")
	mustCreate(t, s, "adapted", mustParse(t, fmt.Sprintf("FROM bigram\nFROM %s\nADAPTER %s\nADAPTER @%s\n", proj, adapter, "sha256:"+strings.TrimPrefix(filepath.Base(d2), "sha256-"))))
	a := mustResolve(t, s, "adapted")
	if len(a.Adapters) != 2 || a.Adapters[1] != d2 || len(a.Projectors) != 1 {
		t.Errorf("Adapters = %q, Projectors = %q", a.Adapters, a.Projectors)
	}
	// An adapter that does not fit the base (a model GGUF as adapter) is
	// refused at create.
	if err := s.Create("misfit", mustParse(t, fmt.Sprintf("FROM bigram\nADAPTER @%s\n", e.ModelDigest)), nil); !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), "does not fit the base model") {
		t.Errorf("a model as ADAPTER: %v", err)
	}

	// Re-creating from the rendered Modelfile gives the same layers.
	for _, name := range []string{"bigram", "ns/child:v1", "adapted"} {
		orig := mustResolve(t, s, name)
		text := ModelfileFor(orig)
		if !strings.HasPrefix(text, "# Modelfile generated by \"tadpole show\"\n") || !strings.Contains(text, "# FROM "+orig.Name.String()+"\n") {
			t.Errorf("ModelfileFor header:\n%s", text)
		}
		re := mustParse(t, text)
		mustCreate(t, s, "recreated", re)
		if got, want := layerDigests(mustResolve(t, s, "recreated")), layerDigests(orig); !reflect.DeepEqual(got, want) {
			t.Errorf("%s re-created from\n%s\nhas layers\n%q\nwant\n%q", name, text, got, want)
		}
	}

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name.String())
	}
	want := []string{"adapted:latest", "bigram:latest", "countonly:latest", "fromblob2:latest", "fromblob:latest", "nosystem:latest", "ns/child:v1", "recreated:latest"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("List = %q, want %q", names, want)
	}
}

// writeGGUFWithType writes a small GGUF whose general.type is typ.
func writeGGUFWithType(t *testing.T, path, typ string) {
	t.Helper()
	kvs, tensors := testmodels.Bigram()
	for i := range kvs {
		if kvs[i].Key == "general.type" {
			kvs = slices.Delete(kvs, i, i+1)
			break
		}
	}
	kvs = append(kvs, gguf.KV{Key: "general.type", Value: typ})
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
}

func TestCreateErrors(t *testing.T) {
	s := newStore(t)
	src := t.TempDir()
	notGGUF := filepath.Join(src, "notes.txt")
	os.WriteFile(notGGUF, []byte("hello"), 0o644)
	unsupported, _ := filepath.Glob(testmodels.Testdata("unsupported/*"))
	missing := DigestBytes([]byte("never stored"))
	tests := []struct {
		name, modelfile, want string
	}{
		{"x", "FROM nosuchmodel\n", `no model "nosuchmodel:latest"`},
		{"x", "FROM ./nosuch.gguf\n", "no such file"},
		{"x", "FROM " + notGGUF + "\n", "not a usable GGUF file"},
		{"x", "FROM " + src + "\n", "is a directory"},
		{"x", "FROM @" + missing + "\n", "is not in the store"},
		{"x", "FROM @sha256:1234\n", "invalid digest"},
		{"x", "FROM " + testmodels.Testdata("stories260K.gguf") + "\nADAPTER " + notGGUF + "\n", "ADAPTER"},
		{"x", "FROM " + testmodels.Testdata("stories260K.gguf") + "\nFROM " + testmodels.Testdata("stories260K.gguf") + "\n", "second FROM"},
		{"../../x", "FROM " + testmodels.Testdata("stories260K.gguf") + "\n", "invalid model name"},
	}
	if len(unsupported) > 0 {
		tests = append(tests, struct{ name, modelfile, want string }{"x", "FROM " + unsupported[0] + "\n", "not a usable GGUF file"})
	}
	for _, tt := range tests {
		err := s.Create(tt.name, mustParse(t, tt.modelfile), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Create(%q, %q) = %v, want %q", tt.name, tt.modelfile, err, tt.want)
		}
	}
	// Modelfiles built in code are validated too.
	bad := &Modelfile{Commands: []Command{{Name: CmdFrom, Value: testmodels.Testdata("stories260K.gguf")}, {Name: CmdParameter, Key: "temprature", Value: "1"}}}
	if err := s.Create("x", bad, nil); err == nil || !strings.Contains(err.Error(), `unknown parameter "temprature"`) {
		t.Errorf("Create with an unknown parameter: %v", err)
	}
	if _, err := s.Resolve("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a failed Create left a model: %v", err)
	}
}

func TestCopyAndDelete(t *testing.T) {
	s := newStore(t)
	stories := testmodels.Testdata("stories260K.gguf")
	mustCreate(t, s, "a", mustParse(t, "FROM "+stories+"\nSYSTEM only in a\nPARAMETER seed 42\n"))
	mustCreate(t, s, "b", mustParse(t, "FROM "+stories+"\nSYSTEM only in b\n"))
	a, b := mustResolve(t, s, "a"), mustResolve(t, s, "b")
	if a.ModelDigest != b.ModelDigest {
		t.Fatal("a and b should share the model blob")
	}
	before := blobFiles(t, s)

	if err := s.Copy("a", "hf.co/me/a-copy:v2"); err != nil {
		t.Fatal(err)
	}
	cp := mustResolve(t, s, "hf.co/me/a-copy:v2")
	if cp.Digest != a.Digest || cp.System != "only in a" || cp.Path != a.Path {
		t.Errorf("copy = %+v", cp)
	}
	if !slices.Equal(blobFiles(t, s), before) {
		t.Error("Copy wrote blobs")
	}
	if err := s.Copy("nosuch", "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Copy(nosuch) = %v", err)
	}

	// Deleting a keeps everything the copy uses.
	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve("a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(a) after Delete = %v", err)
	}
	if !slices.Equal(blobFiles(t, s), before) {
		t.Errorf("Delete(a) removed blobs the copy uses: %q → %q", before, blobFiles(t, s))
	}
	mustResolve(t, s, "hf.co/me/a-copy:v2")

	// Deleting the copy removes a's own blobs (system, params, config),
	// not the model blob b uses.
	if err := s.Delete("hf.co/me/a-copy:v2"); err != nil {
		t.Fatal(err)
	}
	after := blobFiles(t, s)
	want := map[string]bool{}
	for _, d := range append(b.Manifest.blobs(), b.Manifest.Config.Digest) {
		want["sha256-"+d[7:]] = true
	}
	if len(after) != len(want) {
		t.Errorf("blobs after deleting the copy: %q, want exactly b's %v", after, want)
	}
	for _, f := range after {
		if !want[f] {
			t.Errorf("blob %s survived though no model uses it", f)
		}
	}
	if e := mustResolve(t, s, "b"); e.System != "only in b" {
		t.Errorf("b = %+v", e)
	}
	// Empty manifest directories are pruned.
	if _, err := os.Stat(filepath.Join(s.Dir, "manifests", "hf.co")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("manifests/hf.co still exists: %v", err)
	}
	if err := s.Delete("a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting a again = %v, want ErrNotFound", err)
	}

	// A blob written recently and not yet referenced (an upload waiting
	// for its create) survives garbage collection; an old one does not.
	orphan, _, err := s.WriteBlob(strings.NewReader("uploaded, not used yet"), "")
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "c", mustParse(t, "FROM b\n"))
	if err := s.Delete("c"); err != nil {
		t.Fatal(err)
	}
	if !s.HasBlob(orphan) {
		t.Fatal("the pinned upload was collected")
	}
	s.mu.Lock()
	s.pinned[orphan] = time.Now().Add(-2 * pinFor)
	s.mu.Unlock()
	mustCreate(t, s, "c", mustParse(t, "FROM b\n"))
	if err := s.Delete("c"); err != nil {
		t.Fatal(err)
	}
	p, _ := s.blobPath(orphan)
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale orphan blob survived: %v", err)
	}

	// Deleting the last model removes every blob.
	if err := s.Delete("b"); err != nil {
		t.Fatal(err)
	}
	if files := blobFiles(t, s); len(files) != 0 {
		t.Errorf("blobs left after deleting every model: %q", files)
	}
}

func TestCopyAndDeleteBareFile(t *testing.T) {
	s := newStore(t)
	p := filepath.Join(s.Dir, "bigram.gguf")
	if err := testmodels.WriteBigram(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Copy("bigram", "imported"); err != nil {
		t.Fatal(err)
	}
	im := mustResolve(t, s, "imported")
	if im.Manifest == nil || im.ModelDigest != DigestBytes(readFile(t, p)) {
		t.Errorf("imported = %+v", im)
	}
	if err := s.Delete("bigram"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bare file still there: %v", err)
	}
	mustResolve(t, s, "imported")
}

func TestWriteManifestChecks(t *testing.T) {
	s := newStore(t)
	n, _ := ParseName("x")
	missing := DigestBytes([]byte("absent"))
	tests := []struct{ raw, want string }{
		{`not json`, "invalid manifest"},
		{`{"schemaVersion":1}`, "schemaVersion"},
		{`{"schemaVersion":2,"layers":[{"digest":"sha256:../../etc"}]}`, "invalid digest"},
		{`{"schemaVersion":2,"layers":[{"digest":"` + missing + `","size":1}]}`, "not in the store"},
	}
	for _, tt := range tests {
		if err := s.WriteManifest(n, []byte(tt.raw)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("WriteManifest(%s) = %v, want %q", tt.raw, err, tt.want)
		}
	}
	if _, err := s.ReadManifest(n); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadManifest after failed writes = %v", err)
	}
}

// TestConcurrentCreateDelete runs creates and deletes side by side: every
// model that exists at the end must resolve, with all its blobs.
func TestConcurrentCreateDelete(t *testing.T) {
	s := newStore(t)
	stories := testmodels.Testdata("stories260K.gguf")
	mustCreate(t, s, "base", mustParse(t, "FROM "+stories+"\n"))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 3 {
				name := fmt.Sprintf("m%d-%d", i, j)
				mf := mustParse(t, fmt.Sprintf("FROM base\nSYSTEM model %d %d\n", i, j))
				if err := s.Create(name, mf, nil); err != nil {
					errs <- err
					return
				}
				if j%2 == 0 {
					if err := s.Delete(name); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1+4 {
		t.Errorf("List has %d models, want 5", len(list))
	}
	for _, e := range list {
		for _, d := range e.Manifest.blobs() {
			if !s.HasBlob(d) {
				t.Errorf("%s: blob %s is missing", e.Name, d)
			}
		}
	}
}
