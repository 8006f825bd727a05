package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment of a file without
// general.alignment.
const DefaultAlignment = 32

// Sentinel errors, for errors.Is.
var (
	// ErrNotGGUF: the data does not start with the GGUF magic.
	ErrNotGGUF = errors.New("not a GGUF file")
	// ErrUnsupportedVersion: a GGUF version this package (and llama.cpp)
	// does not read. The error is a *VersionError.
	ErrUnsupportedVersion = errors.New("unsupported GGUF version")
	// ErrCorrupt: the file is structurally invalid.
	ErrCorrupt = errors.New("corrupt GGUF file")
)

// VersionError is returned for a GGUF version that is not supported. It
// matches ErrUnsupportedVersion with errors.Is.
type VersionError struct {
	Version uint32
}

func (e *VersionError) Error() string {
	switch {
	case e.Version == 1:
		return "GGUF v1 is no longer supported, convert the model again"
	case e.Version == 0:
		return "GGUF version 0 is not valid"
	case e.Version&0xFFFF == 0 && bits32Swap(e.Version) <= 3:
		return fmt.Sprintf("big-endian GGUF (version %d) is not supported", bits32Swap(e.Version))
	}
	return fmt.Sprintf("GGUF version %d is not supported (2 and 3 are)", e.Version)
}

// Is makes errors.Is(err, ErrUnsupportedVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrUnsupportedVersion }

func bits32Swap(v uint32) uint32 {
	return v>>24 | (v>>8)&0xFF00 | (v<<8)&0xFF0000 | v<<24
}

// File is the parsed header of a GGUF file: everything except tensor data.
type File struct {
	Version uint32
	// KVs are the metadata pairs in file order.
	KVs []KV
	// Tensors are the tensor descriptions in file order.
	Tensors []TensorInfo
	// Alignment is general.alignment, or DefaultAlignment.
	Alignment uint64
	// DataOffset is the file offset of the tensor data section; tensor
	// offsets are relative to it.
	DataOffset int64
	// Size is the size of the file in bytes.
	Size int64

	kvIndex     map[string]int
	tensorIndex map[string]int
}

// TensorInfo describes one tensor.
type TensorInfo struct {
	Name string
	// Dims in ggml order: Dims[0] is the length of a row.
	Dims []uint64
	Type TensorType
	// Offset of the data, relative to File.DataOffset.
	Offset uint64
}

// Elements is the number of elements of the tensor.
func (t TensorInfo) Elements() uint64 {
	n, _, _ := TensorSize(t.Type, t.Dims)
	return n
}

// Size is the number of bytes of the tensor's data.
func (t TensorInfo) Size() uint64 {
	_, s, _ := TensorSize(t.Type, t.Dims)
	return s
}

// Open reads the header of the GGUF file at path.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	gf, err := Read(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gf, nil
}

// Read parses a GGUF file of size bytes from r. It reads the header,
// metadata and tensor infos, never the tensor data.
func Read(r io.ReaderAt, size int64) (*File, error) {
	if size < 0 {
		return nil, errors.New("gguf: negative size")
	}
	d := &decoder{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64<<10), size: size}
	f, err := d.file()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	return f, nil
}

type decoder struct {
	r    *bufio.Reader
	pos  int64
	size int64
	buf  [8]byte
}

func (d *decoder) remaining() int64 { return d.size - d.pos }

