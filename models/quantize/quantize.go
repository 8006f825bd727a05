// Package quantize makes a quantized copy of a model in the store, for
// a create request's "quantize" (Ollama's /api/create): it checks the
// type against what llama.cpp's quantizer offers, lets one quantization
// run at a time in the process (each takes every core for minutes),
// quantizes the Modelfile's FROM through the engine into a blob of the
// store and points the FROM at it. The Ollama dialect only translates
// the request and maps the errors: ErrBusy is the caller's to retry, an
// *Error is the request's fault, and the store's errors (capacity, a
// failed write) come back as the store gave them.
//
// It is models' one sub-package that links the engine (models itself
// is pure Go).
package quantize

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models"
)

// ErrBusy is Begin's answer while another quantization runs.
var ErrBusy = errors.New("another quantization is running; try again when it finishes")

// Error is a quantization the request cannot have: a type the engine
// does not offer, a FROM that is not in the store, or a model the
// quantizer refused (named by digest, never by the server's paths).
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func errorf(format string, args ...any) *Error { return &Error{fmt.Sprintf(format, args...)} }

// running is held while a quantization runs. It is one per process,
// not per store: the CPU it saturates is the process's.
var running sync.Mutex

// Begin takes the process's one place for a quantization, or returns
// ErrBusy at once. done gives it back; call it once.
func Begin() (done func(), err error) {
	if !running.TryLock() {
		return nil, ErrBusy
	}
	return running.Unlock, nil
}

// Types lists the quantization types the engine offers ("Q4_K_M", …).
func Types() []string { return engine.QuantizeTypes() }

// CheckType refuses a type the engine does not offer (case does not
// matter), before anything is streamed or written.
func CheckType(typ string) error {
	if err := engine.CheckQuantizeType(typ); err != nil {
		return &Error{err.Error()}
	}
	return nil
}

// From replaces mf's first FROM with a copy of its model quantized to
// typ, written into store as a blob ("@sha256:…"). status reports what
// it does. The caller holds Begin's place.
func From(store *models.Store, mf *models.Modelfile, typ string, status func(string)) error {
	if err := CheckType(typ); err != nil {
		return err
	}
	for i, cmd := range mf.Commands {
		if cmd.Name != models.CmdFrom {
			continue
		}
		var src string
		if d := strings.TrimPrefix(cmd.Value, "@"); models.ValidDigest(d) {
			src, _ = store.BlobPath(d)
		} else if e, err := store.Resolve(cmd.Value); err == nil {
			src = e.Path
		}
		if src == "" {
			return errorf("quantize: FROM %q not found", cmd.Value)
		}
		// The output is at most the input's size; it is written to a
		// temporary file and then copied into the store.
		if fi, err := os.Stat(src); err == nil {
			if err := store.CheckCapacity(fi.Size()); err != nil {
				return err
			}
		}
		tmp, err := os.MkdirTemp("", "tadpole-quantize")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		out := filepath.Join(tmp, "model.gguf")
		status(fmt.Sprintf("quantizing model to %s", strings.ToUpper(typ)))
		if err := engine.Quantize(src, out, typ, 0); err != nil {
			// Named by digest, not by the server's paths.
			return errorf("%s", strings.ReplaceAll(store.Redact(err).Error(), out, "the quantized copy"))
		}
		f, err := os.Open(out)
		if err != nil {
			return err
		}
		defer f.Close()
		d, _, err := store.WriteBlob(f, "")
		if err != nil {
			return err
		}
		mf.Commands[i].Value = "@" + d
		return nil
	}
	return errorf("quantize: no FROM")
}
