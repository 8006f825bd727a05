package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

// Embeds is a span of a request's Prompt fed to the model as embeddings
// instead of tokens: an image or audio clip encoded by its projector
// (N positions × the model's input width).
//
// How the runner treats a span:
//
//   - Prompt holds a placeholder at each of the span's positions (callers
//     derive them from the media's hash, e.g. negative values). They
//     never reach llama.cpp, the detokenizer, stop matching or the
//     sampler's penalty history; they are compared like tokens by the
//     prefix cache, so a cached prefix with an image is reused only for
//     the same placeholders, and only whole: a reused prefix never ends
//     inside a span, and a span is reused only where the slot's cache
//     holds a span with the same bounds (a placeholder equal to a text
//     token never matches it). Event.Tokens carries the placeholders.
//   - Prefill: text runs are batched with the other slots as usual; a
//     span is decoded in llama_decode calls of its own, of at most the
//     runner's batch size each, one such call per step across all slots
//     (so an image stalls the others by one decode per step at most). A
//     NonCausal span is decoded whole in one micro-batch with causal
//     attention off; a NonCausal span longer than that is refused.
//   - Truncation (a prompt longer than the context, NoTruncate unset)
//     drops the oldest tokens after NumKeep as for text, and drops a span
//     it reaches whole, never a part; a NumKeep that ends inside a span is
//     an error.
//   - A context shift likewise discards whole spans only: it grows to the
//     end of a span it would cut, and when NumKeep ends inside a span the
//     generation ends with "length" instead.
//   - Models with M-RoPE positions (Qwen2-VL) take an image's 2-D
//     positions, and encoder-decoder models take no embedding input: a
//     request with Embeds is refused on them.
type Embeds struct {
	Start     int       // index in Prompt of the span's first position
	Data      []float32 // len = N × the model's input width (engine.Model.EmbdSize)
	N         int       // positions
	NonCausal bool      // decode the span with causal attention off
}

func (e Embeds) end() int { return e.Start + e.N }

// checkEmbeds validates a request's spans against its prompt, then the
// prompt's tokens outside them against the vocabulary.
func (r *Runner) checkEmbeds(req *Request) error {
	if len(req.Embeds) > 0 {
		if r.model.MRoPE() {
			return errors.New("embeddings: the model uses M-RoPE positions, which are not supported yet")
		}
		if r.model.HasEncoder() {
			return errors.New("embeddings: the model is an encoder-decoder and takes no embedding input")
		}
	}
	width := r.model.EmbdSize()
	prev := 0
	for i, e := range req.Embeds {
		if e.N < 1 {
			return fmt.Errorf("embeddings %d: %d positions (at least 1)", i, e.N)
		}
		if e.Start < prev || e.Start > len(req.Prompt) || e.N > len(req.Prompt)-e.Start {
			return fmt.Errorf("embeddings %d: positions %d..+%d are not within the prompt of %d tokens after the previous span (ending at %d)",
				i, e.Start, e.N, len(req.Prompt), prev)
		}
		if e.N > math.MaxInt/width || len(e.Data) != e.N*width {
			return fmt.Errorf("embeddings %d: %d floats for %d positions of width %d", i, len(e.Data), e.N, width)
		}
		if e.NonCausal && e.N > r.nonCausalLimit() {
			return fmt.Errorf("embeddings %d: %d positions without causal attention exceed the micro-batch of %d", i, e.N, r.nonCausalLimit())
		}
		for _, v := range e.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("embeddings %d: %w", i, engine.ErrNotFinite)
			}
		}
		prev = e.end()
	}
	nv := r.model.VocabSize()
	j := 0 // next span
	for i := 0; i < len(req.Prompt); i++ {
		if j < len(req.Embeds) && i == req.Embeds[j].Start {
			i = req.Embeds[j].end() - 1
			j++
			continue
		}
		if t := req.Prompt[i]; t < 0 || int(t) >= nv {
			return fmt.Errorf("token %d is not in the vocabulary (0..%d)", t, nv-1)
		}
	}
	return nil
}

