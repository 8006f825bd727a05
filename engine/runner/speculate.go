package runner

import "github.com/tadpole-llm/tadpole/engine"

// Speculative decoding by prompt lookup (n-grams): a generating slot that
// ends with a few tokens it has seen before (in its prompt or its own
// answer) drafts the tokens that followed them there, and decodes them in
// the same step as its own next token and every other slot's tokens (a
// slot contributes 1 + k tokens to the batch). Its sampler then samples
// position after position as it would have one step at a time, and keeps
// going while what it samples is the draft: every sampled token is the
// one plain decoding would have sampled (same logits — the positions
// before it hold exactly the tokens it would have — and the same random
// draws, one per token), so the output is unchanged, greedy or at a
// temperature, grammar and penalties included. The first sample that is
// not the draft is kept as the next token; the drafts after it leave the
// KV. Code editing, RAG answers quoting their sources and long repeated
// boilerplate accept many tokens; prose accepts few.
//
// A draft token is worth its place only if it is accepted often enough
// to pay for the compute it adds to the step. The runner fits its decode
// steps' time to a + b·n (n tokens in the batch; a: reading the weights,
// b: each token's compute) and a slot estimates the chance α that a
// draft token is accepted (from its own drafts, starting from what the
// runner's recent requests accepted, worth draftPrior draft tokens, or
// 0.5 before any: a model whose drafts are rarely right does not pay for
// a wasted draft at every request's first steps, where its first token
// may still wait for the next one).
// With n slots generating, a step makes n tokens in a + b·n, and the i-th
// draft token of a slot, accepted with chance α^i, adds b: it is drafted
// only if α^i > θ = b·n / (a + b·n). On a CPU decoding one stream, θ is
// small (the weights dominate) and a slot drafts freely; with eight
// streams the batch is compute-bound, θ nears 1, and only drafts that
// are almost always right are made. A slot that has not drafted for
// draftProbe steps drafts one token, so that a change in its text shows.

// Drafting settings.
const (
	// DefaultDraftMax is the most tokens a slot drafts per step
	// (Config.DraftMax 0).
	DefaultDraftMax = 8
	// MaxDraft bounds Config.DraftMax.
	MaxDraft = 64
	// draftNgramMax, draftNgramMin: the longest and shortest suffix
	// looked up (longer first: they predict better).
	draftNgramMax = 4
	draftNgramMin = 2
	// draftLookback bounds the history searched per step.
	draftLookback = 8192
	// draftProbe: steps without a draft after which a slot drafts one.
	draftProbe = 32
	// draftDecay weighs a slot's past drafts in its acceptance estimate
	// (and the cost fit's past steps).
	draftDecay = 0.95
	// draftMargin: how much better than break-even a draft token must be.
	draftMargin = 1.5
	// draftPrior: how many draft tokens the runner's acceptance counts
	// for in a new request's estimate.
	draftPrior = 4
)

// seedSpec starts a request's acceptance estimate from the runner's.
func (r *Runner) seedSpec(sp *specState) {
	if r.specProposed > 0 {
		sp.proposed = draftPrior
		sp.accepted = draftPrior * r.specAccepted / r.specProposed
	}
}

// specState is a slot's drafting state.
type specState struct {
	draft    []engine.Token // drafted this step
	draftIdx []int          // their batch indices (the drafts end the cache)

	// proposed, accepted: decayed counts of the slot's draft tokens
	proposed, accepted float64
	idle               int // steps since the slot last drafted

	// over the request, for Stats
	totalProposed, totalAccepted int
}

func (sp *specState) reset() {
	*sp = specState{draft: sp.draft[:0], draftIdx: sp.draftIdx[:0]}
}

// draftMax is the runner's drafting bound (0: off).
func (r *Runner) draftMax() int {
	switch {
	case r.cfg.DraftMax < 0:
		return 0
	case r.cfg.DraftMax == 0:
		return DefaultDraftMax
	}
	return r.cfg.DraftMax
}

// draftWant is how many tokens slot s drafts this step, n slots
// generating: within its window, its token limit and the batch's room,
// and as many as pay for themselves (draftLen), or one after draftProbe
// steps without.
func (r *Runner) draftWant(s *slot, n, room int) int {
	sp := &s.spec
	k := min(r.draftMax(), s.req.NumCtx-len(s.cache), room)
	if d := s.req.DraftMax; d != 0 {
		k = min(k, max(d, 0))
	}
	if q := s.req; q.NumPredict > 0 {
		k = min(k, q.NumPredict-len(s.generated)-1)
	}
	if k < 1 {
		return 0
	}
	if want := r.draftLen(sp, n); want < k {
		if want == 0 && sp.idle < draftProbe {
			sp.idle++
			return 0
		}
		k = max(want, 1)
	}
	sp.idle = 0
	return k
}

// addDrafts drafts the generating slots' next tokens after their pending
// ones (already in the batch at the end of their caches) — by the draft
// model when there is one, else by prompt lookup — and adds them to the
// batch, in the room the slots' own tokens left.
func (r *Runner) addDrafts(gen []*slot) {
	want := make([]int, len(gen))
	room := r.batch.Cap() - r.batch.Len()
	for i, s := range gen {
		s.spec.draft, s.spec.draftIdx = s.spec.draft[:0], s.spec.draftIdx[:0]
		want[i] = r.draftWant(s, len(gen), room)
		room -= want[i]
	}
	if r.draftCtx != nil {
		r.modelDrafts(gen, want)
	}
	for i, s := range gen {
		sp := &s.spec
		if want[i] == 0 {
			sp.draft = sp.draft[:0]
			continue
		}
		if r.draftCtx == nil || len(s.spans) > 0 {
			sp.draft = lookupDraft(sp.draft, s.prompt, s.generated, want[i], r.model.VocabSize())
		}
		for _, t := range sp.draft {
			sp.draftIdx = append(sp.draftIdx, r.batch.Add(t, len(s.cache), s.id, true))
			s.cache = append(s.cache, t)
		}
	}
}

