package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/tadpole-llm/tadpole/engine"
)

// EmbedSeqs bounds the sequences of one embedding decode (the embedding
// context's n_seq_max): queued embedding requests share a decode up to
// this many texts and the context's batch limit.
const EmbedSeqs = 16

// embedSeqs is the embedding context's n_seq_max for a context of n
// tokens: the largest divisor of n up to EmbedSeqs. llama.cpp reserves
// the pooled graph with the micro-batch split evenly over n_seq_max
// sequences and aborts (ggml_can_mul_mat) when it does not divide, e.g.
// n_ctx 100 with 16 sequences.
func embedSeqs(n int) int {
	for s := min(EmbedSeqs, n); s > 1; s-- {
		if n%s == 0 {
			return s
		}
	}
	return 1
}

// embedJob is one queued embedding request.
type embedJob struct {
	ctx      context.Context
	prompts  [][]engine.Token
	window   int
	truncate bool
	checked  bool // prompts cut or refused against the context's limit
	next     int  // first prompt not yet decoded
	out      [][]float32
	// rank scores each prompt (a query/document pair) with the model's
	// classifier head into scores instead of embedding it into out.
	rank   bool
	scores []float32
	tokens int
	done   chan error // capacity 1: the loop never blocks on it
}

// EmbedParams are the embedding context's parameters for a runner
// configuration: one context of NumCtx tokens shared (unified KV) by up
// to EmbedSeqs sequences (embedSeqs), each decode one micro-batch (llama.cpp asserts
// n_tokens <= n_ubatch without causal attention). The scheduler's memory
// estimate sizes the same context.
func EmbedParams(cfg Config) engine.ContextParams {
	return engine.ContextParams{
		NumCtx: cfg.NumCtx, NumBatch: cfg.NumCtx, NumUBatch: cfg.NumCtx,
		NumSeqMax: embedSeqs(cfg.NumCtx), KVUnified: true,
		Threads: cfg.Threads, Embeddings: true,
	}
}

// ErrReranker is the error of Embed on a reranker.
var ErrReranker = errors.New("the model is a reranker: it scores query/document pairs (/v1/rerank, /api/rerank) and has no embeddings")

// Embed returns the pooled, normalised embedding of each tokenized text
// and the number of tokens evaluated. The runner's loop serves it between
// decode steps on a second context of the model (made on first use, freed
// by Close); several queued requests may share one decode. A text longer
// than window tokens (0: the runner's NumCtx; never more than the
// embedding context's real batch size, which llama.cpp asserts on) is cut
// to fit when truncate is set, else it is an error. A reranker has no
// embeddings (ErrReranker). Cancelling ctx
// returns ctx's error at once and drops the request from the queue.
func (r *Runner) Embed(ctx context.Context, prompts [][]engine.Token, window int, truncate bool) ([][]float32, int, error) {
	if r.model.IsReranker() {
		// Its pooled output is the classifier head's score, not an
		// embedding (llama-server refuses it too).
		return nil, 0, ErrReranker
	}
	if err := r.checkTokens(prompts, "input"); err != nil {
		return nil, 0, err
	}
	if len(prompts) == 0 {
		return nil, 0, nil
	}
	j := &embedJob{ctx: ctx, prompts: prompts, window: window, truncate: truncate,
		out: make([][]float32, len(prompts)), done: make(chan error, 1)}
	if err := r.runEmbed(j); err != nil {
		return nil, 0, err
	}
	return j.out, j.tokens, nil
}

// checkTokens refuses token ids outside the vocabulary (they would index
// past the embedding matrix).
func (r *Runner) checkTokens(prompts [][]engine.Token, what string) error {
	for i, p := range prompts {
		for _, t := range p {
			if t < 0 || int(t) >= r.model.VocabSize() {
				return fmt.Errorf("%s %d: token %d is not in the vocabulary (0..%d)", what, i, t, r.model.VocabSize()-1)
			}
		}
	}
	return nil
}

// runEmbed queues an embedding or rank job and waits for it.
func (r *Runner) runEmbed(j *embedJob) error {
	ctx := j.ctx
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	r.embeds = append(r.embeds, j)
	r.mu.Unlock()
	r.signal()
	select {
	case err := <-j.done:
		return err
	case <-ctx.Done():
		r.signal() // the loop drops it
		return ctx.Err()
	}
}

// EmbedsWaiting is the number of embedding requests queued or running.
func (r *Runner) EmbedsWaiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.embeds)
}

// embedLimit is the most tokens of one text, and of one decode.
func (r *Runner) embedLimit() int {
	return min(r.embedCtx.NumCtx(), r.embedCtx.MaxBatchTokens())
}