// spanBatch is the most positions of one span decode.
func (r *Runner) spanBatch() int { return min(r.cfg.NumBatch, r.ctx.NumBatch()) }

// nonCausalLimit is the longest NonCausal span: one micro-batch.
func (r *Runner) nonCausalLimit() int { return min(r.spanBatch(), r.ctx.NumUBatch()) }

// truncate fits a prompt of nctx tokens or more into the context: it
// keeps the first keep tokens and drops the oldest after them so that
// half of what is left is free to generate in, dropping a span it reaches
// whole. A keep that ends inside a span is an error.
func truncate(prompt []engine.Token, spans []Embeds, nctx, numKeep int) ([]engine.Token, []Embeds, error) {
	keep := min(max(numKeep, 0), nctx/2)
	target := max(keep+(nctx-keep)/2, 1)
	from, to := keep, len(prompt)-target+keep // dropped: [from, to)
	var kept []Embeds
	for _, e := range spans {
		switch {
		case e.Start < keep && keep < e.end():
			return nil, nil, fmt.Errorf("prompt of %d tokens does not fit the context of %d tokens, and num_keep %d ends inside the embeddings at %d..%d (an image or audio clip is never cut)",
				len(prompt), nctx, keep, e.Start, e.end())
		case e.Start < to && to < e.end():
			to = e.end()
		}
	}
	if to-from >= len(prompt) {
		return nil, nil, fmt.Errorf("prompt of %d tokens does not fit the context of %d tokens: truncating it would leave nothing (embeddings are dropped whole, never cut)", len(prompt), nctx)
	}
	for _, e := range spans {
		switch {
		case e.end() <= from:
			kept = append(kept, e)
		case e.Start >= to:
			e.Start -= to - from
			kept = append(kept, e)
		}
	}
	t := append(append(make([]engine.Token, 0, len(prompt)-(to-from)), prompt[:from]...), prompt[to:]...)
	slog.Warn("prompt truncated to fit the context", "prompt_tokens", len(prompt), "num_ctx", nctx, "num_keep", keep, "kept", len(t),
		"spans_dropped", len(spans)-len(kept))
	return t, kept, nil
}

// reusable is how many leading positions of a slot's cache (with its
// spans) a prompt (with its spans) may reuse: their common prefix, backed
// off so that it never ends inside a span of either and covers only
// spans both have with the same bounds.
func reusable(cache []engine.Token, cspans []Embeds, prompt []engine.Token, pspans []Embeds) int {
	n := commonPrefix(cache, prompt)
	for {
		m := backOff(n, pspans, cspans)
		m = backOff(m, cspans, pspans)
		if m == n {
			return n
		}
		n = m
	}
}

// backOff moves n back to the start of the first span of a that begins
// before n and either goes past it or is not in b.
func backOff(n int, a, b []Embeds) int {
	for _, e := range a {
		if e.Start >= n {
			break
		}
		if e.end() > n || !hasSpan(b, e) {
			return e.Start
		}
	}
	return n
}

// outside moves n back to the start of the span it falls inside, if any.
func outside(n int, spans []Embeds) int {
	for _, e := range spans {
		if e.Start < n && n < e.end() {
			return e.Start
		}
	}
	return n
}

func hasSpan(spans []Embeds, e Embeds) bool {
	for _, s := range spans {
		if s.Start == e.Start && s.N == e.N {
			return true
		}
	}
	return false
}

// spanAt is the index of the slot's span holding position pos, or -1.
func (s *slot) spanAt(pos int) int {
	for i, e := range s.spans {
		if e.Start <= pos && pos < e.end() {
			return i
		}
	}
	return -1
}

// textEnd is where the text run of the prompt starting at pos ends: the
// next span's start, or the prompt's end.
func (s *slot) textEnd(pos int) int {
	for _, e := range s.spans {
		if e.Start >= pos {
			return e.Start
		}
	}
	return len(s.prompt)
}

