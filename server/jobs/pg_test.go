package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/server/jobs/pgtest"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// A server that dies holding a job (no renewal, no outcome) loses it
// when the lease runs out: another claims it and completes it, and the
// dead claim's late outcome is refused, so the job completes once.
func TestPGLeaseReclaimed(t *testing.T) {
	cfg := pgConfig(t)
	cfg.Lease = 300 * time.Millisecond
	ctx := context.Background()
	a := openCfg(t, cfg)
	defer a.Close()
	j, _ := a.Submit(ctx, "x", "", []byte("a"))
	got, token := a.claim() // and then "dies": nothing renews the lease
	if got == nil || got.ID != j.ID {
		t.Fatalf("claim: %+v", got)
	}
	b := openCfg(t, cfg)
	defer b.Close()
	if again, _ := b.claim(); again != nil {
		t.Fatalf("claimed while the lease holds: %+v", again)
	}
	var runs atomic.Int32
	b.Start(1, func(ctx context.Context, j *Job) ([]byte, error) {
		runs.Add(1)
		return []byte("done by b"), nil
	})
	done := waitState(t, b, j.ID, Completed)
	if string(done.Result) != "done by b" || done.Attempts != 2 || runs.Load() != 1 {
		t.Fatalf("reclaimed job: %+v, %d runs", done, runs.Load())
	}
	if ok, err := a.b.finish(ctx, j.ID, token, Completed, []byte("late"), ""); ok || err != nil {
		t.Fatalf("the dead claim's outcome: written %v, %v", ok, err)
	}
	if after, _ := b.Get(ctx, j.ID); string(after.Result) != "done by b" {
		t.Fatalf("after the late outcome: %+v", after)
	}
}

