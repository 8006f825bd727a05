package engine

import (
	"math"
	"testing"
)

// Switching flash attention off and on between decodes gives the same
// logits (within float rounding) as staying with it, on one cache; a
// context that cannot switch says so and refuses.
func TestSetFlashAttn(t *testing.T) {
	m := loadStories(t)
	toks, _ := m.Tokenize("Once upon a time there was a little girl named Lily. She loved to play outside in the park with her friends.", true, false)
	logitsAfter := func(switchAt []bool) [][]float32 {
		ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 512, NumSeqMax: 2, FlashAttn: FlashAttentionOn})
		if err != nil {
			t.Fatal(err)
		}
		defer ctx.Close()
		if !ctx.FlashAttnSwitchable() || !ctx.FlashAttn() {
			t.Fatalf("switchable %v, on %v: want both", ctx.FlashAttnSwitchable(), ctx.FlashAttn())
		}
		b, err := NewBatch(64)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		var out [][]float32
		// The prompt in chunks of 8, then each chunk's last logits.
		for c := 0; c*8 < len(toks); c++ {
			if err := ctx.SetFlashAttn(switchAt[c%len(switchAt)]); err != nil {
				t.Fatal(err)
			}
			if ctx.FlashAttn() != switchAt[c%len(switchAt)] {
				t.Fatal("FlashAttn does not report the mode set")
			}
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
	want := logitsAfter([]bool{true})
	for _, pattern := range [][]bool{{false}, {false, true}, {true, false, false}} {
		got := logitsAfter(pattern)
		for c := range want {
			for i := range want[c] {
				if d := math.Abs(float64(got[c][i] - want[c][i])); d > 2e-2 {
					t.Fatalf("pattern %v, chunk %d, logit %d: %v switching, %v with flash attention", pattern, c, i, got[c][i], want[c][i])
				}
			}
		}
	}

	for _, p := range []ContextParams{
		{Threads: 1, NumCtx: 256, FlashAttn: FlashAttentionOff},
		{Threads: 1, NumCtx: 256, FlashAttn: FlashAttentionOn, KVType: "q8_0"},
		{Threads: 1, NumCtx: 256, NumSeqMax: 2, FlashAttn: FlashAttentionOn, KVUnified: true},
		{Threads: 1, NumCtx: 256, FlashAttn: FlashAttentionOn, Embeddings: true},
	} {
		ctx, err := m.NewContext(p)
		if err != nil {
			t.Fatal(err)
		}
		if ctx.FlashAttnSwitchable() {
			t.Errorf("%+v: switchable", p)
		}
		if err := ctx.SetFlashAttn(!ctx.FlashAttn()); err == nil {
			t.Errorf("%+v: switched", p)
		}
		ctx.Close()
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
