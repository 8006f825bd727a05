package engine

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// tokenEmbeddings reads the model file's token_embd.weight (F32) rows:
// what llama.cpp's get_rows gives the first layer for each token id.
func tokenEmbeddings(t testing.TB, path string) (rows [][]float32) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok || ti.Type != gguf.F32 || len(ti.Dims) != 2 {
		t.Fatalf("token_embd.weight: %+v, want a 2-D F32 tensor", ti)
	}
	width, n := int(ti.Dims[0]), int(ti.Dims[1])
	buf := make([]byte, 4*width*n)
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.ReadAt(buf, f.DataOffset+int64(ti.Offset)); err != nil {
		t.Fatal(err)
	}
	rows = make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, width)
		for j := range rows[i] {
			rows[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*(i*width+j):]))
		}
	}
	return rows
}

// TestDecodeEmbdMatchesTokens: a prompt's tokens fed as their rows of the
// embedding matrix give the logits of the tokens themselves, and greedy
// decoding goes on to the same continuation.
func TestDecodeEmbdMatchesTokens(t *testing.T) {
	m := loadStories(t)
	rows := tokenEmbeddings(t, testmodels.Testdata("stories260K.gguf"))
	if m.EmbdSize() != len(rows[0]) || len(rows) != m.VocabSize() {
		t.Fatalf("EmbdSize %d, vocabulary %d; the file has %d rows of %d", m.EmbdSize(), m.VocabSize(), len(rows), len(rows[0]))
	}
	prompt, err := m.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 256, NumBatch: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	tb, err := NewBatch(64)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	eb, err := m.NewEmbdBatch(64)
	if err != nil {
		t.Fatal(err)
	}
	defer eb.Close()
	if eb.Width() != m.EmbdSize() || eb.Cap() != 64 {
		t.Fatalf("batch width %d cap %d", eb.Width(), eb.Cap())
	}

	for i, tok := range prompt {
		tb.Add(tok, i, 0, i == len(prompt)-1)
	}
	if err := ctx.Decode(tb); err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), ctx.Logits(tb.Len()-1)...)

	// Every split: tokens [0,k), embeddings [k,n).
	for k := 0; k < len(prompt); k++ {
		ctx.ClearMemory()
		tb.Clear()
		for i := 0; i < k; i++ {
			tb.Add(prompt[i], i, 0, false)
		}
		if err := ctx.Decode(tb); err != nil {
			t.Fatal(err)
		}
		eb.Clear()
		var last int
		for i := k; i < len(prompt); i++ {
			if last, err = eb.Add(rows[prompt[i]], i, 0, i == len(prompt)-1); err != nil {
				t.Fatal(err)
			}
		}
		if err := ctx.DecodeEmbd(eb); err != nil {
			t.Fatal(err)
		}
		got := ctx.Logits(last)
		var worst float64
		for i := range want {
			worst = max(worst, math.Abs(float64(got[i]-want[i])))
		}
		// The split decodes in batches of other shapes, whose matrix
		// kernels round differently: within 1e-4 with AVX-512, 1.7e-3 on
		// AVX2-only CPUs (repacked kernels quantize activations per
		// batch shape). Both must pick the same token.
		if worst > 1e-2 || argmax(got) != argmax(want) {
			t.Fatalf("split at %d: logits differ by %g (argmax %d, want %d)", k, worst, argmax(got), argmax(want))
		}
	}

	// Greedy continuation after the embeddings (the last split: the whole
	// prompt but BOS as embeddings).
	s, err := m.NewSampler(SamplerParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	idx := eb.Len() - 1
	var text strings.Builder
	for n := 0; n < 12; n++ {
		tok, err := s.Sample(ctx, idx)
		if err != nil {
			t.Fatal(err)
		}
		text.Write(m.TokenPiece(tok, false))
		tb.Clear()
		idx = tb.Add(tok, len(prompt)+n, 0, true)
		if err := ctx.Decode(tb); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(storiesContinuation, text.String()) || text.Len() < 20 {
		t.Fatalf("continuation %q, want a prefix of %q", text.String(), storiesContinuation)
	}
}

// TestEmbdBatchLimits: every value llama.cpp would assert on or misread
// is refused with an error, and the context still decodes afterwards.
func TestEmbdBatchLimits(t *testing.T) {
	m := loadStories(t)
	w := m.EmbdSize()
	row := make([]float32, w)
	ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 256, NumBatch: 64, NumUBatch: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	for _, c := range []int{0, -1, MaxContext + 1, MaxEmbdFloats/w + 1} {
		if _, err := m.NewEmbdBatch(c); err == nil {
			t.Errorf("NewEmbdBatch(%d) succeeded", c)
		}
	}
	b, err := m.NewEmbdBatch(100)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	nan := append([]float32(nil), row...)
	nan[3] = float32(math.NaN())
	inf := append([]float32(nil), row...)
	inf[0] = float32(math.Inf(-1))
	for name, add := range map[string]func() error{
		"short row": func() error { _, err := b.Add(row[1:], 0, 0, false); return err },
		"long row":  func() error { _, err := b.Add(append(row, 0), 0, 0, false); return err },
		"NaN":       func() error { _, err := b.Add(nan, 0, 0, false); return err },
		"-Inf":      func() error { _, err := b.Add(inf, 0, 0, false); return err },
		"negative position": func() error {
			_, err := b.Add(row, -1, 0, false)
			return err
		},
		"position 2^31": func() error { _, err := b.Add(row, math.MaxInt32, 0, false); return err },
		"sequence -1":   func() error { _, err := b.Add(row, 0, -1, false); return err },
		"sequence 256":  func() error { _, err := b.Add(row, 0, MaxSeq, false); return err },
	} {
		if err := add(); err == nil {
			t.Errorf("%s: Add succeeded", name)
		}
	}
	if b.Len() != 0 {
		t.Fatalf("refused rows were added: %d", b.Len())
	}
	if _, err := b.Add(nan, 0, 0, false); !errors.Is(err, ErrNotFinite) {
		t.Errorf("NaN: %v, want ErrNotFinite", err)
	}

	// A sequence the context does not have.
	b.Add(row, 0, 1, true)
	if err := ctx.DecodeEmbd(b); err == nil || !strings.Contains(err.Error(), "sequence 1") {
		t.Errorf("sequence 1 of 1: %v", err)
	}
	// More rows than n_batch.
	b.Clear()
	for i := 0; i < 65; i++ {
		b.Add(row, i, 0, false)
	}
	if err := ctx.DecodeEmbd(b); err == nil {
		t.Error("65 rows with n_batch 64 decoded")
	}
	// Without causal attention: at most n_ubatch, tokens too.
	b.Clear()
	for i := 0; i < 17; i++ {
		b.Add(row, i, 0, i == 16)
	}
	if err := ctx.SetCausal(false); err != nil {
		t.Fatal(err)
	}
	if err := ctx.DecodeEmbd(b); err == nil {
		t.Error("17 rows without causal attention and n_ubatch 16 decoded")
	}
	tb, _ := NewBatch(64)
	defer tb.Close()
	for i := 0; i < 17; i++ {
		tb.Add(1, i, 0, i == 16)
	}
	if err := ctx.Decode(tb); err == nil {
		t.Error("17 tokens without causal attention and n_ubatch 16 decoded")
	}
	b.Clear()
	for i := 0; i < 16; i++ {
		b.Add(row, i, 0, i == 15)
	}
	if err := ctx.DecodeEmbd(b); err != nil {
		t.Fatalf("16 rows without causal attention: %v", err)
	}
	if err := ctx.SetCausal(true); err != nil {
		t.Fatal(err)
	}
	// Causal again: 17 rows at once are fine, after the 16 in the cache.
	b.Clear()
	for i := 0; i < 17; i++ {
		b.Add(row, 16+i, 0, i == 16)
	}
	if err := ctx.DecodeEmbd(b); err != nil {
		t.Fatalf("17 rows with causal attention: %v", err)
	}
	// Positions that do not follow the sequence's: llama.cpp's error.
	b.Clear()
	b.Add(row, 100, 0, true)
	if err := ctx.DecodeEmbd(b); err == nil {
		t.Error("a position gap decoded")
	}
	// A batch of another model's width.
	other := &EmbdBatch{cap: 1, n: 1, width: w + 1}
	if err := ctx.DecodeEmbd(other); err == nil {
		t.Error("a batch of another width decoded")
	}
	// The embedding context keeps its model's attention.
	ectx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 64, Embeddings: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ectx.Close()
	if err := ectx.SetCausal(false); err == nil {
		t.Error("SetCausal on an embedding context")
	}
	b.Close()
	b.Close()
	if err := ctx.DecodeEmbd(b); err != nil {
		t.Errorf("an empty closed batch: %v", err)
	}
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
