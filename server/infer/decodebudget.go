package infer

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
)

// DefaultMaxDecodeMemory is the default server-wide bound on the memory
// the media of the requests in flight may take while they are decoded
// and handed to the encoder (--max-image-decode-memory): 1 GiB.
const DefaultMaxDecodeMemory = 1 << 30

// DefaultMaxDecodeWaiters bounds the requests waiting for the decode
// budget when the scheduler's queue bound is not known.
const DefaultMaxDecodeWaiters = 512

var (
	errOverBudget  = errors.New("more than the whole budget")
	errBudgetQueue = errors.New("too many requests wait for the budget")
)

// DecodeBudget bounds the memory and CPU that decoding images takes over
// every request at once. A request takes the bytes its media need, as
// their headers declare them, before any is decoded, all at once (so that
// two requests can never each hold half of what they need), first come
// first served; it holds them until its media are in the encoder's hands.
// Decoders then run at most GOMAXPROCS at a time. A request that needs
// more than the whole budget, or that finds maxWaiters requests already
// waiting, is refused at once; one that waits does so until its context
// ends. Use NewDecodeBudget.
type DecodeBudget struct {
	limit      int64
	maxWaiters int
	cpu        chan struct{}

	mu         sync.Mutex
	used, peak int64
	queue      []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when the bytes are granted
}

// NewDecodeBudget is a budget of limit bytes (≤ 0:
// DefaultMaxDecodeMemory) with at most maxWaiters requests waiting (≤ 0:
// DefaultMaxDecodeWaiters).
func NewDecodeBudget(limit int64, maxWaiters int) *DecodeBudget {
	if limit <= 0 {
		limit = DefaultMaxDecodeMemory
	}
	if maxWaiters <= 0 {
		maxWaiters = DefaultMaxDecodeWaiters
	}
	return &DecodeBudget{limit: limit, maxWaiters: maxWaiters, cpu: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// Limit is the budget in bytes.
func (b *DecodeBudget) Limit() int64 { return b.limit }

// InUse is the bytes held now.
func (b *DecodeBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak is the most bytes ever held at once: never more than Limit.
func (b *DecodeBudget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// acquire takes n bytes, waiting behind earlier requests until they are
// free or ctx ends. The release it returns gives them back (once, however
// often it is called). Errors: errOverBudget (n > Limit), errBudgetQueue,
// or ctx's error.
func (b *DecodeBudget) acquire(ctx context.Context, n int64) (release func(), err error) {
	if n > b.limit {
		return nil, errOverBudget
	}
	b.mu.Lock()
	if len(b.queue) == 0 && b.used+n <= b.limit {
		b.take(n)
		b.mu.Unlock()
		return b.releaser(n), nil
	}
	if len(b.queue) >= b.maxWaiters {
		b.mu.Unlock()
		return nil, errBudgetQueue
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return b.releaser(n), nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	select {
	case <-w.ready: // granted as ctx ended: give it back
		b.used -= n
	default:
		b.queue = slices.DeleteFunc(b.queue, func(x *budgetWaiter) bool { return x == w })
	}
	b.grant() // the head may have changed
	b.mu.Unlock()
	return nil, ctx.Err()
}

// take counts n bytes held; b.mu is held.
func (b *DecodeBudget) take(n int64) {
	b.used += n
	b.peak = max(b.peak, b.used)
}

// grant hands their bytes to the waiters at the head of the queue that
// now fit, in order; b.mu is held.
func (b *DecodeBudget) grant() {
	for len(b.queue) > 0 && b.used+b.queue[0].n <= b.limit {
		w := b.queue[0]
		b.queue = b.queue[1:]
		b.take(w.n)
		close(w.ready)
	}
}

func (b *DecodeBudget) releaser(n int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.used -= n
			b.grant()
			b.mu.Unlock()
		})
	}
}

// decode runs f holding one of the GOMAXPROCS decoder places, waiting for
// one until ctx ends.
func (b *DecodeBudget) decode(ctx context.Context, f func()) error {
	select {
	case b.cpu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.cpu }()
	f()
	return nil
}
