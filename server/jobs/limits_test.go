package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// A run past the deadline is stopped (its context ends) and the job fails
// with "deadline exceeded"; the worker then runs the next job.
func TestDeadline(t *testing.T) { each(t, testDeadline) }

func testDeadline(t *testing.T, cfg Config) {
	cfg.Deadline = 50 * time.Millisecond
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	slow, _ := s.Submit(ctx, "echo", "", []byte("slow"))
	quick, _ := s.Submit(ctx, "echo", "", []byte("quick"))
	stopped := make(chan error, 1)
	s.Start(1, func(ctx context.Context, j *Job) ([]byte, error) {
		if string(j.Request) == "slow" {
			<-ctx.Done() // runs until stopped
			stopped <- ctx.Err()
			return nil, ctx.Err()
		}
		return j.Request, nil
	})
	j := waitState(t, s, slow.ID, Failed)
	if !strings.HasPrefix(j.Error, "deadline exceeded") || !strings.Contains(j.Error, "50ms") || j.FinishedAt.IsZero() {
		t.Fatalf("overdue job: %+v", j)
	}
	if err := <-stopped; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the run ended with %v", err)
	}
	if j := waitState(t, s, quick.ID, Completed); string(j.Result) != "quick" {
		t.Fatalf("next job: %+v", j)
	}
}

// A cancelled job stays cancelled, not "deadline exceeded", and a job
// that finishes in time completes: the deadline only fails overdue runs.
func TestDeadlineOnlyOverdue(t *testing.T) { each(t, testDeadlineOnlyOverdue) }

func testDeadlineOnlyOverdue(t *testing.T, cfg Config) {
	cfg.Deadline = time.Hour
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	running := make(chan struct{})
	j, _ := s.Submit(ctx, "echo", "", []byte("wait"))
	s.Start(1, func(ctx context.Context, j *Job) ([]byte, error) {
		if string(j.Request) == "wait" {
			close(running)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return j.Request, nil
	})
	<-running
	if _, err := s.Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	ok, _ := s.Submit(ctx, "echo", "", []byte("ok"))
	waitState(t, s, ok.ID, Completed)
	if got, _ := s.Get(ctx, j.ID); got.State != Cancelled || got.Error != "cancelled" {
		t.Fatalf("cancelled job: %+v", got)
	}
}

// Each owner may have MaxQueuedPerOwner jobs queued; more are refused
// with ErrQuota, even when submitted at once, and other owners are not
// affected. Jobs leaving the queue make room again.
func TestQueueQuota(t *testing.T) { each(t, testQueueQuota) }

func testQueueQuota(t *testing.T, cfg Config) {
	const quota = 3
	cfg.MaxQueuedPerOwner = quota
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, refused := 0, 0
	for i := range 10 {
		wg.Go(func() {
			_, err := s.Submit(ctx, "echo", "alice", []byte(fmt.Sprint(i)))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted++
			case errors.Is(err, ErrQuota) && strings.Contains(err.Error(), "at most 3"):
				refused++
			default:
				t.Errorf("submit: %v", err)
			}
		})
	}
	wg.Wait()
	if accepted != quota || refused != 10-quota {
		t.Fatalf("%d accepted, %d refused", accepted, refused)
	}
	for _, owner := range []string{"bob", ""} {
		if _, err := s.Submit(ctx, "echo", owner, nil); err != nil {
			t.Fatalf("owner %q: %v", owner, err)
		}
	}
	// Running the queue frees alice's quota.
	release := make(chan struct{})
	s.Start(1, func(ctx context.Context, j *Job) ([]byte, error) {
		if string(j.Request) == "block" {
			<-release
		}
		return nil, nil
	})
	page, _, _ := s.List(ctx, Query{Owner: "alice"})
	for _, j := range page {
		waitState(t, s, j.ID, Completed)
	}
	var ids []string
	for range quota {
		j, err := s.Submit(ctx, "echo", "alice", []byte("block"))
		if err != nil {
			t.Fatalf("after the queue ran: %v", err)
		}
		ids = append(ids, j.ID)
	}
	// One of the three runs (blocked), two wait: one more fits.
	waitState(t, s, ids[0], Running)
	if _, err := s.Submit(ctx, "echo", "alice", []byte("block")); err != nil {
		t.Fatalf("with one running: %v", err)
	}
	if _, err := s.Submit(ctx, "echo", "alice", nil); !errors.Is(err, ErrQuota) {
		t.Fatalf("over the quota: %v", err)
	}
	close(release)
}
