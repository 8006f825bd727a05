package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// writeProjector writes a minimal clip GGUF: the metadata llama.cpp's
// clip loader reads first and one small tensor. It is enough for the
// store (a projector by its architecture) and for /api/show, not for
// loading.
func writeProjector(t *testing.T, path string, vision, audio bool) {
	t.Helper()
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "clip"},
		{Key: "general.name", Value: "test projector"},
		{Key: "clip.has_vision_encoder", Value: vision},
		{Key: "clip.has_audio_encoder", Value: audio},
		{Key: "clip.projector_type", Value: "mlp"},
		{Key: "clip.vision.image_size", Value: uint32(28)},
		{Key: "clip.vision.patch_size", Value: uint32(14)},
	}
	tensors := []gguf.Tensor{{Name: "mm.0.weight", Dims: []uint64{4, 4}, Type: gguf.TensorType(0), Data: make([]byte, 64)}}
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
}

func listNames(t *testing.T, s *Store) []string {
	t.Helper()
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name.String())
	}
	return names
}

func TestReadProjector(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.gguf")
	writeProjector(t, p, true, false)
	pi, err := ReadProjector(p)
	if err != nil || !pi.Vision || pi.Audio || pi.Type != "mlp" {
		t.Fatalf("ReadProjector = %+v, %v", pi, err)
	}
	if pi.KV["general.architecture"] != "clip" || pi.KV["clip.vision.image_size"] != uint32(28) || pi.KV["clip.has_vision_encoder"] != true {
		t.Errorf("KV = %v", pi.KV)
	}
	// A projector with both encoders names both types.
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "clip"},
		{Key: "clip.has_vision_encoder", Value: true},
		{Key: "clip.has_audio_encoder", Value: true},
		{Key: "clip.vision.projector_type", Value: "qwen2.5o"},
		{Key: "clip.audio.projector_type", Value: "qwen2.5o"},
	}
	if err := gguf.WriteFile(p, kvs, nil); err != nil {
		t.Fatal(err)
	}
	if pi, err = ReadProjector(p); err != nil || !pi.Vision || !pi.Audio || pi.Type != "qwen2.5o+qwen2.5o" {
		t.Errorf("mixed: %+v, %v", pi, err)
	}
	if _, err := ReadProjector(filepath.Join(dir, "missing.gguf")); err == nil {
		t.Error("ReadProjector of a missing file")
	}
}

