package testmodels

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// TestWriteVision: both files are valid GGUF, the projector says what
// clip.cpp needs and projects to the text model's width, and writing
// again gives the same bytes.
func TestWriteVision(t *testing.T) {
	dir := t.TempDir()
	text, proj := filepath.Join(dir, "v.gguf"), filepath.Join(dir, "v.mmproj.gguf")
	if err := WriteVision(text, proj); err != nil {
		t.Fatal(err)
	}
	tf, err := gguf.ValidateFile(text)
	if err != nil {
		t.Fatal(err)
	}
	if !tf.IsModel() {
		t.Error("the text model is not a model")
	}
	if n, _ := tf.ArchUint("embedding_length"); int(n) != VisionText.Embd {
		t.Errorf("text width %d, want %d", n, VisionText.Embd)
	}
	if tmpl, _ := tf.String("tokenizer.chat_template"); tmpl != ChatMLTemplate {
		t.Error("the text model has no ChatML template")
	}
	pf, err := gguf.ValidateFile(proj)
	if err != nil {
		t.Fatal(err)
	}
	if pf.IsModel() {
		t.Error("the projector counts as a language model")
	}
	if v, _ := pf.Bool("clip.has_vision_encoder"); !v {
		t.Error("no vision encoder")
	}
	if typ, _ := pf.String("clip.projector_type"); typ != "mlp" {
		t.Errorf("projector type %q", typ)
	}
	mm2, ok := pf.Tensor("mm.2.weight")
	if !ok || len(mm2.Dims) != 2 || int(mm2.Dims[1]) != VisionText.Embd {
		t.Errorf("mm.2.weight %+v: want %d outputs", mm2, VisionText.Embd)
	}
	pe, _ := pf.Tensor("v.position_embd.weight")
	if len(pe.Dims) != 2 || pe.Dims[1] != VisionTokens+1 {
		t.Errorf("position embedding %v: want %d positions", pe.Dims, VisionTokens+1)
	}
	a, _ := os.ReadFile(proj)
	proj2 := filepath.Join(dir, "again.gguf")
	if err := WriteVisionProjector(proj2, VisionText.Embd); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(proj2)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Error("the projector is not deterministic")
	}
}
