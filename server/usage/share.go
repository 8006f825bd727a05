package usage

import (
	"context"
	"sort"
)

// Sink is where servers that serve the same keys pool their counts (the
// shared job database): AddUsage adds counts to the totals, UsageTotals
// reads every key's totals.
type Sink interface {
	AddUsage(ctx context.Context, deltas []Snapshot) error
	UsageTotals(ctx context.Context) ([]Snapshot, error)
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
// reads every server's totals. Counts the sink did not take stay for the
// next Flush.
func (t *Table) Flush(ctx context.Context) error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	t.mu.Lock()
	sink := t.sink
	now := t.localLocked()
	var deltas []Snapshot
	for _, c := range now {
		if d := sub(c, t.flushed[c.Key]); d != (Snapshot{Key: c.Key}) {
			deltas = append(deltas, d)
		}
	}
	t.mu.Unlock()
	if sink == nil {
		return nil
	}
	if len(deltas) > 0 {
		if err := sink.AddUsage(ctx, deltas); err != nil {
			return err
		}
		t.mu.Lock()
		if t.flushed == nil {
			t.flushed = map[string]Snapshot{}
		}
		if t.totals == nil {
			t.totals = map[string]Snapshot{}
		}
		// The totals take the deltas at once: Snapshot neither counts
		// them twice nor loses them until the totals are read again.
		for _, c := range now {
			t.flushed[c.Key] = c
		}
		for _, d := range deltas {
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
