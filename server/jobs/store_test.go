package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	return openCfg(t, Config{Dir: dir})
}

// openCfg opens the store cfg names, with MaxAttempts 2.
func openCfg(t *testing.T, cfg Config) *Store {
	t.Helper()
	cfg.MaxAttempts = 2
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseState(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want State
		code int
	}{
		{"queued", Queued, 0}, {"1", Running, 1}, {"Completed", Completed, 2}, {"3", Failed, 3}, {" cancelled ", Cancelled, 4},
	} {
		got, err := ParseState(tc.in)
		if err != nil || got != tc.want || got.Code() != tc.code {
			t.Errorf("ParseState(%q) = %q (%d), %v", tc.in, got, got.Code(), err)
		}
	}
	for _, bad := range []string{"", "5", "-1", "done"} {
		if _, err := ParseState(bad); err == nil {
			t.Errorf("ParseState(%q): no error", bad)
		}
	}
}

func TestRunOldestFirst(t *testing.T) { each(t, testRunOldestFirst) }

func testRunOldestFirst(t *testing.T, cfg Config) {
	s := openCfg(t, cfg)
	defer s.Close()
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		j, err := s.Submit(ctx, "echo", "", []byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	var mu sync.Mutex
	var order []string
	done := make(chan struct{}, 5)
	s.Start(1, func(ctx context.Context, j *Job) ([]byte, error) {
		mu.Lock()
		order = append(order, string(j.Request))
		mu.Unlock()
		defer func() { done <- struct{}{} }()
		if string(j.Request) == "3" {
			return nil, errors.New("three fails")
		}
		return append([]byte("ran "), j.Request...), nil
	})
	for range 5 {
		<-done
	}
	waitState(t, s, ids[4], Completed)
	if got := strings.Join(order, ""); got != "01234" {
		t.Fatalf("order %s", got)
	}
	j, _ := s.Get(ctx, ids[1])
	if j.State != Completed || string(j.Result) != "ran 1" || j.Attempts != 1 || j.StartedAt.IsZero() || j.FinishedAt.Before(j.StartedAt) {
		t.Fatalf("job 1: %+v", j)
	}
	j, _ = s.Get(ctx, ids[3])
	if j.State != Failed || j.Error != "three fails" || j.Result != nil {
		t.Fatalf("job 3: %+v", j)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}

func waitState(t *testing.T, s *Store, id string, want State) *Job {
	t.Helper()
	var j *Job
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("job %s to be %s", id, want), func() bool {
		var err error
		if j, err = s.Get(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return j.State == want
	})
	return j
}

func TestCancel(t *testing.T) { each(t, testCancel) }

func testCancel(t *testing.T, cfg Config) {
	s := openCfg(t, cfg)
	defer s.Close()
	ctx := context.Background()
	running, err := s.Submit(ctx, "block", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	queued, err := s.Submit(ctx, "block", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	s.Start(1, func(ctx context.Context, j *Job) ([]byte, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	<-started
	j, err := s.Cancel(ctx, queued.ID)
	if err != nil || j.State != Cancelled {
		t.Fatalf("cancel queued: %+v, %v", j, err)
	}
	if j, err = s.Cancel(ctx, running.ID); err != nil || j.State != Cancelled {
		t.Fatalf("cancel running: %+v, %v", j, err)
	}
	// The worker stops and does not overwrite the cancellation.
	time.Sleep(50 * time.Millisecond)
	if j, _ = s.Get(ctx, running.ID); j.State != Cancelled || j.Error != "cancelled" {
		t.Fatalf("after the worker stopped: %+v", j)
	}
	if _, err = s.Cancel(ctx, running.ID); !errors.Is(err, ErrFinished) {
		t.Fatalf("cancel twice: %v", err)
	}
	if _, err = s.Cancel(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
}

// A crash leaves claimed jobs running; opening the store queues them
// again, and fails those interrupted MaxAttempts times, saying why.
func TestRecoverAfterCrash(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := open(t, dir)
	j, _ := s.Submit(ctx, "x", "", []byte("a"))
	if _, err := Open(Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open of the data dir: %v", err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		c, _ := s.claim()
		if c == nil || c.ID != j.ID || c.Attempts != attempt {
			t.Fatalf("claim %d: %+v", attempt, c)
		}
		s.Close() // no outcome written: as if killed
		s = open(t, dir)
		got, _ := s.Get(ctx, j.ID)
		want := Queued
		if attempt == 2 {
			want = Failed
		}
		if got.State != want || got.Attempts != attempt {
			t.Fatalf("after crash %d: %+v", attempt, got)
		}
	}
	if got, _ := s.Get(ctx, j.ID); got.Error != "the server died twice while running this job; it is not run again, as it may be what kills the server" {
		t.Fatalf("error %q", got.Error)
	}
	s.Close()
}

// Stopping the store puts the job a worker runs back in the queue
// without counting the attempt.
func TestCloseRequeues(t *testing.T) { each(t, testCloseRequeues) }

func testCloseRequeues(t *testing.T, cfg Config) {
	ctx := context.Background()
	s := openCfg(t, cfg)
	j, _ := s.Submit(ctx, "x", "", nil)
	started := make(chan struct{})
	s.Start(2, func(ctx context.Context, j *Job) ([]byte, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	<-started
	s.Close()
	s = openCfg(t, cfg)
	defer s.Close()
	got, _ := s.Get(ctx, j.ID)
	if got.State != Queued || got.Attempts != 0 {
		t.Fatalf("%+v", got)
	}
}

func TestListAndPrune(t *testing.T) { each(t, testListAndPrune) }

func testListAndPrune(t *testing.T, cfg Config) {
	cfg.Retention = time.Hour
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var ids []string
	for i := range 7 {
		owner, typ := "a", "cowsay"
		if i%2 == 1 {
			owner, typ = "b", "ollama"
		}
		j, _ := s.Submit(ctx, typ, owner, []byte(fmt.Sprint(i)))
		ids = append(ids, j.ID)
	}
	s.Cancel(ctx, ids[0])
	s.Cancel(ctx, ids[1])
	for _, tc := range []struct {
		name string
		q    Query
		want []int
	}{
		{"all", Query{}, []int{6, 5, 4, 3, 2, 1, 0}},
		{"owner", Query{Owner: "a"}, []int{6, 4, 2, 0}},
		{"type", Query{Type: "ollama"}, []int{5, 3, 1}},
		{"state", Query{States: []State{Cancelled}}, []int{1, 0}},
		{"states", Query{States: []State{Queued, Running}, Owner: "b"}, []int{5, 3}},
	} {
		var got []int
		after := ""
		for page := 0; ; page++ {
			q := tc.q
			q.Limit, q.After = 2, after
			js, next, err := s.List(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range js {
				var n int
				fmt.Sscan(string(j.Request), &n)
				got = append(got, n)
			}
			if next == "" {
				break
			}
			after = next
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, _, err := s.List(ctx, Query{After: "x"}); err == nil {
		t.Error("bad cursor: no error")
	}
	counts, _ := s.Counts(ctx)
	if counts[Queued] != 5 || counts[Cancelled] != 2 {
		t.Fatalf("counts %v", counts)
	}
	// Finished jobs older than the retention go.
	if _, err := s.db.Exec(s.q(`UPDATE jobs SET finished_at = ? WHERE id = ?`), time.Now().Add(-2*time.Hour).UnixNano(), ids[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	if _, err := s.Get(ctx, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pruned job: %v", err)
	}
}

// A SQLite URL names the database file; its directory is created, and a
// second store on the same file is refused.
func TestSQLiteURL(t *testing.T) {
	path := t.TempDir() + "/sub/other.db"
	s, err := Open(Config{URL: "sqlite://" + path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j, err := s.Submit(context.Background(), "x", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{URL: "sqlite://" + path}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second store on the file: %v", err)
	}
	if got, err := s.Get(context.Background(), j.ID); err != nil || got.State != Queued {
		t.Fatalf("%+v %v", got, err)
	}
}
