package runner

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

// slot is one sequence of the shared context. Its cache mirrors exactly
// the tokens whose KV the sequence holds (positions 0..len-1) and survives
// the request that filled it, for prefix reuse.
type slot struct {
	id    int
	cache []engine.Token
	// spans are the Request.Embeds of the prompt (their bounds once the
	// request ended), in cache positions: the prefix cache reuses a span
	// only where the new prompt has one with the same bounds.
	spans []Embeds
	req   *request

	prompt []engine.Token // the request's prompt after truncation
	// prompted is set once the prompt's last position is in a batch: a
	// context shift may leave the cache shorter than the prompt, and the
	// prompt must not be fed again then.
	prompted   bool
	sampler    *engine.Sampler
	lazy       *lazyState   // a lazy grammar not yet woken (lazy.go)
	pending    engine.Token // sampled, not yet decoded
	hasPending bool
	outIdx     int // batch index of this slot's logits in the current step
	generated  []engine.Token
	logprobs   []TokenLogprob // not yet delivered
	detok      engine.Detokenizer
	stop       stopMatcher
	stats      Stats
	spec       specState    // speculate.go
	draftN     int          // tokens of cache the draft model's sequence holds (draftmodel.go)
	ckpts      []checkpoint // checkpoint.go: oldest first
	// adapters names the LoRA adapter set the cache was computed under
	// (AdapterSet.Key; "" the base model's).
	adapters string
}

// reusable is how many of q's prompt tokens the slot's cache holds,
// computed under q's adapter set (none under another set).
func (s *slot) reusable(q *request) int {
	if s.adapters != q.Adapters.key {
		return 0
	}
	return reusable(s.cache, s.spans, q.prompt, q.spans)
}

