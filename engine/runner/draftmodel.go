package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

// Drafting with a draft model (Config.Draft): a smaller model of the same
// vocabulary proposes the next tokens, greedily, instead of prompt lookup;
// they are verified as prompt lookup's are (speculate.go), so the output
// is the target's whatever the draft says. The draft model keeps a
// context of its own with a sequence per slot, which mirrors the first
// draftN tokens of the slot's cache: before drafting, a slot's missing
// tokens (its prompt the first time, then the tokens the target accepted)
// are decoded into it, all drafting slots in one batch; then each further
// draft token is one batched decode of the draft model.

// CheckDraftVocab reports whether draft can draft for target: the same
// vocabulary, token for token.
func CheckDraftVocab(target, draft *engine.Model) error {
	if nt, nd := target.VocabSize(), draft.VocabSize(); nt != nd {
		return fmt.Errorf("its vocabulary has %d tokens, the model's %d", nd, nt)
	}
	for t := range target.VocabSize() {
		a, b := string(target.TokenPiece(engine.Token(t), true)), string(draft.TokenPiece(engine.Token(t), true))
		if a != b {
			return fmt.Errorf("token %d is %q in it and %q in the model", t, b, a)
		}
	}
	return nil
}

// newDraftContext makes the draft model's context: a sequence per slot of
// the runner's window, on one thread, the loop's: a second pool of worker
// threads would spin against the model's own between their steps (ggml's
// workers poll for work), and the draft model is small (measured with
// the runner's threads: 14 ms per drafted token of a 4 MB model).
func (r *Runner) newDraftContext() error {
	if err := CheckDraftVocab(r.model, r.cfg.Draft); err != nil {
		return fmt.Errorf("draft model: %w", err)
	}
	if r.cfg.Draft.Recurrent() {
		return errors.New("draft model: it has recurrent layers, whose state cannot roll back a rejected draft")
	}
	// A sliding-window draft rolls back past cells a moving window would
	// have dropped: a full-size window cache (as the target's, runner.New).
	ctx, err := r.cfg.Draft.NewContext(engine.ContextParams{
		NumCtx: r.cfg.Parallel * r.cfg.NumCtx, NumSeqMax: r.cfg.Parallel, NumBatch: r.cfg.NumBatch,
		Threads: 1, FlashAttn: r.cfg.FlashAttn, KVType: r.cfg.KVType, SWAFull: r.cfg.Draft.SlidingWindow() > 0,
	})
	if err != nil {
		return fmt.Errorf("draft model: %w", err)
	}
	b, err := engine.NewBatch(min(r.cfg.NumBatch, ctx.NumBatch()))
	if err != nil {
		ctx.Close()
		return fmt.Errorf("draft model: %w", err)
	}
	r.draftCtx, r.draftBatch = ctx, b
	return nil
}

func (r *Runner) closeDraft() {
	if r.draftCtx != nil {
		r.draftBatch.Close()
		r.draftCtx.Close()
	}
}

// resetDraft drops slot s's draft sequence past n tokens (all of it for
// n 0): what the slot's cache no longer shares with it.
func (r *Runner) resetDraft(s *slot, n int) {
	if r.draftCtx == nil || s.draftN <= n {
		return
	}
	if !r.draftCtx.SeqRemove(s.id, n, -1) {
		r.draftCtx.SeqRemove(s.id, -1, -1)
		n = 0
	}
	s.draftN = n
}

// modelDrafts drafts up to want[i] tokens for each slot gen[i] with the
// draft model into its spec.draft (only slots with want > 0 and no
// embeddings: the draft model cannot read an image). On a failed decode
// the slots draft nothing this step and their draft sequences start over.
func (r *Runner) modelDrafts(gen []*slot, want []int) {
	var act []*slot
	var k []int
	for i, s := range gen {
		if want[i] > 0 && len(s.spans) == 0 {
			act, k = append(act, s), append(k, want[i])
		}
	}
	if len(act) == 0 {
		return
	}
	t0 := time.Now()
	defer func() {
		drafted := 0
		for _, s := range act {
			drafted += len(s.spec.draft)
		}
		if drafted > 0 {
			c := time.Since(t0).Seconds() / float64(drafted)
			if r.draftTokCost == 0 {
				r.draftTokCost = c
			} else {
				r.draftTokCost = r.draftTokCost*draftDecay + c*(1-draftDecay)
			}
		}
	}()
	b := r.draftBatch
	fail := func(err error) {
		slog.Warn("draft model: decode failed; drafting starts over", "error", err)
		for _, s := range act {
			r.resetDraft(s, 0)
			s.spec.draft = s.spec.draft[:0]
		}
	}
	// Catch up: every token of the slots' caches the draft has not seen,
	// in batches; the last one of each wants logits.
	last := make([]int, len(act))
	for {
		b.Clear()
		for i, s := range act {
			last[i] = -1
			for s.draftN < len(s.cache) && b.Len() < b.Cap() {
				idx := b.Add(s.cache[s.draftN], s.draftN, s.id, s.draftN == len(s.cache)-1)
				if s.draftN == len(s.cache)-1 {
					last[i] = idx
				}
				s.draftN++
			}
		}
		if b.Len() == 0 {
			break
		}
		if err := r.draftCtx.Decode(b); err != nil {
			fail(err)
			return
		}
		done := true
		for _, s := range act {
			done = done && s.draftN == len(s.cache)
		}
		if done {
			break
		}
	}
	// Draft: one token per slot per decode, greedy.
	nv := r.model.VocabSize()
	for j := 0; ; j++ {
		b.Clear()
		for i, s := range act {
			if last[i] < 0 || len(s.spec.draft) >= k[i] {
				last[i] = -1
				continue
			}
			t := argmaxAllowed(r.draftCtx.Logits(last[i]), s.req.Sampling.LogitBias)
			if t < 0 || int(t) >= nv {
				last[i] = -1
				continue
			}
			s.spec.draft = append(s.spec.draft, t)
			if len(s.spec.draft) < k[i] {
				last[i] = b.Add(t, len(s.cache)+j, s.id, true)
			} else {
				last[i] = -1
			}
		}
		if b.Len() == 0 {
			break
		}
		if err := r.draftCtx.Decode(b); err != nil {
			fail(err)
			return
		}
		for i, s := range act {
			if last[i] >= 0 {
				s.draftN = len(s.cache) + j + 1
			}
		}
	}
}

// argmaxAllowed is the index of the largest value that the request's
// logit bias does not ban (-inf: the sampler never picks it, so drafting
// it would be wasted), -1 for none.
func argmaxAllowed(xs []float32, bias map[engine.Token]float32) engine.Token {
	best := -1
	for i, x := range xs {
		if best >= 0 && x <= xs[best] {
			continue
		}
		if b, ok := bias[engine.Token(i)]; ok && math.IsInf(float64(b), -1) {
			continue // looked up only for a new maximum: rarely
		}
		best = i
	}
	return engine.Token(best)
}