func truncated(what string, pos int64) error {
	return fmt.Errorf("file truncated reading %s at offset %d: %w", what, pos, io.ErrUnexpectedEOF)
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// read reads exactly len(p) bytes.
func (d *decoder) read(p []byte, what string) error {
	if int64(len(p)) > d.remaining() {
		return truncated(what, d.pos)
	}
	n, err := io.ReadFull(d.r, p)
	d.pos += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return truncated(what, d.pos)
		}
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.read(d.buf[:4], what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(d.buf[:4]), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.read(d.buf[:8], what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(d.buf[:8]), nil
}

// count reads an element count and checks that count elements of at least
// minSize bytes each fit in the rest of the file.
func (d *decoder) count(what string, minSize int) (uint64, error) {
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if minSize > 0 && n > uint64(d.remaining())/uint64(minSize) {
		return 0, fmt.Errorf("%s %d does not fit in the file: %w", what, n, truncated(what, d.pos))
	}
	return n, nil
}

// bytes reads n bytes, n already checked against the file size. Large
// reads grow the buffer as data arrives rather than trusting n up front.
func (d *decoder) bytes(n uint64, what string) ([]byte, error) {
	if n > uint64(d.remaining()) {
		return nil, truncated(what, d.pos)
	}
	if n <= 1<<20 {
		b := make([]byte, n)
		return b, d.read(b, what)
	}
	var b []byte
	for uint64(len(b)) < n {
		start := len(b)
		chunk := int(min(n-uint64(start), 1<<20))
		b = slices.Grow(b, chunk)[:start+chunk]
		if err := d.read(b[start:], what); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.count(what+" length", 1)
	if err != nil {
		return "", err
	}
	b, err := d.bytes(n, what)
	return string(b), err
}

func (d *decoder) file() (*File, error) {
	var magic [4]byte
	if d.size < 4 {
		return nil, fmt.Errorf("%w (file is %d bytes)", ErrNotGGUF, d.size)
	}
	if err := d.read(magic[:], "magic"); err != nil {
		return nil, err
	}
	if string(magic[:]) != Magic {
		switch string(magic[:]) {
		case "lmgg", "fmgg", "tjgg", "algg": // GGML, GGMF, GGJT, GGLA little-endian
			return nil, fmt.Errorf("%w: legacy GGML/GGJT file, convert the model to GGUF", ErrNotGGUF)
		}
		return nil, fmt.Errorf("%w (magic %q)", ErrNotGGUF, magic[:])
	}
	version, err := d.u32("version")
	if err != nil {
		return nil, err
	}
	if version != 2 && version != 3 {
		return nil, &VersionError{Version: version}
	}
	// A tensor info takes at least 24 bytes, a KV at least 8+4+1.
	nTensors, err := d.count("tensor count", 24)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("metadata count", 13)
	if err != nil {
		return nil, err
	}
	f := &File{
		Version:     version,
		Size:        d.size,
		Alignment:   DefaultAlignment,
		KVs:         make([]KV, 0, nKV),
		Tensors:     make([]TensorInfo, 0, nTensors),
		kvIndex:     make(map[string]int, nKV),
		tensorIndex: make(map[string]int, nTensors),
	}
	for i := uint64(0); i < nKV; i++ {
		key, err := d.str("metadata key")
		if err != nil {
			return nil, err
		}
		t, err := d.u32("metadata type of " + key)
		if err != nil {
			return nil, err
		}
		v, err := d.value(Type(t), key, 0)
		if err != nil {
			return nil, err
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, corrupt("duplicate metadata key %q", key)
		}
		f.kvIndex[key] = len(f.KVs)
		f.KVs = append(f.KVs, KV{Key: key, Value: v})
	}
	if v, ok := f.Get("general.alignment"); ok {
		a, isU32 := v.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			return nil, corrupt("general.alignment %v (%T) is not a power of two uint32", v, v)
		}
		f.Alignment = uint64(a)
	}
	for i := uint64(0); i < nTensors; i++ {
		t, err := d.tensorInfo()
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensorIndex[t.Name]; dup {
			return nil, corrupt("duplicate tensor %q", t.Name)
		}
		if t.Offset%f.Alignment != 0 {
			return nil, corrupt("tensor %q offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		f.tensorIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	f.DataOffset = int64(pad(uint64(d.pos), f.Alignment))
	if len(f.Tensors) > 0 && f.DataOffset > d.size {
		return nil, truncated("tensor data", d.size)
	}
	room := uint64(d.size - min(f.DataOffset, d.size))
	for _, t := range f.Tensors {
		if t.Offset > room || t.Size() > room-t.Offset {
			return nil, fmt.Errorf("data of tensor %q (offset %d, %d bytes) runs past the end of the file: %w",
				t.Name, f.DataOffset+int64(t.Offset), t.Size(), io.ErrUnexpectedEOF)
		}
	}
	return f, nil
}

func pad(n, align uint64) uint64 {
	if r := n % align; r != 0 {
		return n + align - r
	}
	return n
}

func (d *decoder) tensorInfo() (TensorInfo, error) {
	var t TensorInfo
	name, err := d.str("tensor name")
	if err != nil {
		return t, err
	}
	t.Name = name
	nd, err := d.u32("dimension count of " + name)
	if err != nil {
		return t, err
	}
	if nd > MaxDims {
		return t, corrupt("tensor %q has %d dimensions, at most %d allowed", name, nd, MaxDims)
	}
	t.Dims = make([]uint64, nd)
	for i := range t.Dims {
		if t.Dims[i], err = d.u64("dimensions of " + name); err != nil {
			return t, err
		}
	}
	typ, err := d.u32("type of " + name)
	if err != nil {
		return t, err
	}
	t.Type = TensorType(typ)
	if t.Offset, err = d.u64("offset of " + name); err != nil {
		return t, err
	}
	if _, _, err := TensorSize(t.Type, t.Dims); err != nil {
		return t, corrupt("tensor %q: %v", name, err)
	}
	return t, nil
}

// maxDepth bounds nested arrays.
const maxDepth = 8

func (d *decoder) value(t Type, key string, depth int) (any, error) {
	switch t {
	case TypeString:
		return d.str("value of " + key)
	case TypeArray:
		if depth >= maxDepth {
			return nil, corrupt("%s: arrays nested more than %d deep", key, maxDepth)
		}
		et, err := d.u32("array type of " + key)
		if err != nil {
			return nil, err
		}
		return d.array(Type(et), key, depth+1)
	}
	size := t.fixedSize()
	if size == 0 {
		return nil, corrupt("%s: unknown value type %d", key, uint32(t))
	}
	b := d.buf[:size]
	if err := d.read(b, "value of "+key); err != nil {
		return nil, err
	}
	return scalar(t, b), nil
}

func scalar(t Type, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0]
	case TypeInt8:
		return int8(b[0])
	case TypeUint16:
		return le.Uint16(b)
	case TypeInt16:
		return int16(le.Uint16(b))
	case TypeUint32:
		return le.Uint32(b)
	case TypeInt32:
		return int32(le.Uint32(b))
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b))
	case TypeBool:
		return b[0] != 0
	case TypeUint64:
		return le.Uint64(b)
	case TypeInt64:
		return int64(le.Uint64(b))
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b))
	}
	panic("gguf: not a scalar type")
}