func TestBareProjector(t *testing.T) {
	s := newStore(t)
	model := filepath.Join(s.Dir, "vis.gguf")
	if err := testmodels.WriteBigram(model); err != nil {
		t.Fatal(err)
	}
	plain := mustResolve(t, s, "vis")
	if plain.Projector() != "" {
		t.Fatalf("no projector yet: %q", plain.Projectors)
	}
	// NAME.mmproj.gguf beside NAME.gguf is its projector, not a model.
	proj := filepath.Join(s.Dir, "vis.mmproj.gguf")
	writeProjector(t, proj, true, false)
	e := mustResolve(t, s, "vis")
	if e.Projector() != proj || len(e.Projectors) != 1 {
		t.Fatalf("Projectors = %q", e.Projectors)
	}
	fi, _ := os.Stat(proj)
	if e.Size != plain.Size+fi.Size() || e.Digest == plain.Digest {
		t.Errorf("Size %d (model %d), Digest changed: %v", e.Size, plain.Size, e.Digest != plain.Digest)
	}
	if got := listNames(t, s); !reflect.DeepEqual(got, []string{"vis:latest"}) {
		t.Errorf("List = %q", got)
	}
	if _, err := s.Resolve("vis.mmproj"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(vis.mmproj) = %v, want not found", err)
	}
	// The Modelfile names both files; creating from it gives a manifest
	// with a projector layer.
	text := ModelfileFor(e)
	if !strings.Contains(text, "FROM "+model+"\n") || !strings.Contains(text, "FROM "+proj+"\n") {
		t.Errorf("Modelfile:\n%s", text)
	}
	mustCreate(t, s, "imported", mustParse(t, text))
	im := mustResolve(t, s, "imported")
	if len(im.Projectors) != 1 || im.Manifest.Layers[1].MediaType != MediaTypeProjector {
		t.Errorf("imported layers: %+v", im.Manifest.Layers)
	}

	// A projector llama.cpp cannot load is left off; the model stays.
	if err := os.WriteFile(proj, []byte("not a gguf file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e := mustResolve(t, s, "vis"); e.Projector() != "" {
		t.Errorf("broken projector attached: %q", e.Projectors)
	}
	os.Remove(proj)
}

func TestBareMMProjFile(t *testing.T) {
	// llama.cpp's download layout: one model, one mmproj-*.gguf.
	s := newStore(t)
	if err := testmodels.WriteBigram(filepath.Join(s.Dir, "gemma-q4.gguf")); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(s.Dir, "mmproj-model-f16.gguf")
	writeProjector(t, proj, true, false)
	if e := mustResolve(t, s, "gemma-q4"); e.Projector() != proj {
		t.Errorf("Projectors = %q", e.Projectors)
	}
	if got := listNames(t, s); !reflect.DeepEqual(got, []string{"gemma-q4:latest"}) {
		t.Errorf("List = %q", got)
	}
	if _, err := s.Resolve("mmproj-model-f16"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(mmproj-model-f16) = %v", err)
	}
	// With a second model the lone mmproj file could be either's: neither
	// gets it (NAME.mmproj.gguf says which).
	if err := testmodels.WriteBigram(filepath.Join(s.Dir, "other.gguf")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gemma-q4", "other"} {
		if e := mustResolve(t, s, name); e.Projector() != "" {
			t.Errorf("%s: Projectors = %q with two models", name, e.Projectors)
		}
	}
	// And two mmproj files for one model: ambiguous too.
	os.Remove(filepath.Join(s.Dir, "other.gguf"))
	writeProjector(t, filepath.Join(s.Dir, "mmproj-model-f32.gguf"), true, false)
	if e := mustResolve(t, s, "gemma-q4"); e.Projector() != "" {
		t.Errorf("two mmproj files: Projectors = %q", e.Projectors)
	}
}

func TestCreateProjectorLayer(t *testing.T) {
	// A second FROM of a clip GGUF (no general.type: detected by its
	// architecture) is a projector layer; the Modelfile round-trips.
	s := newStore(t)
	src := t.TempDir()
	if err := testmodels.WriteBigram(filepath.Join(src, "text.gguf")); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(src, "proj.gguf")
	writeProjector(t, proj, true, true)
	mf := mustParse(t, "FROM ./text.gguf\nFROM ./proj.gguf\n")
	mf.Dir = src
	mustCreate(t, s, "vision", mf)
	e := mustResolve(t, s, "vision")
	var types []string
	for _, l := range e.Manifest.Layers {
		types = append(types, l.MediaType)
	}
	if !reflect.DeepEqual(types, []string{MediaTypeModel, MediaTypeProjector}) || e.Projector() == "" {
		t.Fatalf("layers %q, projector %q", types, e.Projector())
	}
	pi, err := ReadProjector(e.Projector())
	if err != nil || !pi.Vision || !pi.Audio {
		t.Errorf("projector blob: %+v %v", pi, err)
	}
	text := ModelfileFor(e)
	if strings.Count(text, "\nFROM ") != 2 {
		t.Errorf("Modelfile:\n%s", text)
	}
	mustCreate(t, s, "again", mustParse(t, text))
	if got, want := layerDigests(mustResolve(t, s, "again")), layerDigests(e); !reflect.DeepEqual(got, want) {
		t.Errorf("re-created layers %q, want %q", got, want)
	}
	// Only one model per manifest: a projector cannot be the base, and a
	// second model is refused.
	err = s.Create("projfirst", mustParse(t, "FROM "+proj+"\n"), nil)
	if err == nil || !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), "the first FROM must be a language model, and this GGUF is a clip") {
		t.Errorf("projector first: %v", err)
	}
	err = s.Create("twomodels", mustParse(t, fmt.Sprintf("FROM %s\nFROM %s\n", filepath.Join(src, "text.gguf"), filepath.Join(src, "text.gguf"))), nil)
	if err == nil || !strings.Contains(err.Error(), "a second FROM must be a projector or adapter GGUF") {
		t.Errorf("two models: %v", err)
	}
}

// The generated vision model (testmodels.WriteVision) pairs by name and
// its projector passes the store's check.
func TestGeneratedVisionModel(t *testing.T) {
	s := newStore(t)
	proj := filepath.Join(s.Dir, "tiny-vision.mmproj.gguf")
	if err := testmodels.WriteVision(filepath.Join(s.Dir, "tiny-vision.gguf"), proj); err != nil {
		t.Fatal(err)
	}
	e := mustResolve(t, s, "tiny-vision")
	if e.Projector() != proj {
		t.Fatalf("Projectors = %q", e.Projectors)
	}
	pi, err := ReadProjector(proj)
	if err != nil || !pi.Vision || pi.Audio || pi.Type == "" || pi.KV["general.architecture"] != "clip" {
		t.Errorf("ReadProjector = %+v, %v", pi, err)
	}
}
