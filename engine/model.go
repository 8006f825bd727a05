package engine

// #include <stdlib.h>
// #include <stdint.h>
// #include "llama.h"
//
// extern _Bool tadpoleProgress(float progress, void *user);
// static void tadpole_set_progress(struct llama_model_params *p, uintptr_t h) {
//     p->progress_callback = (llama_progress_callback)tadpoleProgress;
//     p->progress_callback_user_data = (void *)h;
// }
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Load errors. Each failure to load a model wraps exactly one of these, so
// callers can map them to a status code with errors.Is.
var (
	ErrModelNotFound = errors.New("model file not found")
	ErrNotGGUF       = gguf.ErrNotGGUF
	ErrUnsupported   = gguf.ErrUnsupportedVersion
	ErrLoadFailed    = errors.New("llama.cpp could not load the model")
	ErrLoadCancelled = errors.New("model load cancelled")
	// ErrUnknownArchitecture: the GGUF's general.architecture is not one
	// the linked llama.cpp knows (ArchitectureError says which).
	ErrUnknownArchitecture = errors.New("unsupported model architecture")
)

// ArchitectureError is a model whose architecture the linked llama.cpp
// does not know; it matches ErrUnknownArchitecture.
type ArchitectureError struct{ Arch string }

func (e *ArchitectureError) Error() string {
	return fmt.Sprintf("model architecture %q is not supported by the engine (llama.cpp %s)", e.Arch, LlamaRelease())
}

func (e *ArchitectureError) Is(target error) bool { return target == ErrUnknownArchitecture }

var knownArch sync.Map // architecture name → true, once a file of it loaded

// CheckArchitecture loads the vocabulary of the GGUF model at path (no
// weights), which is where llama.cpp refuses an architecture it does not
// know: it returns an *ArchitectureError for one, nil for a known one (an
// architecture that loaded once is not checked again), and other load
// errors as LoadModel does.
func CheckArchitecture(path string) error {
	gf, err := checkFile(path)
	if err != nil {
		return err
	}
	arch := gf.Architecture()
	if _, ok := knownArch.Load(arch); ok {
		return nil
	}
	m, err := LoadModel(path, ModelParams{VocabOnly: true})
	if err != nil {
		return err
	}
	m.Close()
	return nil
}

// ModelParams are the load-time options of a model. The zero value loads
// the whole model on the CPU with mmap.
type ModelParams struct {
	// GPULayers is the number of layers to offload; negative means all.
	GPULayers int
	// MainGPU is the device used when the model is not split.
	MainGPU int
	// TensorSplit is the proportion of the model for each GPU (nil: even).
	TensorSplit []float32
	// NoMMap reads the weights into memory instead of mapping the file.
	NoMMap bool
	// MLock keeps the weights resident in RAM.
	MLock bool
	// VocabOnly loads the vocabulary and metadata only, no weights.
	VocabOnly bool
	// Progress, if set, is called with values from 0 to 1 during the load;
	// returning false aborts the load with ErrLoadCancelled.
	Progress func(progress float32) bool
}

// Model is a loaded GGUF model. It is safe for concurrent use: contexts
// made from it share the weights read-only.
type Model struct {
	c     *C.struct_llama_model
	vocab *C.struct_llama_vocab
	path  string
	// nVocab is the vocabulary size, read once for the id checks.
	nVocab int
	Meta   Metadata
	// GGUF is the file's metadata with typed values, read before loading.
	GGUF *gguf.File
	// cuts is where long texts may be tokenized in pieces (tokcut.go),
	// made on first use.
	cutsOnce     sync.Once
	cuts         *tokenCuts
	control      controlTexts // control tokens' texts (literal.go)
	adapterState              // LoRA adapters loaded for it (lora.go)
}

//export tadpoleProgress
func tadpoleProgress(progress C.float, user unsafe.Pointer) C._Bool {
	f := cgo.Handle(uintptr(user)).Value().(func(float32) bool)
	return C._Bool(f(float32(progress)))
}

// LoadModel loads the GGUF file at path. A missing file, a file that is
// not GGUF and a GGUF version llama.cpp no longer reads each give their own
// error; a failed load leaves nothing allocated.
func LoadModel(path string, p ModelParams) (*Model, error) {
	Init("")
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	gf, err := checkFile(path)
	if err != nil {
		return nil, err
	}
	mp := C.llama_model_default_params()
	if p.GPULayers < 0 {
		mp.n_gpu_layers = 999
	} else {
		mp.n_gpu_layers = C.int32_t(p.GPULayers)
	}
	mp.main_gpu = C.int32_t(p.MainGPU)
	switch {
	case p.NoMMap && p.MLock:
		mp.load_mode = C.LLAMA_LOAD_MODE_MLOCK
	case p.NoMMap:
		mp.load_mode = C.LLAMA_LOAD_MODE_NONE
	case p.MLock:
		mp.load_mode = C.LLAMA_LOAD_MODE_MMAP_MLOCK
	default:
		mp.load_mode = C.LLAMA_LOAD_MODE_MMAP
	}
	mp.vocab_only = C.bool(p.VocabOnly)
	if len(p.TensorSplit) > 0 {
		max := int(C.llama_max_devices())
		split := unsafe.Slice((*C.float)(C.calloc(C.size_t(max), C.sizeof_float)), max)
		defer C.free(unsafe.Pointer(&split[0]))
		for i := 0; i < len(p.TensorSplit) && i < max; i++ {
			split[i] = C.float(p.TensorSplit[i])
		}
		mp.tensor_split = &split[0]
	}
	cancelled := false
	if p.Progress != nil {
		h := cgo.NewHandle(func(f float32) bool {
			ok := p.Progress(f)
			cancelled = cancelled || !ok
			return ok
		})
		defer h.Delete()
		C.tadpole_set_progress(&mp, C.uintptr_t(h))
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	takeLogErrors()
	c := C.llama_model_load_from_file(cpath, mp)
	if c == nil {
		if cancelled {
			return nil, fmt.Errorf("load %s: %w", path, ErrLoadCancelled)
		}
		detail := strings.Join(takeLogErrors(), "; ")
		if strings.Contains(detail, "unknown model architecture") {
			return nil, fmt.Errorf("load %s: %w", path, &ArchitectureError{Arch: gf.Architecture()})
		}
		if detail == "" {
			detail = "see the server log"
		}
		return nil, fmt.Errorf("load %s: %w: %s", path, ErrLoadFailed, detail)
	}
	knownArch.Store(gf.Architecture(), true)
	m := &Model{c: c, vocab: C.llama_model_get_vocab(c), path: path, GGUF: gf}
	m.nVocab = m.VocabSize()
	m.Meta = m.readMetadata()
	return m, nil
}

// checkFile gives a missing, non-GGUF or too-old file its own error before
// llama.cpp sees it, and returns the file's GGUF metadata.
func checkFile(path string) (*gguf.File, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("load %s: %w", path, ErrModelNotFound)
		}
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	// The store validates models when they enter it; this is the last
	// line for files that reach the engine another way (a models
	// directory, a file replaced after it was listed): nothing llama.cpp
	// would size an allocation from or assert on gets to it.
	f, err := gguf.ValidateFile(path) // its errors name the path
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	return f, nil
}