// start prepares a slot for a request (its prompt truncated by Generate
// if it did not fit): reuses the longest cached prefix and takes the
// request's sampler.
func (r *Runner) start(s *slot, q *request) {
	prompt := q.prompt
	restored := r.swapPromptCache(s, q) // promptcache.go
	common := s.reusable(q)
	if common == len(prompt) {
		// The last prompt position is evaluated again for its logits (the
		// whole span when it ends one).
		common = outside(common-1, q.spans)
	}
	if common < len(s.cache) {
		if r.ckpt {
			common = r.cutBack(s, common) // checkpoint.go
		} else if !r.ctx.SeqRemove(s.id, common, -1) {
			r.ctx.SeqRemove(s.id, -1, -1)
			common = 0
		}
	}
	s.cache = s.cache[:common]
	r.resetDraft(s, common)
	s.spans = q.spans
	s.adapters = q.Adapters.key
	if common > 0 {
		slog.Debug("prompt cache hit", "slot", s.id, "reused_tokens", common, "prompt_tokens", len(prompt))
	}
	s.prompt = prompt
	s.sampler, s.lazy = q.sampler, q.lazy
	s.hasPending = false
	s.prompted = false
	s.generated = s.generated[:0]
	s.detok = engine.Detokenizer{}
	s.stop = stopMatcher{stops: nonEmpty(q.Stop)}
	s.spec.reset()
	r.seedSpec(&s.spec)
	now := time.Now()
	s.stats = Stats{PromptTokens: len(prompt), CachedTokens: common, QueueWait: now.Sub(q.queued), StartedAt: now}
	if restored {
		s.stats.RestoredTokens = common
	}
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// step runs one decode step. It reports false when no slot had work.
func (r *Runner) step() bool {
	tStep := time.Now()
	for _, s := range r.slots {
		if s.req != nil && s.req.ctx.Err() != nil {
			r.finish(s, "cancel", s.req.ctx.Err())
		}
	}
	spanned := r.spanStep()
	r.batch.Clear()
	var generating, prefilling []*slot
	// The slots of one adapter set decode together; several sets take
	// turns (adapters.go).
	set, _ := r.turnSet()
	// One token for every generating slot.
	for _, s := range r.slots {
		s.outIdx = -1
		if s.req == nil || !s.hasPending || s.req.Adapters.key != set.key {
			continue
		}
		if len(s.cache) >= s.req.NumCtx && !r.shift(s) {
			continue
		}
		s.outIdx = r.batch.Add(s.pending, len(s.cache), s.id, true)
		s.cache = append(s.cache, s.pending)
		s.hasPending = false
		generating = append(generating, s)
	}
	// Then their drafts (speculate.go), in the room the tokens left.
	r.addDrafts(generating)
	// Chunks of waiting prompts fill the rest of the batch.
	for _, s := range r.slots {
		if s.req == nil || s.prompted || r.batch.Len() >= r.batch.Cap() || s.req.Adapters.key != set.key {
			continue
		}
		if s.spanAt(len(s.cache)) >= 0 {
			continue // a span: spanStep decodes it
		}
		r.checkpointBefore(s) // checkpoint.go
		for end := r.chunkEnd(s, s.textEnd(len(s.cache))); len(s.cache) < end && r.batch.Len() < r.batch.Cap(); {
			last := len(s.cache) == len(s.prompt)-1
			i := r.batch.Add(s.prompt[len(s.cache)], len(s.cache), s.id, last)
			if last {
				s.outIdx = i
				s.prompted = true
			}
			s.cache = append(s.cache, s.prompt[len(s.cache)])
		}
		prefilling = append(prefilling, s)
	}
	if r.batch.Len() == 0 {
		return spanned
	}
	err := r.useAdapters(set)
	t0 := time.Now()
	record(PhaseBatch, t0.Sub(tStep))
	if err == nil {
		err = r.ctx.Decode(r.batch)
	}
	took := time.Since(t0)
	if len(prefilling) > 0 {
		record(PhasePrefill, took)
	} else {
		record(PhaseDecode, took)
	}
	if err != nil {
		slog.Error("decode failed", "tokens", r.batch.Len(), "error", err)
		for _, s := range append(generating, prefilling...) {
			r.ctx.SeqRemove(s.id, -1, -1)
			r.resetDraft(s, 0)
			s.cache, s.ckpts = s.cache[:0], s.ckpts[:0]
			s.spans = nil
			r.finish(s, "", fmt.Errorf("decode: %w", err))
		}
		return true
	}
	for _, s := range generating {
		s.stats.EvalDuration += took
	}
	if len(prefilling) == 0 && len(generating) > 0 {
		r.cost.observe(r.batch.Len(), took.Seconds())
	}
	for _, s := range prefilling {
		s.stats.PromptEvalDuration += took
		if s.outIdx >= 0 {
			s.stats.PromptEvalCount = len(s.prompt) - s.stats.CachedTokens
		}
	}
	for _, s := range r.slots {
		if s.req != nil && s.outIdx >= 0 {
			r.sampleSpec(s)
		}
	}
	record(PhaseStep, time.Since(tStep))
	return true
}

// sample picks a slot's next token and delivers its text.
func (r *Runner) sample(s *slot) {
	q := s.req
	if q.NumPredict == 0 || (q.NumPredict > 0 && len(s.generated) >= q.NumPredict) {
		r.finish(s, "length", nil)
		return
	}
	t0 := time.Now()
	t, err := s.sampler.Sample(r.ctx, s.outIdx)
	if err != nil {
		r.finish(s, "", err)
		return
	}
	if q.Logprobs {
		s.logprobs = append(s.logprobs, r.logprob(s.outIdx, t, q.TopLogprobs))
	}
	if s.lazy != nil && s.lazy.see(t) {
		// The trigger: the grammar's sampler takes over from it.
		s.sampler.Close()
		s.sampler, s.lazy = s.lazy.sampler, nil
	}
	t1 := time.Now()
	record(PhaseSample, t1.Sub(t0))
	if r.model.IsEOG(t) {
		r.finish(s, "stop", nil)
		return
	}
	if len(s.generated) == 0 {
		s.stats.TimeToFirstToken = time.Since(q.queued)
	}
	s.generated = append(s.generated, t)
	s.stats.EvalCount++
	text, hit := s.stop.push(string(s.detok.Add(r.model.TokenPiece(t, slices.Contains(q.Print, t)))))
	t2 := time.Now()
	record(PhaseDetokenize, t2.Sub(t1))
	if text != "" {
		q.stream.send(Event{Text: text, Logprobs: s.logprobs})
		s.logprobs = nil
		record(PhaseHandoff, time.Since(t2))
	}
	switch {
	case hit:
		r.finish(s, "stop", nil)
	case q.NumPredict > 0 && len(s.generated) >= q.NumPredict:
		r.finish(s, "length", nil)
	default:
		s.pending, s.hasPending = t, true
	}
}

// shift makes room in a full slot by dropping the oldest half of the
// tokens after num_keep. It ends the request with "length" instead when
// the request forbids shifting, asked to fill the context (-2), or the
// memory cannot shift; it reports whether the slot may go on.
func (r *Runner) shift(s *slot) bool {
	q := s.req
	keep := min(max(q.NumKeep, 0), q.NumCtx/2)
	discard := (len(s.cache) - keep) / 2
	if q.NoShift || q.NumPredict == -2 || discard == 0 || !r.ctx.CanShift() {
		r.finish(s, "length", nil)
		return false
	}
	discard, ok := s.shiftSpans(keep, discard)
	if !ok {
		slog.Debug("context shift would cut embeddings after num_keep", "slot", s.id, "kept", keep)
		r.finish(s, "length", nil)
		return false
	}
	r.ctx.SeqRemove(s.id, keep, keep+discard)
	r.ctx.SeqShift(s.id, keep+discard, -1, -discard)
	s.cache = append(s.cache[:keep], s.cache[keep+discard:]...)
	s.dropCheckpoints(keep) // the positions after keep moved
	r.resetDraft(s, keep)
	slog.Debug("context shift", "slot", s.id, "kept", keep, "discarded", discard)
	return true
}

// finish ends a slot's request with a reason or an error and frees the
// slot; the slot keeps its cache.
func (r *Runner) finish(s *slot, reason string, err error) {
	q := s.req
	if q == nil {
		return
	}
	if reason != "cancel" && err == nil {
		if tail := s.stop.flush() + string(s.detok.Flush()); tail != "" || len(s.logprobs) > 0 {
			q.stream.send(Event{Text: tail, Logprobs: s.logprobs})
		}
	}
	s.logprobs = nil
	tokens := make([]engine.Token, 0, len(s.prompt)+len(s.generated))
	tokens = append(append(tokens, s.prompt...), s.generated...)
	q.stream.send(Event{Done: true, DoneReason: reason, Err: err, Stats: s.stats, Tokens: tokens})
	s.sampler.Close()
	s.sampler = nil
	s.lazy.close()
	s.lazy = nil
	s.hasPending = false
	s.spans = keepBounds(s.spans)
	r.mu.Lock()
	s.req = nil
	r.mu.Unlock()
	r.signal()
}

// logprob computes a sampled token's log-probability from the logits of
// batch output idx, with the top most likely tokens.
func (r *Runner) logprob(idx int, t engine.Token, top int) TokenLogprob {
	logits := r.ctx.Logits(idx)
	maxL := float32(math.Inf(-1))
	for _, l := range logits {
		maxL = max(maxL, l)
	}
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l - maxL))
	}
	logZ := float32(math.Log(sum)) + maxL
	lp := TokenLogprob{Token: string(r.model.TokenPiece(t, true)), ID: t, Logprob: logits[t] - logZ}
	if top <= 0 {
		return lp
	}
	top = min(top, len(logits))
	// Partial selection of the top tokens: top is small (≤ 20).
	best := make([]engine.Token, 0, top+1)
	for i, l := range logits {
		if len(best) == top && l <= logits[best[top-1]] {
			continue
		}
		j := len(best)
		if j < top {
			best = append(best, 0)
		} else {
			j = top - 1
		}
		for j > 0 && logits[best[j-1]] < l {
			best[j] = best[j-1]
			j--
		}
		best[j] = engine.Token(i)
	}
	for _, b := range best {
		lp.Top = append(lp.Top, TokenLogprob{Token: string(r.model.TokenPiece(b, true)), ID: b, Logprob: logits[b] - logZ})
	}
	return lp
}