// lookupDraft appends to dst up to k tokens that followed the latest
// earlier occurrence of the history's last n tokens (n from
// draftNgramMax down to draftNgramMin), history being prompt then
// generated; none when no suffix recurs or a token is not in the
// vocabulary (an image's placeholder).
func lookupDraft(dst []engine.Token, prompt, generated []engine.Token, k, nVocab int) []engine.Token {
	n := len(prompt) + len(generated)
	at := func(i int) engine.Token {
		if i < len(prompt) {
			return prompt[i]
		}
		return generated[i-len(prompt)]
	}
	lo := max(0, n-draftLookback)
	for g := min(draftNgramMax, n-1); g >= draftNgramMin; g-- {
		// the suffix is [n-g, n); look for it ending before n-1
		for end := n - 1; end-g >= lo; end-- {
			match := true
			for j := 1; j <= g; j++ {
				if at(end-j) != at(n-j) {
					match = false
					break
				}
			}
			if !match {
				continue
			}
			for i := end; i < n && len(dst) < k; i++ {
				t := at(i)
				if t < 0 || int(t) >= nVocab {
					break
				}
				dst = append(dst, t)
			}
			return dst
		}
	}
	return dst
}

// sampleSpec samples slot s's pending position and, while each sample is
// the slot's next draft (so that position already holds it), the draft
// positions after it; then drops from the KV and the cache what the
// drafts left past the accepted ones, and adapts the slot's drafting.
func (r *Runner) sampleSpec(s *slot) {
	sp := &s.spec
	base := len(s.cache) - len(sp.draft) // the drafts end the cache
	r.sample(s)
	accepted := 0
	for i, d := range sp.draft {
		if s.req == nil || !s.hasPending || s.pending != d {
			break
		}
		// The sampled token is the draft decoded at the next position:
		// it is in the KV already; the draft's logits give the next one.
		s.hasPending = false
		accepted++
		s.outIdx = sp.draftIdx[i]
		r.sample(s)
	}
	if len(sp.draft) == 0 {
		return
	}
	if keep := base + accepted; keep < len(s.cache) {
		r.ctx.SeqRemove(s.id, keep, -1)
		s.cache = s.cache[:keep]
		s.dropCheckpoints(keep)
		r.resetDraft(s, keep)
	}
	// The tokens after the first rejection tell nothing of α.
	tried := min(accepted+1, len(sp.draft))
	sp.proposed = sp.proposed*draftDecay + float64(tried)
	sp.accepted = sp.accepted*draftDecay + float64(accepted)
	r.specProposed = r.specProposed*draftDecay + float64(tried)
	r.specAccepted = r.specAccepted*draftDecay + float64(accepted)
	sp.totalProposed += len(sp.draft)
	sp.totalAccepted += accepted
	s.stats.DraftTokens, s.stats.DraftAccepted = sp.totalProposed, sp.totalAccepted
	sp.draft, sp.draftIdx = sp.draft[:0], sp.draftIdx[:0]
}

// draftLen is how many draft tokens pay for slot sp with n slots
// generating: the largest i with α^i > θ (see the package comment).
func (r *Runner) draftLen(sp *specState, n int) int {
	alpha := (sp.accepted + 1) / (sp.proposed + 2) // 0.5 before any draft
	// A margin over break-even: the fit and α are estimates, and a draft
	// that only breaks even slows every other slot's step for nothing.
	theta := min(1, draftMargin*r.cost.threshold(n, r.draftTokCost))
	k, p := 0, alpha
	for k < MaxDraft && p > theta {
		k++
		p *= alpha
	}
	return k
}

// stepCost fits decode steps' time to a + b·n for n tokens in the batch
// (least squares, past steps decayed by draftDecay), from steps without
// prompt tokens (all their tokens want logits, as drafts do).
type stepCost struct {
	s0, s1, s2, t0, t1 float64 // Σw, Σw·n, Σw·n², Σw·t, Σw·n·t
}

// observe adds a step of n tokens that took t seconds.
func (c *stepCost) observe(n int, t float64) {
	x := float64(n)
	c.s0 = c.s0*draftDecay + 1
	c.s1 = c.s1*draftDecay + x
	c.s2 = c.s2*draftDecay + x*x
	c.t0 = c.t0*draftDecay + t
	c.t1 = c.t1*draftDecay + x*t
}

// threshold is θ = (b + extra)·n / (a + b·n), extra being the seconds a
// draft token costs outside the step (the draft model's decode). Until
// steps of different sizes have been seen (b unknown), it assumes a
// token's compute is a 32nd of the weights' reading (a memory-bound CPU
// or GPU step) and nothing else, so that drafting starts and shows the
// rest.
func (c *stepCost) threshold(n int, extra float64) float64 {
	x := float64(max(n, 1))
	a, b := 32.0, 1.0
	if det := c.s0*c.s2 - c.s1*c.s1; c.s0 > 2 && det > 1e-9*c.s0*c.s2 {
		fb := (c.s0*c.t1 - c.s1*c.t0) / det
		fa := (c.t0 - fb*c.s1) / c.s0
		if fb >= 0 && fa > 0 {
			return (fb + max(extra, 0)) * x / (fa + fb*x)
		} else if fb >= 0 {
			return 1 // no fixed cost: every token costs its share; never draft
		}
	}
	return b * x / (a + b*x)
}
