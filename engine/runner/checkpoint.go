package runner

import (
	"log/slog"
)

// Checkpoints: the sequences of a model with recurrent layers or a
// sliding window (without a full-size window cache) cannot be cut back to
// any prefix, as prefix reuse and the prompt cache do: the recurrent
// state summarises the whole sequence, and a moving window has dropped
// the cells before it. A slot of such a model keeps checkpoints of those
// parts of its state (engine.Context.CheckpointState) at positions of its
// prompt, and goes back to the latest one at or before the prefix it
// keeps; without one it prefills from the start. Either way the answer is
// a cold prefill's. As llama-server does (--ctx-checkpoints,
// --checkpoint-min-step), a checkpoint is taken right before the prompt's
// last token (a request sent again, or continued, reuses all of its
// prompt but that token) and every checkpointStep tokens of a long
// prompt, at most maxCheckpoints a slot, the oldest out first.
const (
	checkpointStep = 8192
	maxCheckpoints = 32
)

// checkpoint is a copy of a slot's uncuttable state after its first n
// tokens.
type checkpoint struct {
	n    int
	data []byte
}

// checkpointBefore takes a checkpoint of slot s as its next prompt chunk
// starts, when the chunk holds the prompt's last token or the slot has
// come checkpointStep tokens past its last checkpoint.
func (r *Runner) checkpointBefore(s *slot) {
	n := len(s.cache)
	if !r.ckpt || n < MinCachedPrompt || s.spanAt(n) >= 0 {
		return
	}
	last := 0
	if k := len(s.ckpts); k > 0 {
		last = s.ckpts[k-1].n
		if last >= n {
			return
		}
	}
	if n != len(s.prompt)-1 && n < last+checkpointStep {
		return
	}
	data, err := r.ctx.CheckpointState(s.id)
	if err != nil {
		slog.Warn("context checkpoint failed", "slot", s.id, "tokens", n, "error", err)
		return
	}
	if len(s.ckpts) >= maxCheckpoints {
		s.ckpts = append(s.ckpts[:0], s.ckpts[1:]...)
	}
	s.ckpts = append(s.ckpts, checkpoint{n: n, data: data})
}

// chunkEnd is where slot s's next prompt chunk must end at the latest:
// right before the prompt's last token, so that a checkpoint can be taken
// there (checkpointBefore), when the slot keeps checkpoints.
func (r *Runner) chunkEnd(s *slot, end int) int {
	if r.ckpt && len(s.cache) < len(s.prompt)-1 && len(s.prompt)-1 >= MinCachedPrompt {
		return min(end, len(s.prompt)-1)
	}
	return end
}

// cutBack cuts slot s's sequence back to its first keep tokens, where the
// memory allows: directly when what the rest needs is still there, else
// through the latest checkpoint at or before keep. It returns how many
// tokens the sequence keeps (0: it was cleared), and drops the
// checkpoints past it.
func (r *Runner) cutBack(s *slot, keep int) int {
	if keep >= len(s.cache) {
		return keep
	}
	if keep > 0 && r.ctx.PrefixIntact(s.id, keep) && r.ctx.SeqRemove(s.id, keep, -1) {
		s.dropCheckpoints(keep)
		return keep
	}
	for i := len(s.ckpts) - 1; keep > 0 && i >= 0; i-- {
		c := s.ckpts[i]
		if c.n > keep {
			continue
		}
		if err := r.ctx.RestoreCheckpoint(s.id, c.data); err != nil {
			slog.Warn("context checkpoint could not be restored", "slot", s.id, "tokens", c.n, "error", err)
			break
		}
		if r.ctx.SeqRemove(s.id, c.n, -1) {
			s.dropCheckpoints(c.n)
			slog.Debug("context checkpoint restored", "slot", s.id, "tokens", c.n, "wanted", keep)
			return c.n
		}
		break
	}
	r.ctx.SeqRemove(s.id, -1, -1)
	s.ckpts = s.ckpts[:0]
	return 0
}

// dropCheckpoints forgets the checkpoints past n tokens.
func (s *slot) dropCheckpoints(n int) {
	k := len(s.ckpts)
	for k > 0 && s.ckpts[k-1].n > n {
		k--
	}
	s.ckpts = s.ckpts[:k]
}

// keepable is how much of slot s's first keep tokens cutBack would keep,
// without cutting.
func (r *Runner) keepable(s *slot, keep int) int {
	if !r.ckpt || keep == 0 || keep >= len(s.cache) || r.ctx.PrefixIntact(s.id, keep) {
		return keep
	}
	for i := len(s.ckpts) - 1; i >= 0; i-- {
		if s.ckpts[i].n <= keep {
			return s.ckpts[i].n
		}
	}
	return 0
}
