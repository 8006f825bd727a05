package gguf

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	kvs := []KV{
		{"general.architecture", "llama"},
		{"general.alignment", uint32(64)},
		{"u8", uint8(200)},
		{"i8", int8(-5)},
		{"u16", uint16(60000)},
		{"i16", int16(-300)},
		{"u32", uint32(4000000000)},
		{"i32", int32(-70000)},
		{"f32", float32(1e-5)},
		{"bool", true},
		{"str", "héllo ▁world"},
		{"empty", ""},
		{"u64", uint64(1 << 60)},
		{"i64", int64(-1 << 60)},
		{"f64", 3.25},
		{"tokens", []string{"<unk>", "<s>", "▁Hello", ""}},
		{"scores", []float32{0, -1.5, 2}},
		{"types", []int32{2, 3, 1}},
		{"bytes", []uint8{1, 2, 3}},
		{"i8s", []int8{-1, 1}},
		{"u16s", []uint16{1, 65535}},
		{"i16s", []int16{-1}},
		{"u32s", []uint32{7}},
		{"bools", []bool{true, false, true}},
		{"u64s", []uint64{1 << 40}},
		{"i64s", []int64{-1 << 40}},
		{"f64s", []float64{0.5}},
		{"noarr", []string{}},
		{"nested", []any{[]int32{1, 2}, []string{"a"}, []any{[]float32{1}}, []any{}}},
		{"llama.context_length", uint32(77)},
	}
	q4 := make([]byte, 18*2)
	for i := range q4 {
		q4[i] = byte(i)
	}
	filled := false
	tensors := []Tensor{
		{Name: "a", Dims: []uint64{3}, Type: F32, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{Name: "b.q4", Dims: []uint64{32, 2}, Type: Q4_0, Data: q4},
		{Name: "c.fill", Dims: []uint64{5, 3, 2}, Type: F16, Fill: func(w io.Writer) error {
			filled = true
			_, err := w.Write(bytes.Repeat([]byte{0xAB}, 60))
			return err
		}},
		{Name: "d", Dims: []uint64{1}, Type: I32, Data: []byte{9, 9, 9, 9}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	if !filled {
		t.Error("Fill not called")
	}
	data := buf.Bytes()
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 64 || f.DataOffset%64 != 0 || len(data)%64 != 0 {
		t.Errorf("version %d, alignment %d, data offset %d, size %d", f.Version, f.Alignment, f.DataOffset, len(data))
	}
	if !reflect.DeepEqual(f.KVs, kvs) {
		for i := range kvs {
			if i >= len(f.KVs) || !reflect.DeepEqual(f.KVs[i], kvs[i]) {
				t.Errorf("KV %d: got %#v, want %#v", i, f.KVs[i], kvs[i])
			}
		}
	}
	if f.ContextLength() != 77 {
		t.Errorf("context length %d", f.ContextLength())
	}
	if len(f.Tensors) != len(tensors) {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	for i, ti := range f.Tensors {
		want := tensors[i]
		if ti.Name != want.Name || ti.Type != want.Type || !reflect.DeepEqual(ti.Dims, want.Dims) || ti.Offset%64 != 0 {
			t.Errorf("tensor %d: %+v", i, ti)
		}
		got := data[f.DataOffset+int64(ti.Offset):][:ti.Size()]
		wantData := want.Data
		if wantData == nil {
			wantData = bytes.Repeat([]byte{0xAB}, 60)
		}
		if !bytes.Equal(got, wantData) {
			t.Errorf("tensor %s data %v, want %v", ti.Name, got, wantData)
		}
		// Padding is zeros.
		end := f.DataOffset + int64(ti.Offset+ti.Size())
		for _, b := range data[end:pad(uint64(end), 64)] {
			if b != 0 {
				t.Errorf("tensor %s: padding not zero", ti.Name)
				break
			}
		}
	}
	if f.ParameterCount() != 3+64+30+1 {
		t.Errorf("parameters %d", f.ParameterCount())
	}
}

// TestRewriteStories writes stories260K again from its parsed header and
// streamed data: the writer lays the file out exactly as the original.
func TestRewriteStories(t *testing.T) {
	data, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var tensors []Tensor
	for _, ti := range f.Tensors {
		src := data[f.DataOffset+int64(ti.Offset):][:ti.Size()]
		tensors = append(tensors, Tensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Fill: func(w io.Writer) error {
			_, err := w.Write(src)
			return err
		}})
	}
	p := filepath.Join(t.TempDir(), "copy.gguf")
	if err := WriteFile(p, f.KVs, tensors); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, data) {
		t.Errorf("rewritten file differs: %d bytes, original %d", len(out), len(data))
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

func TestWriteErrors(t *testing.T) {
	ok := []Tensor{{Name: "t", Dims: []uint64{32}, Type: F32, Data: make([]byte, 128)}}
	for name, c := range map[string]struct {
		kvs     []KV
		tensors []Tensor
		want    string
	}{
		"int value":      {[]KV{{"k", 1}}, ok, "unsupported value type int"},
		"ints":           {[]KV{{"k", []int{1}}}, ok, "unsupported value type []int"},
		"mixed nested":   {[]KV{{"k", []any{[]int32{1}, "x"}}}, ok, "may only hold arrays"},
		"duplicate key":  {[]KV{{"k", true}, {"k", false}}, ok, "duplicate metadata key"},
		"empty key":      {[]KV{{"", true}}, ok, "empty metadata key"},
		"alignment":      {[]KV{{"general.alignment", uint32(24)}}, ok, "power of two"},
		"alignment type": {[]KV{{"general.alignment", uint64(32)}}, ok, "power of two"},
		"dup tensor":     {nil, append(ok, ok...), "duplicate tensor"},
		"no name":        {nil, []Tensor{{Dims: []uint64{1}, Type: F32, Data: make([]byte, 4)}}, "no name"},
		"no dims":        {nil, []Tensor{{Name: "x", Type: F32, Data: make([]byte, 4)}}, "no dimensions"},
		"short data":     {nil, []Tensor{{Name: "x", Dims: []uint64{2}, Type: F32, Data: make([]byte, 4)}}, "needs 8"},
		"no data":        {nil, []Tensor{{Name: "x", Dims: []uint64{2}, Type: F32}}, "neither Data nor Fill"},
		"both": {nil, []Tensor{{Name: "x", Dims: []uint64{1}, Type: F32, Data: make([]byte, 4),
			Fill: func(io.Writer) error { return nil }}}, "both"},
		"partial block": {nil, []Tensor{{Name: "x", Dims: []uint64{16}, Type: Q4_0, Data: make([]byte, 9)}}, "block size"},
		"unknown type":  {nil, []Tensor{{Name: "x", Dims: []uint64{16}, Type: 31, Data: make([]byte, 9)}}, "unknown tensor type"},
		"short fill": {nil, []Tensor{{Name: "x", Dims: []uint64{2}, Type: F32,
			Fill: func(w io.Writer) error { _, err := w.Write(make([]byte, 4)); return err }}}, "wrote 4 bytes, want 8"},
		"long fill": {nil, []Tensor{{Name: "x", Dims: []uint64{2}, Type: F32,
			Fill: func(w io.Writer) error { _, err := w.Write(make([]byte, 12)); return err }}}, "more bytes"},
		"fill error": {nil, []Tensor{{Name: "x", Dims: []uint64{2}, Type: F32,
			Fill: func(w io.Writer) error { return errors.New("boom") }}}, "boom"},
	} {
		err := Write(io.Discard, c.kvs, c.tensors)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// WriteFile leaves nothing behind on error.
	dir := t.TempDir()
	err := WriteFile(filepath.Join(dir, "x.gguf"), []KV{{"k", 1}}, nil)
	if err == nil {
		t.Error("WriteFile with a bad value succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left: %v", ents)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteIOError(t *testing.T) {
	big := make([]byte, 4<<20)
	err := Write(&failWriter{n: 1 << 20}, []KV{{"k", "v"}}, []Tensor{{Name: "x", Dims: []uint64{1 << 20}, Type: F32, Data: big}})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err = %v", err)
	}
}
