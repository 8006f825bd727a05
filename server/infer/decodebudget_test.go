package infer

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// waiters is the number of requests queued on b.
func (b *DecodeBudget) waiters() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// waitQueued yields until n requests are queued on b.
func waitQueued(b *DecodeBudget, n int) {
	for b.waiters() != n {
		runtime.Gosched()
	}
}

// The budget grants all or nothing, first come first served; a request
// over the whole budget or beyond the waiting bound is refused at once; a
// waiter whose context ends leaves the queue; the peak never passes the
// limit.
func TestDecodeBudget(t *testing.T) {
	b := NewDecodeBudget(100, 1)
	if _, err := b.acquire(context.Background(), 101); !errors.Is(err, errOverBudget) {
		t.Fatalf("over the budget: %v", err)
	}
	rel60, err := b.acquire(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	// 50 does not fit beside 60: it waits, and 30, which would fit,
	// waits behind it (first come, first served): the queue bound (1)
	// refuses it at once.
	got := make(chan error, 1)
	var rel50 func()
	go func() {
		var err error
		rel50, err = b.acquire(context.Background(), 50)
		got <- err
	}()
	waitQueued(b, 1)
	if _, err := b.acquire(context.Background(), 30); !errors.Is(err, errBudgetQueue) {
		t.Fatalf("beyond the waiting bound: %v", err)
	}
	rel60()
	rel60() // a second release gives nothing back twice
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if u := b.InUse(); u != 50 {
		t.Fatalf("in use %d, want 50", u)
	}

	// A waiter whose context ends leaves the queue and holds nothing.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := b.acquire(ctx, 60)
		got <- err
	}()
	waitQueued(b, 1)
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	if n, u := b.waiters(), b.InUse(); n != 0 || u != 50 {
		t.Fatalf("after the cancel: %d waiting, %d in use", n, u)
	}
	rel50()
	if u, p := b.InUse(), b.Peak(); u != 0 || p != 60 {
		t.Errorf("in use %d, peak %d: want 0 and 60", u, p)
	}
}