// A running job's lease is renewed: a run three leases long is not
// reclaimed by an idle second server, and completes once.
func TestPGLeaseRenewed(t *testing.T) {
	cfg := pgConfig(t)
	cfg.Lease = 300 * time.Millisecond
	ctx := context.Background()
	var runs atomic.Int32
	run := func(ctx context.Context, j *Job) ([]byte, error) {
		runs.Add(1)
		select {
		case <-time.After(3 * cfg.Lease):
			return []byte("ok"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	a := openCfg(t, cfg)
	defer a.Close()
	j, _ := a.Submit(ctx, "x", "", nil)
	a.Start(1, run)
	waitState(t, a, j.ID, Running)
	b := openCfg(t, cfg)
	defer b.Close()
	b.Start(1, run)
	if done := waitState(t, a, j.ID, Completed); done.Attempts != 1 || runs.Load() != 1 {
		t.Fatalf("%+v, %d runs", done, runs.Load())
	}
}

// Replicas claim only the jobs of the models they serve; jobs without a
// model run anywhere; names compare without case and ":latest".
func TestPGModels(t *testing.T) {
	cfg := pgConfig(t)
	ctx := context.Background()
	cfg.Models = []string{"Llama:latest"}
	s := openCfg(t, cfg)
	defer s.Close()
	other, _ := s.SubmitModel(ctx, "x", "", "qwen", nil)
	mine, _ := s.SubmitModel(ctx, "x", "", "llama", nil)
	any, _ := s.Submit(ctx, "x", "", nil)
	var got []string
	for {
		j, _ := s.claim()
		if j == nil {
			break
		}
		got = append(got, j.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint([]string{mine.ID, any.ID}) {
		t.Fatalf("claimed %v; llama %s, none %s, qwen %s", got, mine.ID, any.ID, other.ID)
	}
	cfg.Models = nil
	all := openCfg(t, cfg)
	defer all.Close()
	if j, _ := all.claim(); j == nil || j.ID != other.ID {
		t.Fatalf("a server of every model: %+v", j)
	}
}

// A cancel through one server stops the run on another at once (its
// notification), and the run's outcome is not written over it.
func TestPGCancelAcrossServers(t *testing.T) {
	cfg := pgConfig(t)
	ctx := context.Background()
	a := openCfg(t, cfg)
	defer a.Close()
	b := openCfg(t, cfg)
	defer b.Close()
	stopped := make(chan struct{})
	a.Start(1, func(ctx context.Context, j *Job) ([]byte, error) {
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	})
	j, _ := b.Submit(ctx, "x", "", nil)
	waitState(t, b, j.ID, Running)
	if _, err := b.Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second): // far less than a lease (30 s)
		t.Fatal("the run on the other server was not stopped")
	}
	if got, _ := a.Get(ctx, j.ID); got.State != Cancelled {
		t.Fatalf("%+v", got)
	}
}

// Drain takes no new job, lets a short run finish, and hands a run still
// going at its deadline back to the queue, where another server takes
// it. On both backends.
func TestDrain(t *testing.T) { each(t, testDrain) }

func testDrain(t *testing.T, cfg Config) {
	ctx := context.Background()
	s := openCfg(t, cfg)
	long, _ := s.Submit(ctx, "x", "", []byte("long"))
	short, _ := s.Submit(ctx, "x", "", []byte("short"))
	queued, _ := s.Submit(ctx, "x", "", []byte("queued"))
	var started sync.WaitGroup
	started.Add(2)
	release := make(chan struct{})
	s.Start(2, func(ctx context.Context, j *Job) ([]byte, error) {
		switch string(j.Request) {
		case "long":
			started.Done()
			<-ctx.Done()
			return nil, ctx.Err()
		case "short":
			started.Done()
			<-release
			return []byte("ok"), nil
		}
		t.Errorf("claimed %s during the drain", j.Request)
		return nil, nil
	})
	started.Wait()
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(dctx) }()
	time.Sleep(50 * time.Millisecond)
	close(release) // the short run ends within the drain
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]State{long.ID: Queued, short.ID: Completed, queued.ID: Queued} {
		if got, _ := s.Get(ctx, id); got.State != want || (want == Queued && got.Attempts != 0) {
			t.Fatalf("after the drain: %+v, want %s", got, want)
		}
	}
	s.Close()
	next := openCfg(t, cfg)
	defer next.Close()
	next.Start(1, func(ctx context.Context, j *Job) ([]byte, error) { return j.Request, nil })
	if got := waitState(t, next, long.ID, Completed); got.Attempts != 1 {
		t.Fatalf("the handed-back job: %+v", got)
	}
	waitState(t, next, queued.ID, Completed)
}

// A database migrated by a newer Tadpole is refused before anything is
// written; a current one opens again without migrating.
func TestPGNewerSchema(t *testing.T) {
	cfg := pgConfig(t)
	pgtest.Exec(t, cfg.URL, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
		INSERT INTO schema_migrations (version) VALUES (99)`)
	_, err := Open(cfg)
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("open: %v", err)
	}
	// Nothing written: the jobs table was not created.
	pgtest.Exec(t, cfg.URL, `DO $$ BEGIN IF to_regclass('jobs') IS NOT NULL THEN RAISE 'jobs table created'; END IF; END $$`)

	ok := pgConfig(t)
	openCfg(t, ok).Close()
	s := openCfg(t, ok) // at the current version: nothing to do
	s.Close()
}

// An unreachable database is an error naming the URL without its
// password.
func TestPGUnreachable(t *testing.T) {
	_, err := Open(Config{URL: "postgres://tadpole:s3cr3t-pw@127.0.0.1:1/jobs?sslmode=disable&connect_timeout=2"})
	if err == nil || strings.Contains(err.Error(), "s3cr3t-pw") || !strings.Contains(err.Error(), "postgres://tadpole@127.0.0.1:1/jobs") {
		t.Fatalf("open: %v", err)
	}
	for _, bad := range []string{"mysql://x", "sqlite://relative", "sqlite:///dir/"} {
		if _, err := Open(Config{URL: bad}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if got := Redact("postgres://u:p@h/db?password=q&sslmode=disable"); got != "postgres://u@h/db?sslmode=disable" {
		t.Errorf("redact: %s", got)
	}
}

// While the database is stopped the store answers ErrUnavailable (and a
// run's outcome waits); when it is back, the outcome is written and new
// jobs run.
func TestPGDatabaseGoesAway(t *testing.T) {
	srv := pgtest.Start(t) // its own server: this test stops it
	cfg := Config{URL: srv.NewDB(t), Lease: time.Second}
	s := openCfg(t, cfg)
	defer s.Close()
	ctx := context.Background()
	release := make(chan struct{})
	s.Start(1, func(ctx context.Context, j *Job) ([]byte, error) {
		if string(j.Request) == "wait" {
			<-release
		}
		return j.Request, nil
	})
	j, _ := s.Submit(ctx, "x", "", []byte("wait"))
	waitState(t, s, j.ID, Running)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	close(release) // the outcome cannot be written now
	if _, err := s.Get(ctx, j.ID); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("get while stopped: %v", err)
	}
	if _, err := s.Submit(ctx, "x", "", nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("submit while stopped: %v", err)
	}
	if _, err := s.GetResponse(ctx, "resp_x", ""); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("get response while stopped: %v", err)
	}
	time.Sleep(2 * cfg.Lease) // the lease runs out meanwhile: still this server's to finish
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := waitState(t, s, j.ID, Completed); string(got.Result) != "wait" || got.Attempts != 1 {
		t.Fatalf("after the restart: %+v", got)
	}
	next, err := s.Submit(ctx, "x", "", []byte("next"))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, s, next.ID, Completed)
}

// Per-key usage counted on two servers is the sum on both once flushed.
func TestPGUsageShared(t *testing.T) {
	cfg := pgConfig(t)
	var ta, tb usage.Table
	a := openCfg(t, cfg)
	defer a.Close()
	a.ShareUsage(&ta)
	b := openCfg(t, cfg)
	defer b.Close()
	b.ShareUsage(&tb)
	ta.For("k1").Request()
	ta.For("k1").Tokens(10, 5)
	tb.For("k1").Request()
	tb.For("k2").Limited()
	ctx := context.Background()
	for _, tab := range []*usage.Table{&ta, &tb, &ta} { // a flushes again to read b's
		if err := tab.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := "[{k1 2 0 10 5} {k2 0 1 0 0}]"
	if got := fmt.Sprint(ta.Snapshot()); got != want {
		t.Fatalf("a: %s, want %s", got, want)
	}
	tb.For("k2").Request() // not flushed yet: counted here already
	if got := fmt.Sprint(tb.Snapshot()); got != "[{k1 2 0 10 5} {k2 1 1 0 0}]" {
		t.Fatalf("b: %s", got)
	}
}

// A batch added again under its id (a retry after a lost
// acknowledgement) adds nothing; another id adds.
func TestPGUsageBatchOnce(t *testing.T) {
	s := openCfg(t, pgConfig(t))
	defer s.Close()
	ctx := context.Background()
	d := []usage.Snapshot{{Key: "k", Requests: 1, TokensIn: 7}}
	for _, id := range []string{"r-1", "r-1", "r-2"} {
		if err := s.AddUsage(ctx, id, d); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.UsageTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[{k 2 0 14 0}]" {
		t.Fatalf("totals %v, want two batches counted", got)
	}
}
