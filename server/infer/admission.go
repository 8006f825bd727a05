package infer

import (
	"context"
	"sync"

	"github.com/tadpole-llm/tadpole/server/sched"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// Admission is decided here, for every dialect, at two points:
//
//   - Acquire: the request's API key must have a place among its
//     concurrent requests (usage.Streams, --max-streams). The place is held
//     until the instance is released: one per request, however many
//     generations (n choices) or texts it runs. A refusal is RateLimited
//     (429).
//   - Start: a place in the queue of requests waiting for a slot
//     (sched.Config.MaxQueue, over every model), taken before the request
//     is queued on the runner and given back when the runner admits it to
//     a slot (runner.Request.OnAdmit), so the bound holds exactly however
//     requests interleave. A refusal is Unavailable (503).
//
// Both counters are taken with one atomic operation each and given back
// on every path that does not hand the request on.

// enterKey takes a place among the concurrent requests of ctx's API key.
func enterKey(ctx context.Context) (leave func(), err error) {
	st := usage.StreamsFrom(ctx)
	leave, ok := st.Enter()
	if !ok {
		if c := usage.FromContext(ctx); c != nil {
			c.Limited()
		}
		return nil, Errorf(RateLimited, "too many concurrent requests: at most %d per key", st.Max())
	}
	return leave, nil
}

// admit takes a place in the queue of requests waiting for a slot, or
// reports that there is none. leave gives it back; it may be called more
// than once.
func (s *Service) admit() (leave func(), err error) {
	limit := int64(s.Sched.Config().MaxQueue)
	for {
		n := s.waiting.Load()
		if n >= limit {
			return nil, Errorf(Unavailable, "%v", sched.ErrQueueFull)
		}
		if s.waiting.CompareAndSwap(n, n+1) {
			break
		}
	}
	var once sync.Once
	return func() { once.Do(func() { s.waiting.Add(-1) }) }, nil
}
