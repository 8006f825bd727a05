package engine

// #include <stdlib.h>
// #include "llama.h"
import "C"

import (
	"fmt"
	"sort"
	"strings"
	"unsafe"
)

// quantTypes are the quantizations Quantize offers (llama_ftype values).
var quantTypes = map[string]C.enum_llama_ftype{
	"F16": C.LLAMA_FTYPE_MOSTLY_F16, "BF16": C.LLAMA_FTYPE_MOSTLY_BF16,
	"Q8_0": C.LLAMA_FTYPE_MOSTLY_Q8_0, "Q4_0": C.LLAMA_FTYPE_MOSTLY_Q4_0, "Q4_1": C.LLAMA_FTYPE_MOSTLY_Q4_1,
	"Q5_0": C.LLAMA_FTYPE_MOSTLY_Q5_0, "Q5_1": C.LLAMA_FTYPE_MOSTLY_Q5_1,
	"Q2_K": C.LLAMA_FTYPE_MOSTLY_Q2_K, "Q3_K_S": C.LLAMA_FTYPE_MOSTLY_Q3_K_S, "Q3_K_M": C.LLAMA_FTYPE_MOSTLY_Q3_K_M,
	"Q3_K_L": C.LLAMA_FTYPE_MOSTLY_Q3_K_L, "Q4_K_S": C.LLAMA_FTYPE_MOSTLY_Q4_K_S, "Q4_K_M": C.LLAMA_FTYPE_MOSTLY_Q4_K_M,
	"Q5_K_S": C.LLAMA_FTYPE_MOSTLY_Q5_K_S, "Q5_K_M": C.LLAMA_FTYPE_MOSTLY_Q5_K_M, "Q6_K": C.LLAMA_FTYPE_MOSTLY_Q6_K,
}

// QuantizeTypes lists the names Quantize accepts.
func QuantizeTypes() []string {
	out := make([]string, 0, len(quantTypes))
	for k := range quantTypes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CheckQuantizeType refuses a type Quantize does not accept (case does
// not matter), naming the ones it does.
func CheckQuantizeType(typ string) error {
	if _, ok := quantTypes[strings.ToUpper(typ)]; !ok {
		return fmt.Errorf("unsupported quantization %q (supported: %s)", typ, strings.Join(QuantizeTypes(), ", "))
	}
	return nil
}

// Quantize writes a copy of the GGUF model at in to out with its weights
// quantized to typ (e.g. "Q4_K_M", case-insensitive) by llama.cpp's
// quantizer, using threads threads (0: all CPUs). Tensors whose row size
// does not fit the type's block size fall back to a compatible type, as in
// llama.cpp's llama-quantize.
func Quantize(in, out, typ string, threads int) error {
	Init("")
	if err := CheckQuantizeType(typ); err != nil {
		return err
	}
	ft := quantTypes[strings.ToUpper(typ)]
	if _, err := checkFile(in); err != nil {
		return err
	}
	p := C.llama_model_quantize_default_params()
	p.ftype = ft
	if threads <= 0 {
		threads = DefaultThreads()
	}
	p.nthread = C.int32_t(threads)
	cin, cout := C.CString(in), C.CString(out)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(cout))
	takeLogErrors()
	if rc := C.llama_model_quantize(cin, cout, &p); rc != 0 {
		return fmt.Errorf("quantize %s to %s: %s", in, typ, strings.Join(takeLogErrors(), "; "))
	}
	return nil
}
