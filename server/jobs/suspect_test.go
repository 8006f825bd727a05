package jobs

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
)

// die ends s as a death of its process would: the jobs it claimed stay
// running, no outcome written, nothing handed back (with PostgreSQL
// their leases run out).
func die(s *Store) { s.Close() }

// claimAfterDeath claims the next job once the dead server's claim on
// it has lapsed (at once with SQLite, after the lease with PostgreSQL).
func claimAfterDeath(t *testing.T, s *Store) (*Job, string) {
	t.Helper()
	var j *Job
	var token string
	testkit.Eventually(t, 30*time.Second, "the dead server's job to be claimed again", func() bool {
		j, token = s.claim()
		return j != nil
	})
	return j, token
}

// A job that was running when the server died is run again, but alone:
// no other job starts between its start and its end, although three
// workers and two other jobs wait. It completes on its second attempt.
func TestSuspectJobRunsAlone(t *testing.T) { each(t, testSuspectJobRunsAlone) }

func testSuspectJobRunsAlone(t *testing.T, cfg Config) {
	cfg.Lease = 300 * time.Millisecond
	ctx := context.Background()
	a := openCfg(t, cfg)
	p, _ := a.Submit(ctx, "x", "", []byte("poison"))
	if j, _ := a.claim(); j == nil || j.ID != p.ID {
		t.Fatalf("claim: %+v", j)
	}
	die(a)

	b := openCfg(t, cfg)
	defer b.Close()
	n1, _ := b.Submit(ctx, "x", "", []byte("n1"))
	n2, _ := b.Submit(ctx, "x", "", []byte("n2"))
	var mu sync.Mutex
	var events []string
	pStarted, releaseP := make(chan struct{}), make(chan struct{})
	b.Start(3, func(ctx context.Context, j *Job) ([]byte, error) {
		name := string(j.Request)
		mu.Lock()
		events = append(events, "start "+name)
		mu.Unlock()
		if name == "poison" {
			close(pStarted)
			select {
			case <-releaseP:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		mu.Lock()
		events = append(events, "end "+name)
		mu.Unlock()
		return []byte("ok"), nil
	})
	select {
	case <-pStarted:
	case <-time.After(30 * time.Second):
		t.Fatal("the suspect job did not run")
	}
	// Give the idle workers every chance to start another job beside
	// it: a new submission wakes them, and they poll.
	n3, _ := b.Submit(ctx, "x", "", []byte("n3"))
	time.Sleep(500 * time.Millisecond)
	close(releaseP)
	done := waitState(t, b, p.ID, Completed)
	for _, id := range []string{n1.ID, n2.ID, n3.ID} {
		waitState(t, b, id, Completed)
	}
	if done.Attempts != 2 {
		t.Errorf("the suspect job completed on attempt %d, want 2", done.Attempts)
	}
	mu.Lock()
	defer mu.Unlock()
	in := false
	for _, ev := range events {
		switch {
		case ev == "start poison":
			in = true
		case ev == "end poison":
			in = false
		case in:
			t.Errorf("%q while the suspect job ran: %v", ev, events)
		}
	}
}

// The server dies running a job, and dies again running it alone: the
// job fails with the reason and is not run a third time; the job behind
// it runs.
func TestSuspectJobFailsAfterSecondDeath(t *testing.T) { each(t, testSuspectJobFailsAfterSecondDeath) }

func testSuspectJobFailsAfterSecondDeath(t *testing.T, cfg Config) {
	cfg.Lease = 300 * time.Millisecond
	ctx := context.Background()
	a := openCfg(t, cfg)
	p, _ := a.Submit(ctx, "x", "", []byte("poison"))
	a.claim()
	die(a)

	b := openCfg(t, cfg)
	if got, _ := b.Get(ctx, p.ID); got.State.Finished() {
		t.Fatalf("after the first death: %+v", got)
	}
	if j, _ := claimAfterDeath(t, b); j.ID != p.ID || j.Attempts != 2 || !suspect(j) {
		t.Fatalf("second claim: %+v", j)
	}
	next, _ := b.Submit(ctx, "x", "", []byte("next"))
	die(b)

	c := openCfg(t, cfg)
	defer c.Close()
	// Claim until the twice-killed job has failed (at once with SQLite;
	// with PostgreSQL a claim fails it once its lease has run out by a
	// whole lease more; meanwhile the job behind it, claimed and not
	// renewed here, may be claimed again as its own lease runs out).
	var claimed []string
	var got *Job
	testkit.Eventually(t, 30*time.Second, "the twice-killed job to fail", func() bool {
		if j, _ := c.claim(); j != nil && !slices.Contains(claimed, j.ID) {
			claimed = append(claimed, j.ID)
		}
		got, _ = c.Get(ctx, p.ID)
		return got.State == Failed
	})
	if len(claimed) != 1 || claimed[0] != next.ID {
		t.Fatalf("claimed %v, want only the job behind the twice-killed one (%s)", claimed, next.ID)
	}
	const why = "the server died twice while running this job; it is not run again, as it may be what kills the server"
	if got.State != Failed || got.Error != why || got.Attempts != 2 || got.FinishedAt.IsZero() {
		t.Fatalf("after the second death: %+v", got)
	}
	if !strings.Contains(got.Error, "died twice") {
		t.Fatal(got.Error)
	}
}

// With PostgreSQL a lapsed lease is the only sign of a death, and a live
// server's renewals may lag on a busy machine: a job at its last attempt
// whose lease has just run out is neither failed nor taken over; only
// once it has run out by a whole lease more does it fail.
func TestLaggingLeaseIsNotASecondDeath(t *testing.T) {
	cfg := pgConfig(t)
	cfg.Lease = 500 * time.Millisecond
	ctx := context.Background()
	a := openCfg(t, cfg)
	p, _ := a.Submit(ctx, "x", "", []byte("poison"))
	a.claim()
	die(a)
	b := openCfg(t, cfg)
	defer b.Close()
	if j, _ := claimAfterDeath(t, b); j.ID != p.ID || j.Attempts != 2 {
		t.Fatalf("second claim: %+v", j)
	}
	// b runs it (alive) but does not renew: its lease runs out.
	time.Sleep(cfg.Lease + 100*time.Millisecond)
	c := openCfg(t, cfg)
	defer c.Close()
	if j, _ := c.claim(); j != nil {
		t.Fatalf("a job at its last attempt was taken over as its lease lapsed: %+v", j)
	}
	if got, _ := c.Get(ctx, p.ID); got.State != Running {
		t.Fatalf("lease lapsed by less than a lease: %+v", got)
	}
	// Past the grace: it fails, as a second death.
	time.Sleep(cfg.Lease)
	if j, _ := c.claim(); j != nil {
		t.Fatalf("claimed %+v", j)
	}
	if got, _ := c.Get(ctx, p.ID); got.State != Failed || !strings.Contains(got.Error, "died twice") {
		t.Fatalf("lease lapsed by more than a lease: %+v", got)
	}
}
