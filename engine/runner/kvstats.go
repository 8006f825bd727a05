package runner

import "context"

// KVCells is how a runner's KV cache is used, in cells (one cell holds
// one token's keys and values in every layer).
type KVCells struct {
	// Used are the cells of the slots running a request: their prompt
	// and what they generated so far, cached prefix included.
	Used int
	// Cached are the cells idle slots keep for prefix reuse. The next
	// request that gets such a slot overwrites what it does not share,
	// so they are free for routing purposes (as vLLM counts its prefix
	// cache's evictable blocks as free).
	Cached int
	// Total is the cells of the context: slots × per-slot context.
	Total int
}

// Usage is Used / Total, from 0 to 1 (the KV-cache utilization of the
// Gateway API Inference Extension's model-server protocol).
func (k KVCells) Usage() float64 {
	if k.Total <= 0 {
		return 0
	}
	return float64(k.Used) / float64(k.Total)
}

// KVCells reports the KV cells in use. The slots' caches belong to the
// loop, which changes them between steps without the runner's lock, so
// they are read on the loop itself (Do): the answer waits for the step in
// progress, and ctx bounds that wait (a prefill step of a large batch on
// a CPU can take seconds; a caller such as a metrics scrape should keep
// its last answer when ctx ends first). On a closed runner it returns
// ErrClosed.
func (r *Runner) KVCells(ctx context.Context) (KVCells, error) {
	var k KVCells
	err := r.Do(ctx, func() {
		k.Total = r.cfg.Parallel * r.cfg.NumCtx
		for _, s := range r.slots {
			// s.req is written under r.mu by admit and finish, which
			// both run on the loop, as this function does.
			if s.req != nil {
				k.Used += len(s.cache)
			} else {
				k.Cached += len(s.cache)
			}
		}
	})
	return k, err
}