// keepBounds drops the spans' data once the request ends: the slot keeps
// only their bounds, for prefix reuse.
func keepBounds(spans []Embeds) []Embeds {
	out := make([]Embeds, len(spans))
	for i, e := range spans {
		out[i] = Embeds{Start: e.Start, N: e.N, NonCausal: e.NonCausal}
	}
	return out
}

// spanStep decodes the next piece of one prefilling slot's span, taking
// the slots in turn, and samples the slot when the piece ends its prompt.
// It reports whether it decoded anything.
func (r *Runner) spanStep() bool {
	var s *slot
	var e Embeds
	for k := range r.slots {
		c := r.slots[(r.spanTurn+k)%len(r.slots)]
		if c.req == nil || c.prompted {
			continue
		}
		if i := c.spanAt(len(c.cache)); i >= 0 {
			s, e = c, c.spans[i]
			r.spanTurn = (c.id + 1) % len(r.slots)
			break
		}
	}
	if s == nil {
		return false
	}
	if r.embdBatch == nil {
		b, err := r.model.NewEmbdBatch(r.spanBatch())
		if err != nil {
			r.spanFailed(s, err)
			return true
		}
		r.embdBatch = b
	}
	b := r.embdBatch
	b.Clear()
	pos := len(s.cache)
	end := min(e.end(), pos+b.Cap())
	if e.NonCausal && (pos != e.Start || end != e.end()) {
		r.spanFailed(s, fmt.Errorf("embeddings at %d..%d without causal attention do not fit one decode", e.Start, e.end()))
		return true
	}
	w := b.Width()
	out := -1
	for p := pos; p < end; p++ {
		last := p == len(s.prompt)-1
		i, err := b.Add(e.Data[(p-e.Start)*w:(p-e.Start+1)*w], p, s.id, last)
		if err != nil {
			r.spanFailed(s, err)
			return true
		}
		if last {
			out = i
		}
	}
	if err := r.useAdapters(s.req.Adapters); err != nil {
		r.spanFailed(s, err)
		return true
	}
	t0 := time.Now()
	var err error
	if e.NonCausal {
		if err = r.ctx.SetCausal(false); err == nil {
			err = r.ctx.DecodeEmbd(b)
			if cerr := r.ctx.SetCausal(true); err == nil {
				err = cerr
			}
		}
	} else {
		err = r.ctx.DecodeEmbd(b)
	}
	took := time.Since(t0)
	record(PhasePrefill, took)
	if err != nil {
		r.spanFailed(s, err)
		return true
	}
	s.cache = append(s.cache, s.prompt[pos:end]...)
	s.stats.PromptEvalDuration += took
	if out >= 0 {
		s.prompted = true
		s.stats.PromptEvalCount = len(s.prompt) - s.stats.CachedTokens
		s.outIdx = out
		r.sample(s)
		s.outIdx = -1
	}
	return true
}

// spanFailed ends a slot's request after a failed span decode; the slot's
// cache is dropped.
func (r *Runner) spanFailed(s *slot, err error) {
	slog.Error("embeddings decode failed", "slot", s.id, "error", err)
	r.ctx.SeqRemove(s.id, -1, -1)
	s.cache, s.ckpts = s.cache[:0], s.ckpts[:0]
	s.spans = nil
	r.finish(s, "", fmt.Errorf("decode: %w", err))
}

// shiftSpans fits a context shift of the slot's cache, dropping
// [keep, keep+discard), to its spans: it returns the discard grown to the
// end of a span it would cut, or ok false when keep ends inside a span.
func (s *slot) shiftSpans(keep, discard int) (int, bool) {
	for _, e := range s.spans {
		switch {
		case e.Start < keep && keep < e.end():
			return 0, false
		case e.Start < keep+discard && keep+discard < e.end():
			discard = e.end() - keep
		}
	}
	var kept []Embeds
	for _, e := range s.spans {
		switch {
		case e.end() <= keep:
			kept = append(kept, e)
		case e.Start >= keep+discard:
			e.Start -= discard
			kept = append(kept, e)
		}
	}
	s.spans = kept
	return discard, true
}