// Close frees the model's weights. Contexts made from it must be closed
// first.
func (m *Model) Close() {
	if m == nil || m.c == nil {
		return
	}
	m.closeAdapters() // llama_model_free frees them
	C.llama_model_free(m.c)
	m.c = nil
	m.vocab = nil
}

// Path is the file the model was loaded from.
func (m *Model) Path() string { return m.path }

// Metadata describes a model. KV holds every GGUF key/value as llama.cpp
// renders it (arrays are summarised, e.g. "arr[str,512]"); Model.GGUF has
// the typed values.
type Metadata struct {
	Architecture  string
	Name          string
	Description   string // llama.cpp's one-line description
	ParameterSize uint64
	SizeBytes     uint64
	FileType      string // quantization, e.g. "Q4_0", "F16"
	ContextLength int
	EmbeddingLen  int
	Layers        int
	Heads         int
	HeadsKV       int
	VocabSize     int
	ChatTemplate  string
	// ChatTemplates are the named variants (tokenizer.chat_template.NAME,
	// e.g. "tool_use"), by name.
	ChatTemplates map[string]string
	KV            map[string]string
}

func (m *Model) readMetadata() Metadata {
	// Shapes come from the GGUF header: llama.cpp's per-layer getters abort
	// on a vocab-only model.
	g := m.GGUF
	archInt := func(k string) int { n, _ := g.ArchUint(k); return int(n) }
	md := Metadata{
		Architecture:  g.Architecture(),
		Name:          g.Name(),
		ParameterSize: g.ParameterCount(),
		SizeBytes:     uint64(C.llama_model_size(m.c)),
		FileType:      "unknown",
		ContextLength: int(g.ContextLength()),
		EmbeddingLen:  archInt("embedding_length"),
		Layers:        archInt("block_count"),
		Heads:         archInt("attention.head_count"),
		HeadsKV:       archInt("attention.head_count_kv"),
		VocabSize:     int(C.llama_vocab_n_tokens(m.vocab)),
		KV:            map[string]string{},
	}
	if ft, ok := g.FileType(); ok {
		md.FileType = ft.String()
	}
	if md.HeadsKV == 0 {
		md.HeadsKV = md.Heads
	}
	buf := make([]byte, 4096)
	str := func(f func(*C.char, C.size_t) C.int32_t) string {
		for {
			n := int(f((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf))))
			if n < 0 {
				return ""
			}
			if n < len(buf) {
				return string(buf[:n])
			}
			buf = make([]byte, n+1)
		}
	}
	md.Description = str(func(b *C.char, n C.size_t) C.int32_t { return C.llama_model_desc(m.c, b, n) })
	count := int(C.llama_model_meta_count(m.c))
	for i := 0; i < count; i++ {
		k := str(func(b *C.char, n C.size_t) C.int32_t { return C.llama_model_meta_key_by_index(m.c, C.int32_t(i), b, n) })
		v := str(func(b *C.char, n C.size_t) C.int32_t {
			return C.llama_model_meta_val_str_by_index(m.c, C.int32_t(i), b, n)
		})
		md.KV[k] = v
	}
	if t := C.llama_model_chat_template(m.c, nil); t != nil {
		md.ChatTemplate = C.GoString(t)
	}
	for k := range md.KV {
		name, ok := strings.CutPrefix(k, "tokenizer.chat_template.")
		if !ok || name == "" {
			continue
		}
		cname := C.CString(name)
		if t := C.llama_model_chat_template(m.c, cname); t != nil {
			if md.ChatTemplates == nil {
				md.ChatTemplates = map[string]string{}
			}
			md.ChatTemplates[name] = C.GoString(t)
		}
		C.free(unsafe.Pointer(cname))
	}
	return md
}

// Native is the model's llama_model pointer, for a cgo binding in another
// package that passes it to llama.cpp's companion libraries (engine/mtmd);
// nil for a nil or closed model. The model must outlive every use.
func (m *Model) Native() unsafe.Pointer {
	if m == nil || m.c == nil {
		return nil
	}
	return unsafe.Pointer(m.c)
}
