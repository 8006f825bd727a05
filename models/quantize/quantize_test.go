package quantize

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// One place for a quantization in the process: a second Begin is
// refused at once with ErrBusy until done.
func TestBegin(t *testing.T) {
	done, err := Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Begin(); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Begin: %v", err)
	}
	done()
	done, err = Begin()
	if err != nil {
		t.Fatalf("Begin after done: %v", err)
	}
	done()
}

// A real quantization of a store's model: the FROM points at a new blob,
// a Q8_0 GGUF, and the status says so; the request's faults are
// *Errors (an unknown type, a FROM not in the store, no FROM).
func TestFrom(t *testing.T) {
	dir := t.TempDir()
	// A model whose rows fit Q8_0's 32-wide blocks.
	if err := testmodels.WriteRandomLlama(filepath.Join(dir, "base.gguf"), testmodels.Small, 0, 1); err != nil {
		t.Fatal(err)
	}
	store := &models.Store{Dir: dir}
	mf, err := models.ParseModelfile(strings.NewReader("FROM base\nPARAMETER temperature 0.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	if err := From(store, mf, "q8_0", func(s string) { statuses = append(statuses, s) }); err != nil {
		t.Fatal(err)
	}
	from := strings.TrimPrefix(mf.Commands[0].Value, "@")
	if mf.Commands[0].Name != models.CmdFrom || !models.ValidDigest(from) || len(statuses) != 1 || statuses[0] != "quantizing model to Q8_0" {
		t.Fatalf("FROM %q, statuses %q", mf.Commands[0].Value, statuses)
	}
	p, err := store.BlobPath(from)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if ft, ok := f.FileType(); !ok || ft.String() != "Q8_0" {
		t.Errorf("quantized file type %v (%v)", ft, ok)
	}

	param := models.Command{Name: models.CmdParameter, Key: "temperature", Value: "1"}
	for _, tc := range []struct {
		from, typ, want string
	}{
		{"base", "q9_9", `unsupported quantization "q9_9" (supported: `},
		{"nothere", "q8_0", `quantize: FROM "nothere" not found`},
		{"", "q8_0", "quantize: no FROM"},
	} {
		mf := &models.Modelfile{Commands: []models.Command{param}}
		if tc.from != "" {
			mf.Commands = append(mf.Commands, models.Command{Name: models.CmdFrom, Value: tc.from})
		}
		err = From(store, mf, tc.typ, func(string) {})
		var qe *Error
		if !errors.As(err, &qe) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("FROM %q to %s: %v", tc.from, tc.typ, err)
		}
	}
}
