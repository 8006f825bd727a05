package models

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// DRAFT: a language model with the model's vocabulary, stored as
// Ollama's draft layer, rendered back by ModelfileFor, replaced by a
// later create; another vocabulary, the model's own file and a GGUF that
// is not a language model are refused at create.
func TestCreateDraft(t *testing.T) {
	testkit.Full(t, "writes and checks two models")
	s := newStore(t)
	src := t.TempDir()
	heavy, draft := filepath.Join(src, "heavy.gguf"), filepath.Join(src, "bigram.gguf")
	if err := testmodels.WriteBigramHeavy(heavy, 2); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteBigram(draft); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "heavy", mustParse(t, "FROM "+heavy+"\nDRAFT "+draft+"\n"))
	e := mustResolve(t, s, "heavy")
	if e.Draft == "" || e.Draft == e.Path {
		t.Fatalf("Draft = %q (model %q)", e.Draft, e.Path)
	}
	var draftLayers int
	for _, l := range e.Manifest.Layers {
		if l.MediaType == MediaTypeDraft {
			draftLayers++
		}
	}
	if draftLayers != 1 {
		t.Errorf("%d draft layers (%s), want 1", draftLayers, MediaTypeDraft)
	}
	text := ModelfileFor(e)
	if !strings.Contains(text, "\nDRAFT "+e.Draft+"\n") {
		t.Errorf("ModelfileFor without the DRAFT:\n%s", text)
	}
	mustCreate(t, s, "again", mustParse(t, text))
	if got := mustResolve(t, s, "again"); got.Draft != e.Draft || got.Path != e.Path {
		t.Errorf("re-created: draft %q model %q", got.Draft, got.Path)
	}
	// A child inherits the draft; its own DRAFT replaces it (one layer).
	mustCreate(t, s, "child", mustParse(t, "FROM heavy\nSYSTEM hi\n"))
	if c := mustResolve(t, s, "child"); c.Draft != e.Draft {
		t.Errorf("child's draft %q, want the inherited %q", c.Draft, e.Draft)
	}
	mustCreate(t, s, "child2", mustParse(t, "FROM heavy\nDRAFT "+draft+"\n"))
	n := 0
	for _, l := range mustResolve(t, s, "child2").Manifest.Layers {
		if l.MediaType == MediaTypeDraft {
			n++
		}
	}
	if n != 1 {
		t.Errorf("a DRAFT over an inherited one: %d draft layers, want 1", n)
	}

	for _, tt := range []struct{ modelfile, want string }{
		{"FROM " + heavy + "\nDRAFT " + testmodels.Testdata("stories260K.gguf") + "\n", "vocabulary"},
		{"FROM " + heavy + "\nDRAFT " + heavy + "\n", "the model itself"},
		{"FROM " + heavy + "\nDRAFT " + filepath.Join(src, "missing.gguf") + "\n", "DRAFT"},
		{"FROM " + heavy + "\nDRAFT\n", "DRAFT needs a value"},
	} {
		mf, err := ParseModelfile(strings.NewReader(tt.modelfile))
		if err == nil {
			err = s.Create("bad", mf, nil)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error naming %q", tt.modelfile, err, tt.want)
		}
	}
	proj := filepath.Join(src, "mmproj.gguf")
	writeGGUFWithType(t, proj, "projector")
	if err := s.Create("bad", mustParse(t, "FROM "+heavy+"\nDRAFT "+proj+"\n"), nil); err == nil || !strings.Contains(err.Error(), "must be a language model") {
		t.Errorf("a projector as DRAFT: %v", err)
	}
}
