package engine

import (
	"math"
	"testing"
)

// Flash attention on, off and auto give the same logits (within float
// rounding) over one prompt decoded in chunks; no context can switch
// between them (the public API fixes the choice when a context is made).
func TestFlashAttnModes(t *testing.T) {
	m := loadStories(t)
	toks, _ := m.Tokenize("Once upon a time there was a little girl named Lily. She loved to play outside in the park with her friends.", true, false)
	logits := func(fa FlashAttention) [][]float32 {
		ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 512, NumSeqMax: 2, FlashAttn: fa})
		if err != nil {
			t.Fatal(err)
		}
		defer ctx.Close()
		if ctx.FlashAttnSwitchable() {
			t.Fatalf("flash attention %v: switchable", fa)
		}
		if err := ctx.SetFlashAttn(!ctx.FlashAttn()); err == nil {
			t.Fatalf("flash attention %v: switched", fa)
		}
		b, err := NewBatch(64)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		var out [][]float32
		for c := 0; c*8 < len(toks); c++ {
			b.Clear()
			for i := c * 8; i < min(len(toks), c*8+8); i++ {
				b.Add(toks[i], i, 1, i == min(len(toks), c*8+8)-1)
			}
			if err := ctx.Decode(b); err != nil {
				t.Fatal(err)
			}
			out = append(out, append([]float32(nil), ctx.Logits(b.Len()-1)...))
		}
		return out
	}
	want := logits(FlashAttentionOn)
	for _, fa := range []FlashAttention{FlashAttentionOff, FlashAttentionAuto} {
		got := logits(fa)
		for c := range want {
			for i := range want[c] {
				if d := math.Abs(float64(got[c][i] - want[c][i])); d > 2e-2 {
					t.Fatalf("flash attention %v, chunk %d, logit %d: %v, %v with it on", fa, c, i, got[c][i], want[c][i])
				}
			}
		}
	}
}

// A state copied into a StateBuffer restores as one from SeqState does.
func TestSeqStateBuffer(t *testing.T) {
	m := loadStories(t)
	ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 512, NumSeqMax: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	toks, _ := m.Tokenize("Once upon a time there was a little girl", true, false)
	b, _ := NewBatch(64)
	defer b.Close()
	for i, tok := range toks {
		b.Add(tok, i, 0, i == len(toks)-1)
	}
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	want, err := ctx.SeqState(0)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := ctx.SeqStateBuffer(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(sb.Bytes()) != string(want) {
		t.Fatalf("buffer of %d bytes differs from SeqState's %d", len(sb.Bytes()), len(want))
	}
	if err := ctx.SetSeqState(1, sb.Bytes()); err != nil || ctx.SeqPosMax(1) != len(toks)-1 {
		t.Fatalf("restore: %v, pos max %d", err, ctx.SeqPosMax(1))
	}
	sb.Free()
	sb.Free()
	if sb.Bytes() != nil {
		t.Error("Bytes after Free")
	}
	if _, err := ctx.SeqStateBuffer(7, nil); err == nil {
		t.Error("sequence 7 of 2 accepted")
	}
	// Reusing a buffer: the same bytes, in that buffer; one too small
	// (the state of a shorter sequence) is left alone.
	pre, err := ctx.SeqStateBuffer(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ctx.SeqStateBuffer(0, pre)
	if err != nil || got != pre || string(got.Bytes()) != string(want) {
		t.Fatalf("into a used buffer: %v, same buffer %v", err, got == pre)
	}
	ctx.SeqRemove(1, -1, -1)
	b.Clear()
	b.Add(toks[0], 0, 1, true)
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	small, err := ctx.SeqStateBuffer(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if small.Cap() >= len(want) {
		t.Fatalf("a one-token state takes %d bytes of buffer, the long one %d: no smaller buffer to test with", small.Cap(), len(want))
	}
	got, err = ctx.SeqStateBuffer(0, small)
	if err != nil || got == small || string(got.Bytes()) != string(want) {
		t.Fatalf("with a small buffer: %v, same %v", err, got == small)
	}
	got.Free()
	small.Free()
	pre.Free()
}
