package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	stories    = "../testdata/stories260K.gguf"
	stories128 = "../testdata/stories260Ktok512.gguf"
	storiesV1  = "../testdata/unsupported/tinyllamas-stories-260k-f32.gguf"
)

func TestReadStories(t *testing.T) {
	f, err := Open(stories)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 {
		t.Errorf("version %d, want 3", f.Version)
	}
	if got := f.Architecture(); got != "llama" {
		t.Errorf("architecture %q", got)
	}
	if got := f.Name(); got != "llama" {
		t.Errorf("name %q", got)
	}
	if got := f.ContextLength(); got != 2048 {
		t.Errorf("context length %d, want 2048", got)
	}
	if len(f.KVs) != 19 || len(f.Tensors) != 48 {
		t.Errorf("%d KVs, %d tensors; want 19, 48", len(f.KVs), len(f.Tensors))
	}
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(toks) != 512 {
		t.Fatalf("tokens: %d, %v", len(toks), ok)
	}
	if toks[0] != "<unk>" || toks[1] != "<s>" || toks[2] != "</s>" || toks[3+'\n'] != "<0x0A>" {
		t.Errorf("tokens start %q", toks[:4])
	}
	if scores, ok := f.Get("tokenizer.ggml.scores"); !ok || len(scores.([]float32)) != 512 {
		t.Errorf("scores: %T", scores)
	}
	if types, ok := f.Get("tokenizer.ggml.token_type"); !ok || types.([]int32)[1] != 3 {
		t.Errorf("token types: %T", types)
	}
	if model, _ := f.String("tokenizer.ggml.model"); model != "llama" {
		t.Errorf("tokenizer model %q", model)
	}
	if bos, ok := f.Uint("tokenizer.ggml.bos_token_id"); !ok || bos != 1 {
		t.Errorf("bos %d %v", bos, ok)
	}
	if n, ok := f.ArchUint("block_count"); !ok || n != 5 {
		t.Errorf("block count %d %v", n, ok)
	}
	if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || eps < 0.99e-5 || eps > 1.01e-5 {
		t.Errorf("eps %g %v", eps, ok)
	}
	if _, ok := f.String("llama.context_length"); ok {
		t.Error("String of a uint32 should fail")
	}
	if _, ok := f.Uint("no.such.key"); ok {
		t.Error("Uint of a missing key should fail")
	}
	if got := f.ParameterCount(); got != 292800 {
		t.Errorf("parameters %d, want 292800", got)
	}
	// No general.file_type: guessed from the tensors.
	if ft, ok := f.FileType(); !ok || ft != FileTypeF32 || ft.String() != "F32" {
		t.Errorf("file type %v %v", ft, ok)
	}
	te, ok := f.Tensor("token_embd.weight")
	if !ok || !reflect.DeepEqual(te.Dims, []uint64{64, 512}) || te.Type != F32 || te.Offset != 0 || te.Size() != 64*512*4 {
		t.Errorf("token_embd %+v", te)
	}
	if f.Alignment != 32 || f.DataOffset%32 != 0 {
		t.Errorf("alignment %d, data offset %d", f.Alignment, f.DataOffset)
	}
	last := f.Tensors[len(f.Tensors)-1]
	if end := f.DataOffset + int64(last.Offset+last.Size()); end > f.Size || f.Size-end >= 32 {
		t.Errorf("last tensor ends at %d, file is %d bytes", end, f.Size)
	}
}

func TestReadStories128(t *testing.T) {
	f, err := Open(stories128)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.ContextLength(); got != 128 {
		t.Errorf("context length %d, want 128", got)
	}
	if len(f.Tensors) != 48 {
		t.Errorf("%d tensors", len(f.Tensors))
	}
}

