package gguf

import (
	"fmt"
	"math/bits"
)

// Type is the type of a GGUF metadata value.
type Type uint32

// The GGUF metadata value types.
const (
	TypeUint8   Type = 0
	TypeInt8    Type = 1
	TypeUint16  Type = 2
	TypeInt16   Type = 3
	TypeUint32  Type = 4
	TypeInt32   Type = 5
	TypeFloat32 Type = 6
	TypeBool    Type = 7
	TypeString  Type = 8
	TypeArray   Type = 9
	TypeUint64  Type = 10
	TypeInt64   Type = 11
	TypeFloat64 Type = 12
)

var typeNames = [...]string{
	TypeUint8: "uint8", TypeInt8: "int8", TypeUint16: "uint16", TypeInt16: "int16",
	TypeUint32: "uint32", TypeInt32: "int32", TypeFloat32: "float32", TypeBool: "bool",
	TypeString: "string", TypeArray: "array", TypeUint64: "uint64", TypeInt64: "int64",
	TypeFloat64: "float64",
}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Valid reports whether t is a known value type.
func (t Type) Valid() bool { return t <= TypeFloat64 }

// fixedSize is the encoded size of a scalar of type t, or 0 for strings
// and arrays (and unknown types).
func (t Type) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the smallest number of bytes one value of type t takes.
func (t Type) minSize() int {
	switch t {
	case TypeString:
		return 8 // length
	case TypeArray:
		return 12 // element type + count
	}
	return t.fixedSize()
}

// KV is one metadata key/value pair. See the package documentation for the
// Go types of Value.
type KV struct {
	Key   string
	Value any
}

// TensorType is a ggml tensor data type, as stored in a GGUF tensor info.
// The values are ggml's (ggml.h, enum ggml_type).
type TensorType uint32

// The ggml tensor types. Values 4, 5 and 31-33, 36-38 were removed from
// ggml and are not valid in GGUF files.
const (
	F32     TensorType = 0
	F16     TensorType = 1
	Q4_0    TensorType = 2
	Q4_1    TensorType = 3
	Q5_0    TensorType = 6
	Q5_1    TensorType = 7
	Q8_0    TensorType = 8
	Q8_1    TensorType = 9
	Q2_K    TensorType = 10
	Q3_K    TensorType = 11
	Q4_K    TensorType = 12
	Q5_K    TensorType = 13
	Q6_K    TensorType = 14
	Q8_K    TensorType = 15
	IQ2_XXS TensorType = 16
	IQ2_XS  TensorType = 17
	IQ3_XXS TensorType = 18
	IQ1_S   TensorType = 19
	IQ4_NL  TensorType = 20
	IQ3_S   TensorType = 21
	IQ2_S   TensorType = 22
	IQ4_XS  TensorType = 23
	I8      TensorType = 24
	I16     TensorType = 25
	I32     TensorType = 26
	I64     TensorType = 27
	F64     TensorType = 28
	IQ1_M   TensorType = 29
	BF16    TensorType = 30
	TQ1_0   TensorType = 34
	TQ2_0   TensorType = 35
	MXFP4   TensorType = 39
)

type tensorTraits struct {
	name      string
	blockSize uint64 // elements per block
	typeSize  uint64 // bytes per block
}

// From ggml's type_traits table (ggml.c) and block structs (ggml-common.h).
var tensorTypes = map[TensorType]tensorTraits{
	F32:     {"F32", 1, 4},
	F16:     {"F16", 1, 2},
	Q4_0:    {"Q4_0", 32, 18},
	Q4_1:    {"Q4_1", 32, 20},
	Q5_0:    {"Q5_0", 32, 22},
	Q5_1:    {"Q5_1", 32, 24},
	Q8_0:    {"Q8_0", 32, 34},
	Q8_1:    {"Q8_1", 32, 36},
	Q2_K:    {"Q2_K", 256, 84},
	Q3_K:    {"Q3_K", 256, 110},
	Q4_K:    {"Q4_K", 256, 144},
	Q5_K:    {"Q5_K", 256, 176},
	Q6_K:    {"Q6_K", 256, 210},
	Q8_K:    {"Q8_K", 256, 292},
	IQ2_XXS: {"IQ2_XXS", 256, 66},
	IQ2_XS:  {"IQ2_XS", 256, 74},
	IQ3_XXS: {"IQ3_XXS", 256, 98},
	IQ1_S:   {"IQ1_S", 256, 50},
	IQ4_NL:  {"IQ4_NL", 32, 18},
	IQ3_S:   {"IQ3_S", 256, 110},
	IQ2_S:   {"IQ2_S", 256, 82},
	IQ4_XS:  {"IQ4_XS", 256, 136},
	I8:      {"I8", 1, 1},
	I16:     {"I16", 1, 2},
	I32:     {"I32", 1, 4},
	I64:     {"I64", 1, 8},
	F64:     {"F64", 1, 8},
	IQ1_M:   {"IQ1_M", 256, 56},
	BF16:    {"BF16", 1, 2},
	TQ1_0:   {"TQ1_0", 256, 54},
	TQ2_0:   {"TQ2_0", 256, 66},
	MXFP4:   {"MXFP4", 32, 17},
}

