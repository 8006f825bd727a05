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
// boilerplate accept many tokens; prose accepts few, so the drafting of a
// slot whose drafts keep failing backs off.

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
	// A slot whose last draftWindow drafted tokens were accepted less
	// than draftMinRate of the time stops drafting for draftBackoff steps.
	draftWindow  = 32
	draftMinRate = 0.25
	draftBackoff = 64
)

// specState is a slot's drafting state.
type specState struct {
	draft    []engine.Token // drafted this step
	draftIdx []int          // their batch indices
	base     int            // cache length before the drafts

	proposed, accepted int // in the current window
	pause              int // steps left without drafting

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

// addDraft drafts slot s's next tokens after its pending one (already in
// the batch at the end of s.cache) and adds them to the batch, within the
// slot's window and the batch's room.
func (r *Runner) addDraft(s *slot) {
	sp := &s.spec
	sp.draft, sp.draftIdx = sp.draft[:0], sp.draftIdx[:0]
	k := min(r.draftMax(), s.req.NumCtx-len(s.cache), r.batch.Cap()-r.batch.Len())
	if q := s.req; q.NumPredict > 0 {
		k = min(k, q.NumPredict-len(s.generated)-1)
	}
	if k < 1 {
		return
	}
	if sp.pause > 0 {
		sp.pause--
		return
	}
	sp.draft = lookupDraft(sp.draft, s.prompt, s.generated, k, r.model.VocabSize())
	sp.base = len(s.cache)
	for _, t := range sp.draft {
		sp.draftIdx = append(sp.draftIdx, r.batch.Add(t, len(s.cache), s.id, true))
		s.cache = append(s.cache, t)
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
	if keep := sp.base + accepted; keep < len(s.cache) {
		r.ctx.SeqRemove(s.id, keep, -1)
		s.cache = s.cache[:keep]
	}
	sp.proposed += len(sp.draft)
	sp.accepted += accepted
	sp.totalProposed += len(sp.draft)
	sp.totalAccepted += accepted
	s.stats.DraftTokens, s.stats.DraftAccepted = sp.totalProposed, sp.totalAccepted
	if sp.proposed >= draftWindow {
		if float64(sp.accepted) < draftMinRate*float64(sp.proposed) {
			sp.pause = draftBackoff
		}
		sp.proposed, sp.accepted = 0, 0
	}
	sp.draft, sp.draftIdx = sp.draft[:0], sp.draftIdx[:0]
}
