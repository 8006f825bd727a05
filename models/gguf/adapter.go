package gguf

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// AdapterInfo is what CheckAdapter found in a LoRA adapter.
type AdapterInfo struct {
	Alpha   float32 // adapter.lora.alpha (0: none)
	Tensors int     // base tensors it changes
	Bytes   uint64  // its tensors' size
}

// loraTypes are the tensor types an adapter's tensors may have: those
// whose matrix products llama.cpp's CPU backend computes (as PEFT's
// converter writes them).
var loraTypes = map[TensorType]bool{F32: true, F16: true, BF16: true, Q8_0: true}

// CheckAdapter checks a LoRA adapter's header against its base model's:
// everything llama.cpp reads from it, asserts on or sizes an allocation
// by (llama_adapter_lora_init: gguf_get_val_str and _f32 assert on a key
// of another type), so that an adapter that does not fit its base is an
// error naming both, at create and at load, never an abort.
func CheckAdapter(f, base *File) (AdapterInfo, error) {
	str := func(key, want string) error {
		v, ok := f.Get(key)
		s, isStr := v.(string)
		switch {
		case !ok:
			return fmt.Errorf("%s is missing (want %q)", key, want)
		case !isStr:
			return fmt.Errorf("%s is a %T, not a string", key, v)
		case want != "" && s != want:
			return fmt.Errorf("%s is %q, want %q", key, s, want)
		}
		return nil
	}
	var a AdapterInfo
	if err := str("general.type", "adapter"); err != nil {
		return a, err
	}
	if err := str("adapter.type", "lora"); err != nil {
		return a, err
	}
	if err := str("general.architecture", ""); err != nil {
		return a, err
	}
	if arch := f.Architecture(); arch != base.Architecture() {
		return a, fmt.Errorf("it is for %q models, and the base model is %q", arch, base.Architecture())
	}
	if v, ok := f.Get("adapter.lora.alpha"); ok {
		alpha, isF32 := v.(float32)
		if !isF32 || math.IsNaN(float64(alpha)) || math.IsInf(float64(alpha), 0) || alpha < 0 {
			return a, fmt.Errorf("adapter.lora.alpha must be a finite, non-negative float32, got %T %v", v, v)
		}
		a.Alpha = alpha
	}
	if v, ok := f.Get("adapter.alora.invocation_tokens"); ok {
		toks, isU32 := v.([]uint32)
		if !isU32 {
			return a, fmt.Errorf("adapter.alora.invocation_tokens must be an array of uint32, got %T", v)
		}
		if vocab, ok := base.Strings("tokenizer.ggml.tokens"); ok {
			for _, t := range toks {
				if int64(t) >= int64(len(vocab)) {
					return a, fmt.Errorf("adapter.alora.invocation_tokens holds token %d, past the base model's vocabulary of %d", t, len(vocab))
				}
			}
		}
	}
	tensors := map[string]TensorInfo{}
	for _, t := range base.Tensors {
		tensors[t.Name] = t
	}
	type pair struct{ a, b *TensorInfo }
	pairs := map[string]*pair{}
	var order []string
	for i := range f.Tensors {
		t := &f.Tensors[i]
		name, isA := strings.CutSuffix(t.Name, ".lora_a")
		isB := false
		if !isA {
			name, isB = strings.CutSuffix(t.Name, ".lora_b")
		}
		if !isA && !isB {
			return a, fmt.Errorf("tensor %q is not a LoRA tensor (its name must end in .lora_a or .lora_b)", t.Name)
		}
		if !loraTypes[t.Type] {
			return a, fmt.Errorf("tensor %q has type %s; adapters here hold F32, F16, BF16 or Q8_0", t.Name, t.Type)
		}
		if len(t.Dims) != 2 {
			return a, fmt.Errorf("tensor %q has %d dimensions, want 2", t.Name, len(t.Dims))
		}
		p := pairs[name]
		if p == nil {
			p = &pair{}
			pairs[name] = p
			order = append(order, name)
		}
		if isA {
			p.a = t
		} else {
			p.b = t
		}
		a.Bytes += t.Size()
	}
	if len(pairs) == 0 {
		return a, errors.New("it has no tensors")
	}
	// In file order, so that a file with several faults always names the
	// same one.
	for _, name := range order {
		p := pairs[name]
		if p.a == nil || p.b == nil {
			return a, fmt.Errorf("tensor %q has only one of its .lora_a and .lora_b", name)
		}
		w, ok := tensors[name]
		if !ok {
			return a, fmt.Errorf("tensor %q is not in the base model (an adapter for another model?)", name)
		}
		if len(w.Dims) != 2 {
			return a, fmt.Errorf("tensor %q of the base model is not a matrix", name)
		}
		if name == "token_embd.weight" {
			// llama.cpp applies it flipped (llm_build_inp_embd).
			if w.Dims[0] != p.b.Dims[1] || w.Dims[1] != p.a.Dims[1] || p.a.Dims[0] != p.b.Dims[0] {
				return a, fmt.Errorf("tensor %q: shapes %v × %v do not fit the base model's %v", name, p.a.Dims, p.b.Dims, w.Dims)
			}
		} else if w.Dims[0] != p.a.Dims[0] || w.Dims[1] != p.b.Dims[1] || p.a.Dims[1] != p.b.Dims[0] {
			return a, fmt.Errorf("tensor %q: shapes %v × %v do not fit the base model's %v (rank %d)", name, p.a.Dims, p.b.Dims, w.Dims, p.a.Dims[1])
		}
		a.Tensors++
	}
	return a, nil
}
