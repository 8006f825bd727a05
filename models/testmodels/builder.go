package testmodels

import (
	"fmt"
	"math"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// modelBuilder collects the metadata and tensors of a random-weight model
// of one architecture: the keys under "<arch>." and the tensors, whose
// pseudo-random values depend only on the seed and the tensor's name.
type modelBuilder struct {
	arch    string
	t       gguf.TensorType // type of the weight matrices
	seed    int64
	kvs     []gguf.KV
	tensors []gguf.Tensor
	err     error
}

// newModelBuilder starts a model of architecture arch, weight type t (F32,
// F16, Q8_0 or Q4_0) and the given name, with the general.* keys.
func newModelBuilder(arch, name string, t gguf.TensorType, seed int64) *modelBuilder {
	ft, _ := gguf.FileTypeOf(t)
	b := &modelBuilder{arch: arch, t: t, seed: seed}
	b.kvs = []gguf.KV{
		{Key: "general.architecture", Value: arch},
		{Key: "general.name", Value: name},
		{Key: "general.description", Value: "Random weights for tests and benchmarks; the output is gibberish."},
		{Key: "general.file_type", Value: uint32(ft)},
	}
	if t.BlockSize() > 1 {
		b.kvs = append(b.kvs, gguf.KV{Key: "general.quantization_version", Value: uint32(2)})
	}
	return b
}

// key adds "<arch>.<suffix>".
func (b *modelBuilder) key(suffix string, v any) {
	b.kvs = append(b.kvs, gguf.KV{Key: b.arch + "." + suffix, Value: v})
}

// random adds a tensor of pseudo-random values of standard deviation std;
// dims are in ggml order (dims[0] is the row length).
func (b *modelBuilder) random(name string, typ gguf.TensorType, std float64, dims ...int) {
	n := uint64(1)
	ud := make([]uint64, len(dims))
	for i, d := range dims {
		ud[i] = uint64(d)
		n *= uint64(d)
	}
	fill, err := randomFill(typ, n, float32(std), b.seed, name)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("%s: %w", name, err)
	}
	b.tensors = append(b.tensors, gguf.Tensor{Name: name, Dims: ud, Type: typ, Fill: fill})
}

// matrix adds a weight matrix of the model's weight type.
func (b *modelBuilder) matrix(name string, std float64, dims ...int) {
	b.random(name, b.t, std, dims...)
}

// f32 adds an F32 tensor holding vals.
func (b *modelBuilder) f32(name string, vals []float32, dims ...int) {
	ud := make([]uint64, len(dims))
	n := 1
	for i, d := range dims {
		ud[i] = uint64(d)
		n *= d
	}
	if n != len(vals) && b.err == nil {
		b.err = fmt.Errorf("%s: %d values for %d elements", name, len(vals), n)
	}
	b.tensors = append(b.tensors, gguf.Tensor{Name: name, Dims: ud, Type: gguf.F32, Data: encodeF32(vals, gguf.F32)})
}

// ones adds an F32 vector of n ones (a norm that leaves its input as is).
func (b *modelBuilder) ones(name string, n int) {
	b.tensors = append(b.tensors, gguf.Tensor{Name: name, Dims: []uint64{uint64(n)}, Type: gguf.F32, Data: constF32(n, 1)})
}

// uniform returns n values uniform in [lo, hi), determined by the seed and
// name.
func (b *modelBuilder) uniform(name string, n int, lo, hi float64) []float32 {
	r := tensorRNG(b.seed, name)
	vals := make([]float32, n)
	for i := range vals {
		u := (float64(r.uniform()) + 1) / 2
		vals[i] = float32(lo + u*(hi-lo))
	}
	return vals
}

func (b *modelBuilder) done() ([]gguf.KV, []gguf.Tensor, error) {
	if b.err != nil {
		return nil, nil, b.err
	}
	return b.kvs, b.tensors, nil
}

// fanIn is the standard deviation 1/sqrt(n) that keeps a matrix product
// over n inputs of order 1.
func fanIn(n int) float64 { return 1 / math.Sqrt(float64(n)) }

// checkWeightType refuses the weight types the random models do not write.
func checkWeightType(t gguf.TensorType) error {
	switch t {
	case gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0:
		return nil
	}
	return fmt.Errorf("weight type %s not supported (F32, F16, Q8_0, Q4_0)", t)
}

// checkRows checks that every named row length is a positive multiple of
// the block size of t (a quantized matrix's rows are whole blocks).
func checkRows(t gguf.TensorType, rows map[string]int) error {
	bs := int(t.BlockSize())
	for name, n := range rows {
		if n <= 0 {
			return fmt.Errorf("%s is %d, want a positive width", name, n)
		}
		if n%bs != 0 {
			return fmt.Errorf("%s %d is not a multiple of the %s block size %d", name, n, t, bs)
		}
	}
	return nil
}

// unquantized is the type of the matrices that llama.cpp's quantizer keeps
// in float (per_layer_model_proj): t itself when it is a float type, else
// F16.
func unquantized(t gguf.TensorType) gguf.TensorType {
	if t.BlockSize() > 1 {
		return gguf.F16
	}
	return t
}
