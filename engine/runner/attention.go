package runner

import (
	"log/slog"
)

// Attention per step: flash attention or matrix products.
//
// On the CPU the pinned llama.cpp's flash-attention kernel runs one query
// row at a time over the cells: the cheapest way for one token per
// sequence, but slow where many tokens meet a long context (a returning
// conversation's new message, a prompt's later chunks, drafts at length),
// where the graph without it (two matrix products per layer) is up to 2x
// faster. So when the context allows it (engine.Context.FlashAttnSwitchable)
// the runner picks per decode, from a cost model of both fitted to the
// measurements below.
//
// Costs per sequence j in the batch, T_j its tokens, A_j the cells they
// attend to (the sum of their positions + 1), K_j the cells its stream
// spans (its length padded to 256, as llama.cpp pads it):
//
//	flash attention:  attnFlash · A_j
//	matrix products:  K_j · (attnMatmul · T_j + attnTranspose)
//
// attnTranspose is the copy of V the graph without flash attention makes
// per step (a cache made for flash attention keeps V untransposed).
// Measured with scripts/fasweep (SmolLM2-135M shape, Q8_0, 2 threads, a
// stream per sequence; ms flash / matrix products): 16 new tokens after
// 4,000 cached 198 / 122; 4 after 4,000 73 / 64; 1 after 4,000 33 / 45;
// one token for each of 4 sequences of 4,000 104 / 151; 16 after 100
// 37 / 39; 256 after 100 475 / 451. The model chooses the faster in
// each of these where they differ by more than 10% (attention_test.go).
const (
	attnFlash     = 2.34 // µs per attended cell
	attnMatmul    = 1.13 // µs per token per spanned cell
	attnTranspose = 4.0  // µs per spanned cell
)

// attnCost accumulates a batch's attention cost both ways.
type attnCost struct {
	seq              []int
	tokens, attended []int64
	maxPos           []int
}

func (c *attnCost) reset() {
	c.seq, c.tokens, c.attended, c.maxPos = c.seq[:0], c.tokens[:0], c.attended[:0], c.maxPos[:0]
}

// add counts n tokens of seq at positions from..from+n-1.
func (c *attnCost) add(seq, from, n int) {
	i := 0
	for i < len(c.seq) && c.seq[i] != seq {
		i++
	}
	if i == len(c.seq) {
		c.seq, c.tokens, c.attended, c.maxPos = append(c.seq, seq), append(c.tokens, 0), append(c.attended, 0), append(c.maxPos, 0)
	}
	c.tokens[i] += int64(n)
	c.attended[i] += int64(n) * int64(2*from+n+1) / 2
	c.maxPos[i] = max(c.maxPos[i], from+n-1)
}

// flashCheaper reports whether flash attention is the cheaper way.
func (c *attnCost) flashCheaper() bool {
	var flash, mm float64
	for i := range c.seq {
		span := float64((c.maxPos[i] + 256) / 256 * 256)
		flash += attnFlash * float64(c.attended[i])
		mm += span * (attnMatmul*float64(c.tokens[i]) + attnTranspose)
	}
	return flash <= mm
}

// chooseAttention sets the context's attention for the batch in r.attn.
func (r *Runner) chooseAttention() {
	if !r.faSwitch {
		return
	}
	want := r.attn.flashCheaper()
	if want == r.ctx.FlashAttn() {
		return
	}
	if err := r.ctx.SetFlashAttn(want); err != nil {
		slog.Warn("flash attention stays as it is from now on", "error", err)
		r.faSwitch = false
		return
	}
	r.attnSwitches++
}

// batchAttention chooses the attention for r.batch.
func (r *Runner) batchAttention() {
	if !r.faSwitch {
		return
	}
	r.attn.reset()
	for i := range r.batch.Len() {
		pos, seq := r.batch.At(i)
		r.attn.add(seq, pos, 1)
	}
	r.chooseAttention()
}