// llama-2-tiny-random: a real F16 file with a 32,000-token vocabulary.
func TestReadTinyRandom(t *testing.T) {
	f, err := Open("../testdata/llama-2-tiny-random.gguf")
	if err != nil {
		t.Fatal(err)
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	ft, _ := f.FileType()
	if len(toks) != 32000 || ft != FileTypeF16 || len(f.Tensors) != 12 || f.ContextLength() != 4096 {
		t.Errorf("%d tokens, file type %v, %d tensors, context %d", len(toks), ft, len(f.Tensors), f.ContextLength())
	}
	if te, _ := f.Tensor("token_embd.weight"); te.Type != F16 {
		t.Errorf("token_embd type %v", te.Type)
	}
}

func TestUnsupportedVersion(t *testing.T) {
	_, err := Open(storiesV1)
	if !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("err = %v, want ErrUnsupportedVersion", err)
	}
	if errors.Is(err, ErrNotGGUF) || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err %v matches other sentinels", err)
	}
	if !strings.Contains(err.Error(), "v1 is no longer supported") {
		t.Errorf("message %q", err)
	}
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != 1 {
		t.Errorf("VersionError %+v", ve)
	}
	for _, v := range []uint32{0, 4, 0x03000000} {
		b := append([]byte("GGUF"), make([]byte, 20)...)
		binary.LittleEndian.PutUint32(b[4:], v)
		if _, err := Read(bytes.NewReader(b), int64(len(b))); !errors.Is(err, ErrUnsupportedVersion) {
			t.Errorf("version %#x: %v", v, err)
		} else {
			t.Logf("version %#x: %v", v, err)
		}
	}
}