// embedStep runs one embedding decode over the queued requests, oldest
// first, and reports whether any were queued.
func (r *Runner) embedStep() bool {
	r.mu.Lock()
	var gone []*embedJob
	kept := r.embeds[:0]
	for _, j := range r.embeds {
		if j.ctx.Err() != nil {
			gone = append(gone, j)
		} else {
			kept = append(kept, j)
		}
	}
	r.embeds = kept
	jobs := append([]*embedJob(nil), kept...)
	r.mu.Unlock()
	for _, j := range gone {
		j.done <- j.ctx.Err()
	}
	if len(jobs) == 0 {
		return len(gone) > 0
	}
	if r.embedCtx == nil {
		ctx, err := r.model.NewContext(EmbedParams(r.cfg))
		if err == nil {
			var b *engine.Batch
			if b, err = engine.NewBatch(min(ctx.NumCtx(), ctx.MaxBatchTokens())); err != nil {
				ctx.Close()
			} else {
				r.embedCtx, r.embedBatch = ctx, b
			}
		}
		if err != nil {
			r.endEmbeds(jobs, err)
			return true
		}
	}
	limit := r.embedLimit()
	var ready []*embedJob
	for _, j := range jobs {
		if err := r.checkEmbed(j, limit); err != nil {
			r.endEmbeds([]*embedJob{j}, err)
		} else {
			ready = append(ready, j)
		}
	}
	// Pack whole texts into one batch: each its own sequence.
	type part struct {
		j   *embedJob
		i   int
		seq int
	}
	b := r.embedBatch
	b.Clear()
	var parts []part
	var used []*embedJob
pack:
	for _, j := range ready {
		added := false
		for j.next < len(j.prompts) {
			toks := j.prompts[j.next]
			if len(parts) == r.embedCtx.NumSeqMax() || b.Len()+len(toks) > limit {
				if added {
					used = append(used, j)
				}
				break pack
			}
			seq := len(parts)
			for p, t := range toks {
				b.Add(t, p, seq, true)
			}
			parts = append(parts, part{j, j.next, seq})
			j.next++
			added = true
		}
		if added {
			used = append(used, j)
		}
	}
	if len(parts) == 0 {
		return true
	}
	r.embedCtx.ClearMemory()
	if err := r.embedCtx.Decode(b); err != nil {
		r.endEmbeds(used, err)
		return true
	}
	failed := map[*embedJob]error{}
	for _, p := range parts {
		if failed[p.j] != nil {
			continue
		}
		if p.j.rank {
			score, err := r.embedCtx.RankScore(p.seq)
			if err != nil {
				failed[p.j] = err
				continue
			}
			p.j.scores[p.i] = score
		} else {
			e, err := r.embedCtx.Embeddings(p.seq)
			if err != nil {
				failed[p.j] = err
				continue
			}
			p.j.out[p.i] = e
		}
		p.j.tokens += len(p.j.prompts[p.i])
	}
	var finished []*embedJob
	for _, j := range used {
		if err := failed[j]; err != nil {
			r.endEmbeds([]*embedJob{j}, err)
		} else if j.next == len(j.prompts) {
			finished = append(finished, j)
		}
	}
	r.endEmbeds(finished, nil)
	return true
}

// checkEmbed cuts or refuses, once, the request's texts that exceed its
// window (at most limit).
func (r *Runner) checkEmbed(j *embedJob, limit int) error {
	if j.checked {
		return nil
	}
	if j.window > 0 {
		limit = min(limit, j.window)
	}
	what := "input %d has"
	if j.rank {
		what = "document %d: the query and document have"
	}
	for i, toks := range j.prompts {
		if len(toks) > limit {
			if !j.truncate {
				return fmt.Errorf(what+" %d tokens, more than the context of %d", i, len(toks), limit)
			}
			j.prompts[i] = toks[:limit]
		}
		if len(j.prompts[i]) == 0 {
			if j.rank {
				return fmt.Errorf("document %d: the pair has no tokens", i)
			}
			return fmt.Errorf("input %d is empty", i)
		}
	}
	j.checked = true
	return nil
}

// endEmbeds removes requests from the queue and answers them.
func (r *Runner) endEmbeds(jobs []*embedJob, err error) {
	if len(jobs) == 0 {
		return
	}
	r.mu.Lock()
	kept := r.embeds[:0]
	for _, q := range r.embeds {
		drop := false
		for _, j := range jobs {
			drop = drop || q == j
		}
		if !drop {
			kept = append(kept, q)
		}
	}
	r.embeds = kept
	r.mu.Unlock()
	for _, j := range jobs {
		j.done <- err
	}
}

// closeEmbeds ends the queued embedding requests and frees the context.
func (r *Runner) closeEmbeds() {
	r.mu.Lock()
	jobs := r.embeds
	r.embeds = nil
	r.mu.Unlock()
	for _, j := range jobs {
		j.done <- ErrClosed
	}
	if r.embedBatch != nil {
		r.embedBatch.Close()
	}
	if r.embedCtx != nil {
		r.embedCtx.Close()
	}
	r.embedCtx, r.embedBatch = nil, nil
}