// Known reports whether t is a tensor type this package knows the layout of.
func (t TensorType) Known() bool { _, ok := tensorTypes[t]; return ok }

// BlockSize is the number of elements in one block of t (1 for plain
// types such as F32), or 0 for an unknown type.
func (t TensorType) BlockSize() uint64 { return tensorTypes[t].blockSize }

// TypeSize is the number of bytes of one block of t, or 0 for an unknown
// type.
func (t TensorType) TypeSize() uint64 { return tensorTypes[t].typeSize }

func (t TensorType) String() string {
	if tt, ok := tensorTypes[t]; ok {
		return tt.name
	}
	return fmt.Sprintf("TensorType(%d)", uint32(t))
}

// MaxDims is the largest number of dimensions of a tensor (GGML_MAX_DIMS).
const MaxDims = 4

// TensorSize returns the number of elements and the number of data bytes of
// a tensor of type t with the given dimensions (ggml order: dims[0] is the
// contiguous row length). It fails for an unknown type, too many
// dimensions, a row length that is not a whole number of blocks, or a size
// that overflows.
func TensorSize(t TensorType, dims []uint64) (elements, size uint64, err error) {
	tt, ok := tensorTypes[t]
	if !ok {
		return 0, 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	if len(dims) > MaxDims {
		return 0, 0, fmt.Errorf("%d dimensions, at most %d allowed", len(dims), MaxDims)
	}
	elements = 1
	for _, d := range dims {
		hi, lo := bits.Mul64(elements, d)
		if hi != 0 || lo > 1<<62 {
			return 0, 0, fmt.Errorf("tensor dimensions %v overflow", dims)
		}
		elements = lo
	}
	if len(dims) > 0 && dims[0]%tt.blockSize != 0 {
		return 0, 0, fmt.Errorf("row length %d is not a multiple of the %s block size %d", dims[0], tt.name, tt.blockSize)
	}
	hi, size := bits.Mul64(elements/tt.blockSize, tt.typeSize)
	if hi != 0 || size > 1<<62 {
		return 0, 0, fmt.Errorf("tensor dimensions %v overflow", dims)
	}
	return elements, size, nil
}

// FileType is the value of general.file_type: the quantization of the
// model as a whole (llama.h, enum llama_ftype).
type FileType uint32

// The common file types. See [FileType.String] for all known names.
const (
	FileTypeF32    FileType = 0
	FileTypeF16    FileType = 1
	FileTypeQ4_0   FileType = 2
	FileTypeQ4_1   FileType = 3
	FileTypeQ8_0   FileType = 7
	FileTypeQ5_0   FileType = 8
	FileTypeQ5_1   FileType = 9
	FileTypeQ4_K_M FileType = 15
	FileTypeQ6_K   FileType = 18
	FileTypeBF16   FileType = 32
)

var fileTypeNames = map[FileType]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
	37: "TQ2_0", 38: "MXFP4_MOE",
}

// String is the conventional name of the file type ("Q4_0", "Q4_K_M"), or
// "unknown(N)".
func (ft FileType) String() string {
	if s, ok := fileTypeNames[ft]; ok {
		return s
	}
	return fmt.Sprintf("unknown(%d)", uint32(ft))
}

// FileTypeOf is the file type of a model whose large tensors are all of
// tensor type t. ok is false when no file type corresponds to t.
func FileTypeOf(t TensorType) (ft FileType, ok bool) {
	switch t {
	case F32:
		return FileTypeF32, true
	case F16:
		return FileTypeF16, true
	case BF16:
		return FileTypeBF16, true
	case Q4_0:
		return FileTypeQ4_0, true
	case Q4_1:
		return FileTypeQ4_1, true
	case Q5_0:
		return FileTypeQ5_0, true
	case Q5_1:
		return FileTypeQ5_1, true
	case Q8_0:
		return FileTypeQ8_0, true
	case Q2_K:
		return 10, true
	case Q3_K:
		return 12, true // Q3_K_M: mostly Q3_K
	case Q4_K:
		return FileTypeQ4_K_M, true
	case Q5_K:
		return 17, true // Q5_K_M
	case Q6_K:
		return FileTypeQ6_K, true
	case IQ2_XXS:
		return 19, true
	case IQ2_XS:
		return 20, true
	case IQ3_XXS:
		return 23, true
	case IQ1_S:
		return 24, true
	case IQ4_NL:
		return 25, true
	case IQ3_S:
		return 26, true
	case IQ2_S:
		return 28, true
	case IQ4_XS:
		return 30, true
	case IQ1_M:
		return 31, true
	case TQ1_0:
		return 36, true
	case TQ2_0:
		return 37, true
	case MXFP4:
		return 38, true
	}
	return 0, false
}