func TestNotGGUF(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"text":  "Once upon a time there was a model file that was not a model.\n",
		"empty": "",
		"short": "GG",
		"ggjt":  "tjgg\x03\x00\x00\x00",
		"json":  `{"model":"llama"}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(p)
		if !errors.Is(err, ErrNotGGUF) || errors.Is(err, ErrUnsupportedVersion) {
			t.Errorf("%s: err = %v, want ErrNotGGUF", name, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Open(dir); err == nil {
		t.Error("directory opened")
	}
}

func TestTruncated(t *testing.T) {
	data, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var cuts []int
	for n := 0; n < int(f.DataOffset)+64; n += 5 {
		cuts = append(cuts, n)
	}
	cuts = append(cuts, int(f.DataOffset), len(data)/2, len(data)-40, len(data)-33)
	for _, n := range cuts {
		_, err := Read(bytes.NewReader(data[:n]), int64(n))
		switch {
		case n < 4:
			if !errors.Is(err, ErrNotGGUF) {
				t.Errorf("cut at %d: %v, want ErrNotGGUF", n, err)
			}
		case !errors.Is(err, io.ErrUnexpectedEOF):
			t.Errorf("cut at %d: %v, want io.ErrUnexpectedEOF", n, err)
		}
	}
	// The last tensor's padding is not needed.
	last := f.Tensors[len(f.Tensors)-1]
	end := f.DataOffset + int64(last.Offset+last.Size())
	if _, err := Read(bytes.NewReader(data[:end]), end); err != nil {
		t.Errorf("file without final padding: %v", err)
	}
	// A file on disk, cut in the tensor data.
	p := filepath.Join(t.TempDir(), "cut.gguf")
	if err := os.WriteFile(p, data[:len(data)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Open of a cut file: %v", err)
	} else {
		t.Log(err)
	}
}

// header builds a GGUF v3 header by hand.
type header struct{ bytes.Buffer }

func (h *header) u32(v uint32) *header {
	binary.Write(&h.Buffer, binary.LittleEndian, v)
	return h
}

func (h *header) u64(v uint64) *header {
	binary.Write(&h.Buffer, binary.LittleEndian, v)
	return h
}

func (h *header) u8(v uint8) *header { h.WriteByte(v); return h }

func (h *header) str(s string) *header { h.u64(uint64(len(s))); h.WriteString(s); return h }

func newHeader(tensors, kvs uint64) *header {
	h := &header{}
	h.WriteString("GGUF")
	return h.u32(3).u64(tensors).u64(kvs)
}

func TestGarbageLengths(t *testing.T) {
	cases := map[string]*header{
		"huge tensor count":  newHeader(1<<62, 0),
		"huge kv count":      newHeader(0, 1<<60),
		"huge key length":    newHeader(0, 1).u64(1 << 62),
		"huge string value":  newHeader(0, 1).str("k").u32(uint32(TypeString)).u64(1<<63 + 5),
		"huge array":         newHeader(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeFloat32)).u64(1 << 61),
		"huge string array":  newHeader(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(1 << 40),
		"huge nested array":  newHeader(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeArray)).u64(1 << 40),
		"huge tensor":        newHeader(1, 0).str("t").u32(2).u64(1 << 40).u64(1 << 20).u32(uint32(F32)).u64(0),
		"tensor past end":    newHeader(1, 0).str("t").u32(1).u64(1024).u32(uint32(F32)).u64(0),
		"huge tensor offset": newHeader(1, 0).str("t").u32(1).u64(32).u32(uint32(F32)).u64(1<<64 - 32),
	}
	for name, h := range cases {
		b := h.Bytes()
		_, err := Read(bytes.NewReader(b), int64(len(b)))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: %v, want io.ErrUnexpectedEOF", name, err)
		}
	}
	corrupt := map[string]*header{
		"bad value type":   newHeader(0, 1).str("k").u32(99).u64(0),
		"bad array type":   newHeader(0, 1).str("k").u32(uint32(TypeArray)).u32(77).u64(0),
		"too many dims":    newHeader(1, 0).str("t").u32(5).u64(1).u64(1).u64(1).u64(1).u64(1).u32(0).u64(0),
		"bad tensor type":  newHeader(1, 0).str("t").u32(1).u64(32).u32(4).u64(0),
		"partial block":    newHeader(1, 0).str("t").u32(1).u64(31).u32(uint32(Q4_0)).u64(0),
		"unaligned offset": newHeader(1, 0).str("t").u32(1).u64(8).u32(uint32(F32)).u64(4),
		"duplicate key":    newHeader(0, 2).str("k").u32(uint32(TypeUint8)).u8(1).str("k").u32(uint32(TypeUint8)).u8(1),
		"bad alignment":    newHeader(0, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(48),
		"deep arrays": func() *header {
			h := newHeader(0, 1).str("k").u32(uint32(TypeArray))
			for range 20 {
				h.u32(uint32(TypeArray)).u64(1)
			}
			return h.u32(uint32(TypeUint8)).u64(0)
		}(),
	}
	for name, h := range corrupt {
		b := append(h.Bytes(), make([]byte, 256)...)
		_, err := Read(bytes.NewReader(b), int64(len(b)))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// TestRandomCorruption flips bytes in the header of a real file: the reader
// must return (an error or a file), never panic.
func TestRandomCorruption(t *testing.T) {
	data, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, len(data))
	iters := 2000
	if testing.Short() {
		iters = 200
	}
	for range iters {
		copy(buf, data)
		for range 1 + r.IntN(4) {
			i := r.IntN(int(f.DataOffset))
			buf[i] = byte(r.Uint32())
		}
		n := len(buf)
		if r.IntN(4) == 0 {
			n = r.IntN(n)
		}
		Read(bytes.NewReader(buf[:n]), int64(n))
	}
}

func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	err := Write(&b, []KV{{"a", "x"}, {"b", []any{[]int32{1}}}, {"c", []string{"p", "q"}}},
		[]Tensor{{Name: "t", Dims: []uint64{4}, Type: F32, Data: make([]byte, 16)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte("GGUF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if gf, err := Read(bytes.NewReader(data), int64(len(data))); err == nil {
			gf.Validate() // must not panic either
		}
	})
}

func TestTensorSize(t *testing.T) {
	for _, c := range []struct {
		typ        TensorType
		dims       []uint64
		elems, sum uint64
		ok         bool
	}{
		{F32, []uint64{64, 512}, 32768, 131072, true},
		{F16, []uint64{8, 32000}, 256000, 512000, true},
		{Q4_0, []uint64{64, 2}, 128, 72, true},
		{Q8_0, []uint64{32, 3}, 96, 102, true},
		{Q4_K, []uint64{256, 2}, 512, 288, true},
		{Q4_0, []uint64{48}, 0, 0, false},
		{TensorType(4), []uint64{32}, 0, 0, false},
		{F32, []uint64{1, 1, 1, 1, 1}, 0, 0, false},
		{F32, []uint64{1 << 32, 1 << 32}, 0, 0, false},
		{F32, []uint64{}, 1, 4, true},
	} {
		e, s, err := TensorSize(c.typ, c.dims)
		if (err == nil) != c.ok || (c.ok && (e != c.elems || s != c.sum)) {
			t.Errorf("TensorSize(%v, %v) = %d, %d, %v", c.typ, c.dims, e, s, err)
		}
	}
	if Q4_0.BlockSize() != 32 || Q4_0.TypeSize() != 18 || Q4_0.String() != "Q4_0" || !Q8_0.Known() || TensorType(5).Known() {
		t.Error("Q4_0 traits")
	}
	if FileType(15).String() != "Q4_K_M" || FileType(1000).String() != "unknown(1000)" {
		t.Error("file type names")
	}
}
