// Package gguf reads and writes GGUF model files in pure Go.
//
// GGUF is the container format of llama.cpp: a header ("GGUF", version,
// tensor and key/value counts), typed metadata key/value pairs, tensor
// descriptions (name, dimensions, ggml type, offset) and, after padding to
// the file's alignment, the tensor data. All numbers are little-endian.
//
// The reader ([Open], [Read]) parses everything except the tensor data,
// which it never reads; it only checks that every tensor lies inside the
// file. It is safe on untrusted input: lengths and counts are checked
// against the bytes left in the file before anything is allocated, so a
// corrupt or truncated file yields an error, never a panic or a huge
// allocation. Errors can be told apart with errors.Is:
//
//   - [ErrNotGGUF]: the file does not start with the GGUF magic (a text
//     file, an empty file, an old GGML/GGJT file).
//   - [ErrUnsupportedVersion]: GGUF v1 (no longer supported by llama.cpp)
//     or an unknown version. Versions 2 and 3 are read.
//   - io.ErrUnexpectedEOF: the file ends early (in the header, or before the
//     end of some tensor's data).
//   - [ErrCorrupt]: a structurally invalid file (unknown value or tensor
//     type, bad alignment, duplicate keys or tensor names, ...).
//
// Reading a file does not make it a model llama.cpp can load. [File.Validate]
// checks a model's header against its tensors and against what llama.cpp
// asserts on or sizes allocations from (block_count, head counts, the
// vocabulary arrays, every count bounded); its errors wrap [ErrInvalid]
// and name the key and the bad value. The model store calls it whenever
// a GGUF enters the store or is listed.
//
// Metadata values are kept as plain Go values: uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64, float64 for scalars,
// a typed slice ([]string, []float32, []int32, ...) for an array, and []any
// (holding typed slices) for an array of arrays.
//
// The writer ([Write], [WriteFile]) produces GGUF v3 files with the same
// value mapping. Tensor data is either given as bytes or streamed by a
// callback, so files far larger than memory can be written.
//
// The package has no cgo and no dependency outside the standard library.
package gguf
