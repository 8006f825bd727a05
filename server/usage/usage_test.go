package usage

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

func TestTable(t *testing.T) {
	var tab Table
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := tab.For([]string{"b", "a"}[i%2])
			c.Request()
			AddTokens(NewContext(context.Background(), c), 3, 2)
			if i%10 == 0 {
				c.Limited()
			}
		}()
	}
	wg.Wait()
	AddTokens(context.Background(), 1, 1) // no counters: nothing
	got := fmt.Sprint(tab.Snapshot())
	if want := "[{a 25 0 75 50} {b 25 5 75 50}]"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	var r Reader = &tab
	if len(r.Snapshot()) != 2 || NewContext(context.Background(), nil) != context.Background() {
		t.Fatal("reader")
	}
}

// lossySink is a database at the boundary that adds a batch once per id,
// and whose first acknowledgement is lost: the batch is added, the
// caller sees an error (the connection dropped after the commit).
type lossySink struct {
	mu     sync.Mutex
	seen   map[string]bool
	calls  []string
	totals map[string]Snapshot
	lose   int
}

func (s *lossySink) AddUsage(_ context.Context, batch string, deltas []Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, batch+fmt.Sprint(deltas))
	if !s.seen[batch] {
		s.seen[batch] = true
		for _, d := range deltas {
			s.totals[d.Key] = add(s.totals[d.Key], d)
		}
	}
	if s.lose > 0 {
		s.lose--
		return fmt.Errorf("connection reset after the commit")
	}
	return nil
}

func (s *lossySink) UsageTotals(context.Context) ([]Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Snapshot
	for k, v := range s.totals {
		v.Key = k
		out = append(out, v)
	}
	return out, nil
}

// A flush whose acknowledgement was lost is retried as the same batch
// (same id, same counts, not what was counted since), so the shared
// totals count it once; what was counted meanwhile goes in the next one.
func TestFlushRetriesBatch(t *testing.T) {
	sink := &lossySink{seen: map[string]bool{}, totals: map[string]Snapshot{}, lose: 1}
	var tab Table
	tab.Share(sink)
	ctx := context.Background()
	tab.For("k").Request()
	tab.For("k").Tokens(10, 5)
	if err := tab.Flush(ctx); err == nil {
		t.Fatal("the lost acknowledgement was not reported")
	}
	tab.For("k").Request() // counted before the retry
	if got := fmt.Sprint(tab.Snapshot()); got != "[{k 2 0 10 5}]" {
		t.Fatalf("after a failed flush: %s", got)
	}
	for range 2 {
		if err := tab.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(sink.calls) != 3 || sink.calls[0] != sink.calls[1] || sink.calls[2] == sink.calls[1] {
		t.Fatalf("batches sent: %q, want the first twice, then the new count", sink.calls)
	}
	if got := fmt.Sprint(tab.Snapshot()); got != "[{k 2 0 10 5}]" {
		t.Fatalf("after the retry: %s, want each count once", got)
	}
	if err := tab.Flush(ctx); err != nil || len(sink.calls) != 3 {
		t.Fatalf("a flush with nothing new sent a batch: %v %q", err, sink.calls)
	}
}