func (d *decoder) array(et Type, key string, depth int) (any, error) {
	if !et.Valid() {
		return nil, corrupt("%s: unknown array element type %d", key, uint32(et))
	}
	n, err := d.count("array length of "+key, et.minSize())
	if err != nil {
		return nil, err
	}
	what := "array " + key
	switch et {
	case TypeString:
		out := make([]string, 0, min(n, 1<<16))
		for range n {
			s, err := d.str(what)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case TypeArray:
		out := make([]any, 0, min(n, 1<<12))
		for range n {
			v, err := d.value(TypeArray, key, depth)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	size := uint64(et.fixedSize())
	raw, err := d.bytes(n*size, what) // n*size <= remaining, checked by count
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch et {
	case TypeUint8:
		return raw, nil
	case TypeInt8:
		return convert(raw, 1, func(b []byte) int8 { return int8(b[0]) }), nil
	case TypeUint16:
		return convert(raw, 2, le.Uint16), nil
	case TypeInt16:
		return convert(raw, 2, func(b []byte) int16 { return int16(le.Uint16(b)) }), nil
	case TypeUint32:
		return convert(raw, 4, le.Uint32), nil
	case TypeInt32:
		return convert(raw, 4, func(b []byte) int32 { return int32(le.Uint32(b)) }), nil
	case TypeFloat32:
		return convert(raw, 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) }), nil
	case TypeBool:
		return convert(raw, 1, func(b []byte) bool { return b[0] != 0 }), nil
	case TypeUint64:
		return convert(raw, 8, le.Uint64), nil
	case TypeInt64:
		return convert(raw, 8, func(b []byte) int64 { return int64(le.Uint64(b)) }), nil
	case TypeFloat64:
		return convert(raw, 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }), nil
	}
	panic("gguf: unreachable")
}

