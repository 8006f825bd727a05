package engine

// #include <stdlib.h>
// #include "llama.h"
import "C"

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Adapter is a LoRA adapter loaded for one model (llama_adapter_lora):
// its low-rank tensors live beside the model's weights, which it shares
// with every context and every other adapter of that model. A context
// applies a set of adapters with scales (Context.SetAdapters); Close
// frees it, and the model's Close frees the adapters still open.
type Adapter struct {
	c     *C.struct_llama_adapter_lora
	model *Model
	path  string
	// Alpha is adapter.lora.alpha (0: none; the scale is then the
	// request's scale alone, else scale·alpha/rank per tensor).
	Alpha float32
	// Tensors is the number of base tensors the adapter changes; Bytes
	// the size of its tensors.
	Tensors int
	Bytes   uint64
}

// MaxAdapterScale bounds the scale of an adapter in a set: llama.cpp
// takes any float, and a huge or non-finite one only fills the logits with
// Inf or NaN; a useful scale is within ±1, rarely beyond ±2.
const MaxAdapterScale = 10

// MaxAdapters is the most adapters one context applies at once (each
// adds six graph nodes per tensor it changes).
const MaxAdapters = 16

// ErrAdapter wraps every error of an adapter file that does not fit its
// model.
var ErrAdapter = errors.New("LoRA adapter")

// LoadAdapter loads the GGUF LoRA adapter at path for m. The file is
// checked first against everything llama.cpp reads from it, asserts on
// or sizes an allocation by (its metadata's types, the tensors' names,
// pairs, types and shapes against m's own tensors): a file that does not
// fit m is an error wrapping ErrAdapter, never an abort.
func (m *Model) LoadAdapter(path string) (*Adapter, error) {
	if m == nil || m.c == nil {
		return nil, errors.New("load adapter: the model is closed")
	}
	// The header first (bounded reads), then what makes it an adapter for
	// m, then the whole file's consistency (gguf's Validate: tensor
	// types, sizes and offsets within the file).
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrAdapter, path, err)
	}
	a, err := checkAdapter(f, m)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrAdapter, path, err)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrAdapter, path, err)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	takeLogErrors()
	c := C.llama_adapter_lora_init(m.c, cpath)
	if c == nil {
		detail := strings.Join(takeLogErrors(), "; ")
		if detail == "" {
			detail = "see the server log"
		}
		return nil, fmt.Errorf("%w %s: llama.cpp could not load it: %s", ErrAdapter, path, detail)
	}
	a.c, a.model, a.path = c, m, path
	m.adaptersMu.Lock()
	if m.adapters == nil {
		m.adapters = map[*Adapter]bool{}
	}
	m.adapters[a] = true
	m.adaptersMu.Unlock()
	return a, nil
}

// checkAdapter checks an adapter file's header against m's
// (gguf.CheckAdapter, with m's own vocabulary for alora tokens).
func checkAdapter(f *gguf.File, m *Model) (*Adapter, error) {
	info, err := gguf.CheckAdapter(f, m.GGUF)
	if err != nil {
		return nil, err
	}
	if v, ok := f.Get("adapter.alora.invocation_tokens"); ok {
		for _, t := range v.([]uint32) { // CheckAdapter checked the type
			if int64(t) >= int64(m.nVocab) {
				return nil, fmt.Errorf("adapter.alora.invocation_tokens holds token %d, past the model's vocabulary of %d", t, m.nVocab)
			}
		}
	}
	return &Adapter{Alpha: info.Alpha, Tensors: info.Tensors, Bytes: info.Bytes}, nil
}

// Path is the file the adapter was loaded from.
func (a *Adapter) Path() string { return a.path }

// Model is the model the adapter belongs to.
func (a *Adapter) Model() *Model { return a.model }

// Close frees the adapter. Contexts that apply it must have dropped it
// first (SetAdapters without it); a second Close does nothing.
func (a *Adapter) Close() {
	if a == nil || a.c == nil {
		return
	}
	m := a.model
	m.adaptersMu.Lock()
	defer m.adaptersMu.Unlock()
	if a.c == nil || !m.adapters[a] {
		return
	}
	delete(m.adapters, a)
	C.llama_adapter_lora_free(a.c)
	a.c = nil
}

// closeAdapters marks the model's adapters closed: llama_model_free frees
// them with the model.
func (m *Model) closeAdapters() {
	m.adaptersMu.Lock()
	defer m.adaptersMu.Unlock()
	for a := range m.adapters {
		a.c = nil
	}
	m.adapters = nil
}

// adapterState is a Model's open adapters.
type adapterState struct {
	adaptersMu sync.Mutex
	adapters   map[*Adapter]bool
}

// SetAdapters makes the context apply adapters with scales (the same
// length) to every decode from now on; none removes them all. A scale of
// 0 leaves its adapter out. Each adapter must be open and belong to the
// context's model, appear once, and have a finite scale within
// ±MaxAdapterScale. llama.cpp re-plans the context's compute graph when
// the set changes, so callers group work by set.
func (c *Context) SetAdapters(adapters []*Adapter, scales []float32) error {
	if len(adapters) != len(scales) {
		return fmt.Errorf("%d adapters and %d scales", len(adapters), len(scales))
	}
	if len(adapters) > MaxAdapters {
		return fmt.Errorf("%d adapters at once; at most %d", len(adapters), MaxAdapters)
	}
	m := c.model
	m.adaptersMu.Lock()
	defer m.adaptersMu.Unlock()
	ptrs := make([]*C.struct_llama_adapter_lora, len(adapters))
	cs := make([]C.float, len(adapters))
	seen := map[*Adapter]bool{}
	for i, a := range adapters {
		switch {
		case a == nil || a.c == nil || !m.adapters[a]:
			return fmt.Errorf("adapter %d is closed or not of this model", i)
		case seen[a]:
			return fmt.Errorf("adapter %s is in the set twice", a.path)
		case math.IsNaN(float64(scales[i])) || math.Abs(float64(scales[i])) > MaxAdapterScale:
			return fmt.Errorf("scale %v of adapter %s is out of range (-%d..%d)", scales[i], a.path, MaxAdapterScale, MaxAdapterScale)
		}
		seen[a] = true
		ptrs[i], cs[i] = a.c, C.float(scales[i])
	}
	if len(adapters) == 0 {
		C.llama_set_adapters_lora(c.c, nil, 0, nil)
		return nil
	}
	// The arrays go to C for the call only; Go memory holding C pointers
	// (ptrs) is allowed there as it holds no Go pointers.
	C.llama_set_adapters_lora(c.c, &ptrs[0], C.size_t(len(ptrs)), &cs[0])
	return nil
}
