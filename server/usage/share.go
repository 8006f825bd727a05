package usage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
)

// Sink is where servers that serve the same keys pool their counts (the
// shared job database): AddUsage adds counts to the totals, once per
// batch id (a batch already added is not added again: a retry after an
// error that came after the commit, a lost acknowledgement, must not
// count twice); UsageTotals reads every key's totals.
type Sink interface {
	AddUsage(ctx context.Context, batch string, deltas []Snapshot) error
	UsageTotals(ctx context.Context) ([]Snapshot, error)
}

// batch is a flush the sink has not acknowledged: retried as it is, with
// its id, until it is.
type batch struct {
	id     string
	deltas []Snapshot
	now    []Snapshot // the local counts it brings the sink up to
}

// Share makes the table pool its counts in sink: Flush adds what was
// counted here since the last flush and reads the totals back, and
// Snapshot answers the totals plus what is not flushed yet. The counters
// themselves stay in memory, so counting never waits on the sink.
func (t *Table) Share(sink Sink) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sink = sink
}

// Flush adds this server's counts since the last Flush to the sink and
// reads every server's totals. A batch the sink did not acknowledge is
// sent again, the same batch under the same id, before anything counted
// since (the sink adds a batch once), so counts are neither lost nor
// added twice.
func (t *Table) Flush(ctx context.Context) error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	t.mu.Lock()
	sink := t.sink
	if sink == nil {
		t.mu.Unlock()
		return nil
	}
	b := t.pending
	if b == nil {
		now := t.localLocked()
		var deltas []Snapshot
		for _, c := range now {
			if d := sub(c, t.flushed[c.Key]); d != (Snapshot{Key: c.Key}) {
				deltas = append(deltas, d)
			}
		}
		if len(deltas) > 0 {
			if t.replica == "" {
				var r [8]byte
				rand.Read(r[:])
				t.replica = hex.EncodeToString(r[:])
			}
			t.batches++
			b = &batch{id: fmt.Sprintf("%s-%d", t.replica, t.batches), deltas: deltas, now: now}
			t.pending = b
		}
	}
	t.mu.Unlock()
	if b != nil {
		if err := sink.AddUsage(ctx, b.id, b.deltas); err != nil {
			return err
		}
		t.mu.Lock()
		t.pending = nil
		if t.flushed == nil {
			t.flushed = map[string]Snapshot{}
		}
		if t.totals == nil {
			t.totals = map[string]Snapshot{}
		}
		// The totals take the deltas at once: Snapshot neither counts
		// them twice nor loses them until the totals are read again.
		for _, c := range b.now {
			t.flushed[c.Key] = c
		}
		for _, d := range b.deltas {
			t.totals[d.Key] = add(t.totals[d.Key], d)
		}
		t.mu.Unlock()
	}
	all, err := sink.UsageTotals(ctx)
	if err != nil {
		return err
	}
	totals := make(map[string]Snapshot, len(all))
	for _, s := range all {
		totals[s.Key] = s
	}
	t.mu.Lock()
	t.totals = totals
	t.mu.Unlock()
	return nil
}

// sharedLocked is the totals plus this server's counts not yet flushed,
// sorted by key id.
func (t *Table) sharedLocked() []Snapshot {
	m := make(map[string]Snapshot, len(t.totals)+len(t.m))
	for k, s := range t.totals {
		m[k] = s
	}
	for _, c := range t.localLocked() {
		m[c.Key] = add(m[c.Key], sub(c, t.flushed[c.Key]))
	}
	out := make([]Snapshot, 0, len(m))
	for k, s := range m {
		s.Key = k
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func add(a, b Snapshot) Snapshot {
	return Snapshot{Key: b.Key, Requests: a.Requests + b.Requests, RateLimited: a.RateLimited + b.RateLimited,
		TokensIn: a.TokensIn + b.TokensIn, TokensOut: a.TokensOut + b.TokensOut}
}

func sub(a, b Snapshot) Snapshot {
	return Snapshot{Key: a.Key, Requests: a.Requests - b.Requests, RateLimited: a.RateLimited - b.RateLimited,
		TokensIn: a.TokensIn - b.TokensIn, TokensOut: a.TokensOut - b.TokensOut}
}