func convert[T any](raw []byte, size int, f func([]byte) T) []T {
	out := make([]T, len(raw)/size)
	for i := range out {
		out[i] = f(raw[i*size : (i+1)*size])
	}
	return out
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (any, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return nil, false
	}
	return f.KVs[i].Value, true
}

// String returns a string value.
func (f *File) String(key string) (string, bool) {
	v, _ := f.Get(key)
	s, ok := v.(string)
	return s, ok
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) {
	v, _ := f.Get(key)
	b, ok := v.(bool)
	return b, ok
}

// Uint returns an integer value of any integer type as a uint64. ok is
// false when the key is missing, not an integer, or negative.
func (f *File) Uint(key string) (uint64, bool) {
	v, _ := f.Get(key)
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	}
	if i, ok := f.Int(key); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

// Int returns an integer value of any integer type as an int64. ok is false
// when the key is missing, not an integer, or does not fit.
func (f *File) Int(key string) (int64, bool) {
	v, _ := f.Get(key)
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

// Float returns a float or integer value as a float64.
func (f *File) Float(key string) (float64, bool) {
	v, _ := f.Get(key)
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := f.Int(key); ok {
		return float64(i), true
	}
	if u, ok := f.Uint(key); ok {
		return float64(u), true
	}
	return 0, false
}

// Strings returns an array of strings (tokenizer.ggml.tokens, ...).
func (f *File) Strings(key string) ([]string, bool) {
	v, _ := f.Get(key)
	s, ok := v.([]string)
	return s, ok
}

// Architecture is general.architecture ("llama"), or "".
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// Name is general.name, or "".
func (f *File) Name() string {
	s, _ := f.String("general.name")
	return s
}

// ArchUint returns the integer "<architecture>.<suffix>", for example
// ArchUint("block_count").
func (f *File) ArchUint(suffix string) (uint64, bool) {
	return f.Uint(f.Architecture() + "." + suffix)
}

// ContextLength is <architecture>.context_length, the context the model
// was trained with, or 0.
func (f *File) ContextLength() uint64 {
	n, _ := f.ArchUint("context_length")
	return n
}

// ParameterCount is the number of elements of all tensors.
func (f *File) ParameterCount() uint64 {
	var n uint64
	for _, t := range f.Tensors {
		n += t.Elements()
	}
	return n
}

// FileType is general.file_type. Without that key it is guessed from the
// most common type (by elements) of the tensors with two or more
// dimensions; ok is false when neither gives an answer.
func (f *File) FileType() (ft FileType, ok bool) {
	if n, ok := f.Uint("general.file_type"); ok && n <= math.MaxUint32 {
		return FileType(n), true
	}
	byType := map[TensorType]uint64{}
	for _, t := range f.Tensors {
		if len(t.Dims) >= 2 {
			byType[t.Type] += t.Elements()
		}
	}
	var best TensorType
	var bestN uint64
	for t, n := range byType {
		if n > bestN || (n == bestN && t < best) {
			best, bestN = t, n
		}
	}
	if bestN == 0 {
		return 0, false
	}
	return FileTypeOf(best)
}

// Tensor returns the description of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}
