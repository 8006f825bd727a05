package gguf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every error of [File.Validate]: the file parses,
// but its header contradicts its tensors or holds a value llama.cpp cannot
// load (or would abort the process on, or allocate without bound from).
var ErrInvalid = errors.New("invalid model file")

// Limits Validate enforces. Those named after llama.cpp are llama.cpp's own
// (llama-hparams.h, ggml.h); the others are far above any released model
// and keep what is sized from the header (per-layer arrays, the KV cache,
// the vocabulary) within memory a host has.
const (
	MaxTensors         = 1 << 18 // tensors in one file
	MaxKVs             = 1 << 16 // metadata pairs in one file
	MaxArrayLength     = 1 << 24 // elements of one metadata array
	MaxTensorName      = 63      // bytes; GGML_MAX_NAME is 64 with the NUL
	MaxBlockCount      = 512     // LLAMA_MAX_LAYERS
	MaxExperts         = 512     // LLAMA_MAX_EXPERTS
	MaxContextLength   = 1 << 24 // <arch>.context_length
	MaxEmbeddingLength = 1 << 20 // <arch>.embedding_length
	MaxFeedForward     = 1 << 22 // <arch>.feed_forward_length, per layer
	MaxHeadSize        = 1 << 16 // <arch>.attention.key_length / value_length
	MaxVocab           = 1 << 24 // tokens; llama.cpp's token ids are int32
	MaxSSMSize         = 1 << 20 // <arch>.ssm.* sizes of recurrent state
)

// ValidationError is an error of [File.Validate]. It matches [ErrInvalid]
// with errors.Is.
type ValidationError struct {
	// Key is the metadata key or tensor name at fault.
	Key string
	// Msg says what is wrong; it names Key and the bad value.
	Msg string
}

func (e *ValidationError) Error() string { return "gguf: " + e.Msg }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

func invalid(key, format string, args ...any) error {
	return &ValidationError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// ValidateFile reads the header of the GGUF file at path and validates it
// ([Open], then [File.Validate]).
func ValidateFile(path string) (*File, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// IsModel reports whether the file is a language model rather than a LoRA
// adapter (general.type "adapter") or a multimodal projector
// (general.type "projector"/"mmproj", or architecture "clip").
func (f *File) IsModel() bool {
	typ, _ := f.String("general.type")
	return (typ == "" || typ == "model") && f.Architecture() != "clip"
}

// Validate checks the header of a file before anything is sized from it,
// so that a crafted or broken model is refused when it enters the store
// rather than when it is first loaded. Every file: counts bounded
// ([MaxTensors], [MaxKVs], [MaxArrayLength]), tensor names shorter than
// ggml's limit, every dimension at least 1 (ggml's GGUF reader divides by
// them), known tensor types, every tensor's data inside the file. A
// language model ([File.IsModel]) also: the hyperparameters llama.cpp
// reads when loading (see validateModel).
//
// The error is a *[ValidationError] naming the key and the bad value.
func (f *File) Validate() error {
	if err := f.validateLayout(); err != nil {
		return err
	}
	if !f.IsModel() {
		return nil
	}
	return f.validateModel()
}

// validateLayout checks what every GGUF file must satisfy. The reader
// checks most of it already; File values built another way get it here.
func (f *File) validateLayout() error {
	if len(f.Tensors) > MaxTensors {
		return invalid("tensor count", "the file has %d tensors, at most %d allowed", len(f.Tensors), MaxTensors)
	}
	if len(f.KVs) > MaxKVs {
		return invalid("metadata count", "the file has %d metadata keys, at most %d allowed", len(f.KVs), MaxKVs)
	}
	for _, kv := range f.KVs {
		if err := checkArrayLengths(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	room := uint64(max(f.Size-f.DataOffset, 0))
	for _, t := range f.Tensors {
		if len(t.Name) > MaxTensorName {
			return invalid(t.Name, "tensor name %q is %d bytes long, at most %d allowed", t.Name, len(t.Name), MaxTensorName)
		}
		for i, d := range t.Dims {
			if d == 0 {
				return invalid(t.Name, "tensor %s has dimension %d of size 0 (shape %v)", t.Name, i, t.Dims)
			}
		}
		_, size, err := TensorSize(t.Type, t.Dims)
		if err != nil {
			return invalid(t.Name, "tensor %s: %v", t.Name, err)
		}
		// size and offset are both below 2^63 here, so the sum cannot wrap.
		if t.Offset > room || size > room-t.Offset {
			return invalid(t.Name, "tensor %s (offset %d, %d bytes) runs past the end of the file (%d bytes of data)",
				t.Name, t.Offset, size, room)
		}
	}
	return nil
}

// checkArrayLengths bounds an array value and the arrays nested in it.
func checkArrayLengths(key string, v any) error {
	n := arrayLen(v)
	if n < 0 {
		return nil
	}
	if n > MaxArrayLength {
		return invalid(key, "%s is an array of %d elements, at most %d allowed", key, n, MaxArrayLength)
	}
	if nested, ok := v.([]any); ok {
		for _, x := range nested {
			if err := checkArrayLengths(key, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// arrayLen is the length of an array value, or -1 for a scalar.
func arrayLen(v any) int {
	switch a := v.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	case []any:
		return len(a)
	}
	return -1
}

// blockIndex is N of a tensor named "blk.N.…", or ok false.
func blockIndex(name string) (n uint64, ok bool, err error) {
	rest, found := strings.CutPrefix(name, "blk.")
	if !found {
		return 0, false, nil
	}
	digits, _, found := strings.Cut(rest, ".")
	if !found || digits == "" {
		return 0, false, nil
	}
	n, err = strconv.ParseUint(digits, 10, 32)
	if err != nil {
		return 0, false, invalid(name, "tensor %s has a block index that is not a number below 2^32", name)
	}
	return n, true, nil
}
