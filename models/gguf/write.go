package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Version is the GGUF version the writer produces.
const Version = 3

// Tensor is a tensor to write. Its data comes from exactly one of Data and
// Fill.
type Tensor struct {
	Name string
	// Dims in ggml order: Dims[0] is the length of a row (a multiple of
	// Type.BlockSize()).
	Dims []uint64
	Type TensorType
	// Data is the encoded tensor data, exactly Size() bytes.
	Data []byte
	// Fill, when Data is nil, streams the data: it must write exactly
	// Size() bytes to w. It is called once, in tensor order, while the
	// file is written, so tensors need not be held in memory.
	Fill func(w io.Writer) error
}

// Size is the number of data bytes of the tensor.
func (t Tensor) Size() (uint64, error) {
	_, s, err := TensorSize(t.Type, t.Dims)
	return s, err
}

// Write writes a GGUF v3 file with the given metadata and tensors to w.
//
// Metadata values must have one of the Go types listed in the package
// documentation (int and uint are refused: their size is ambiguous). The
// data alignment is general.alignment when kvs has it (a uint32 power of
// two), else DefaultAlignment; each tensor's data is followed by zero
// padding up to the alignment. Everything is validated before the first
// byte is written, except what Fill callbacks do.
func Write(w io.Writer, kvs []KV, tensors []Tensor) error {
	align := uint64(DefaultAlignment)
	seen := make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		if kv.Key == "" {
			return errors.New("gguf: empty metadata key")
		}
		if seen[kv.Key] {
			return fmt.Errorf("gguf: duplicate metadata key %q", kv.Key)
		}
		seen[kv.Key] = true
		if _, err := valueType(kv.Value); err != nil {
			return fmt.Errorf("gguf: metadata %q: %w", kv.Key, err)
		}
		if kv.Key == "general.alignment" {
			a, ok := kv.Value.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return fmt.Errorf("gguf: general.alignment must be a uint32 power of two, not %v (%T)", kv.Value, kv.Value)
			}
			align = uint64(a)
		}
	}
	offsets := make([]uint64, len(tensors))
	sizes := make([]uint64, len(tensors))
	names := make(map[string]bool, len(tensors))
	var off uint64
	for i, t := range tensors {
		if t.Name == "" {
			return fmt.Errorf("gguf: tensor %d has no name", i)
		}
		if names[t.Name] {
			return fmt.Errorf("gguf: duplicate tensor %q", t.Name)
		}
		names[t.Name] = true
		if len(t.Dims) == 0 {
			return fmt.Errorf("gguf: tensor %q has no dimensions", t.Name)
		}
		size, err := t.Size()
		if err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		switch {
		case t.Data != nil && t.Fill != nil:
			return fmt.Errorf("gguf: tensor %q has both Data and Fill", t.Name)
		case t.Data == nil && t.Fill == nil && size > 0:
			return fmt.Errorf("gguf: tensor %q has neither Data nor Fill", t.Name)
		case t.Data != nil && uint64(len(t.Data)) != size:
			return fmt.Errorf("gguf: tensor %q: %d bytes of data, %s %v needs %d", t.Name, len(t.Data), t.Type, t.Dims, size)
		}
		offsets[i], sizes[i] = off, size
		off = pad(off+size, align)
	}

	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<20)
	e := &encoder{w: bw}
	e.raw([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		t, _ := valueType(kv.Value)
		e.u32(uint32(t))
		e.value(kv.Value)
	}
	for i, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(offsets[i])
	}
	if e.err != nil {
		return fmt.Errorf("gguf: %w", e.err)
	}
	header := uint64(bw.Buffered()) + cw.n
	e.raw(make([]byte, pad(header, align)-header))

	var zeros [256]byte
	for i, t := range tensors {
		if t.Data != nil {
			e.raw(t.Data)
		} else if t.Fill != nil && e.err == nil {
			lw := &limitWriter{w: bw, left: sizes[i]}
			if err := t.Fill(lw); err != nil {
				return fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
			}
			if lw.left != 0 {
				return fmt.Errorf("gguf: tensor %q: Fill wrote %d bytes, want %d", t.Name, sizes[i]-lw.left, sizes[i])
			}
		}
		for p := pad(sizes[i], align) - sizes[i]; p > 0; {
			n := min(p, uint64(len(zeros)))
			e.raw(zeros[:n])
			p -= n
		}
		if e.err != nil {
			return fmt.Errorf("gguf: %w", e.err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

// WriteFile writes a GGUF file (see [Write]) to path. It writes a
// temporary file in the same directory and renames it, so path never holds
// a partial file.
func WriteFile(path string, kvs []KV, tensors []Tensor) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = Write(tmp, kvs, tensors); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

type countWriter struct {
	w io.Writer
	n uint64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}

// limitWriter refuses to write more than left bytes.
type limitWriter struct {
	w    io.Writer
	left uint64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if uint64(len(p)) > l.left {
		return 0, errors.New("gguf: Fill wrote more bytes than the tensor's size")
	}
	n, err := l.w.Write(p)
	l.left -= uint64(n)
	return n, err
}

// valueType is the GGUF type of a Go metadata value.
func valueType(v any) (Type, error) {
	switch x := v.(type) {
	case uint8:
		return TypeUint8, nil
	case int8:
		return TypeInt8, nil
	case uint16:
		return TypeUint16, nil
	case int16:
		return TypeInt16, nil
	case uint32:
		return TypeUint32, nil
	case int32:
		return TypeInt32, nil
	case float32:
		return TypeFloat32, nil
	case bool:
		return TypeBool, nil
	case string:
		return TypeString, nil
	case uint64:
		return TypeUint64, nil
	case int64:
		return TypeInt64, nil
	case float64:
		return TypeFloat64, nil
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32, []bool,
		[]string, []uint64, []int64, []float64:
		return TypeArray, nil
	case []any:
		if _, err := arrayElemType(x); err != nil {
			return 0, err
		}
		return TypeArray, nil
	}
	return 0, fmt.Errorf("unsupported value type %T", v)
}

// arrayElemType is the element type of an array value.
func arrayElemType(v any) (Type, error) {
	switch x := v.(type) {
	case []uint8:
		return TypeUint8, nil
	case []int8:
		return TypeInt8, nil
	case []uint16:
		return TypeUint16, nil
	case []int16:
		return TypeInt16, nil
	case []uint32:
		return TypeUint32, nil
	case []int32:
		return TypeInt32, nil
	case []float32:
		return TypeFloat32, nil
	case []bool:
		return TypeBool, nil
	case []string:
		return TypeString, nil
	case []uint64:
		return TypeUint64, nil
	case []int64:
		return TypeInt64, nil
	case []float64:
		return TypeFloat64, nil
	case []any:
		// An array of arrays: every element must itself be an array.
		for i, e := range x {
			t, err := valueType(e)
			if err != nil {
				return 0, fmt.Errorf("element %d: %w", i, err)
			}
			if t != TypeArray {
				return 0, fmt.Errorf("element %d: []any may only hold arrays, not %T", i, e)
			}
		}
		return TypeArray, nil
	}
	return 0, fmt.Errorf("unsupported array type %T", v)
}

type encoder struct {
	w   io.Writer
	err error
	buf [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err == nil && len(p) > 0 {
		_, e.err = e.w.Write(p)
	}
}

func (e *encoder) u8(v uint8) { e.buf[0] = v; e.raw(e.buf[:1]) }

func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.buf[:], v)
	e.raw(e.buf[:2])
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], v)
	e.raw(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	e.raw(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil && len(s) > 0 {
		_, e.err = io.WriteString(e.w, s)
	}
}

func (e *encoder) bool(b bool) {
	if b {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// value writes a value (without its type); v was checked by valueType.
func (e *encoder) value(v any) {
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		e.bool(x)
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	default:
		et, _ := arrayElemType(v)
		e.u32(uint32(et))
		e.array(v)
	}
}

func (e *encoder) array(v any) {
	switch x := v.(type) {
	case []uint8:
		e.u64(uint64(len(x)))
		e.raw(x)
	case []int8:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.u8(uint8(y))
		}
	case []uint16:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.u16(y)
		}
	case []int16:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.u16(uint16(y))
		}
	case []uint32:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.u32(y)
		}
	case []int32:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.u32(uint32(y))
		}
	case []float32:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.u32(math.Float32bits(y))
		}
	case []bool:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.bool(y)
		}
	case []string:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.str(y)
		}
	case []uint64:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.u64(y)
		}
	case []int64:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.u64(uint64(y))
		}
	case []float64:
		e.u64(uint64(len(x)))
		for _, y := range x {
			e.u64(math.Float64bits(y))
		}
	case []any:
		e.u64(uint64(len(x)))
		for _, y := range x {
			et, _ := arrayElemType(y)
			e.u32(uint32(et))
			e.array(y)
		}
	}
}
