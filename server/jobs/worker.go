package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// RunFunc runs one job and returns its result. It must stop when ctx
// ends (the job was cancelled, or the server is stopping).
type RunFunc func(ctx context.Context, j *Job) ([]byte, error)

// opTimeout bounds one bookkeeping statement of a worker (claim, renew,
// outcome), so an unreachable database cannot hang it.
const opTimeout = 15 * time.Second

// Start runs the queue with n workers (at least 1) until Drain or Close,
// and prunes expired jobs periodically. It may be called once.
func (s *Store) Start(n int, run RunFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic("jobs: Start called twice")
	}
	s.started = true
	for range max(n, 1) {
		s.workers.Add(1)
		go s.work(run)
	}
	if s.cfg.Retention > 0 {
		s.loops.Add(1)
		go s.pruneLoop()
	}
}

// Drain is the first half of a graceful stop: workers claim no new job
// from now on, running jobs may finish until ctx ends, and those still
// running then are stopped and handed back to the queue (queued, claim
// cleared, the attempt not counted) for another server to take. It
// returns when every worker has stopped; Close must still be called.
func (s *Store) Drain(ctx context.Context) error {
	s.stopClaiming()
	done := make(chan struct{})
	go func() { s.workers.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	n := len(s.running)
	s.mu.Unlock()
	slog.Info("jobs still running at the end of the drain go back to the queue", "jobs", n)
	s.stopRuns()
	<-done
	return nil
}

func (s *Store) work(run RunFunc) {
	defer s.workers.Done()
	for s.claiming.Err() == nil {
		s.solo.RLock()
		if s.claiming.Err() != nil { // stopped while a job ran alone
			s.solo.RUnlock()
			return
		}
		j, token := s.claim()
		if j == nil {
			s.solo.RUnlock()
			select {
			case <-s.claiming.Done():
			case <-s.wake:
			case <-time.After(s.b.pollEvery()):
			}
			continue
		}
		s.poke() // there may be more: let another idle worker look
		if !suspect(j) {
			s.runOne(j, token, run)
			s.solo.RUnlock()
			continue
		}
		s.solo.RUnlock()
		s.runAlone(j, token, run)
	}
}

// suspect reports whether a claimed job was running when a server died
// (a clean stop hands a job back without counting its attempt): it may
// be what killed it.
func suspect(j *Job) bool { return j.Attempts > 1 }

// runAlone runs a suspect job with no other job of this server beside
// it, so that if it kills the server again it takes no other job down.
// It hands the job back (the attempt not counted) and, once every other
// run here has ended, and with no worker claiming meanwhile, claims
// again: the job at the head of the queue, this one unless another
// server took it, which then runs alone too.
func (s *Store) runAlone(j *Job, token string, run RunFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), opTimeout)
	_, err := s.b.requeue(ctx, j.ID, token)
	cancel()
	if err != nil {
		slog.Warn("hand back a suspect job to run it alone", "id", j.ID, "error", err)
		return
	}
	s.solo.Lock()
	defer s.solo.Unlock()
	if s.claiming.Err() != nil {
		return
	}
	if j, token = s.claim(); j != nil {
		if suspect(j) {
			slog.Warn("a job runs alone: the server died while it ran before", "id", j.ID, "type", j.Type, "attempt", j.Attempts)
		}
		s.runOne(j, token, run)
	}
}

// claim claims the next job (nil when there is none or the database
// cannot be reached). The statement is not cancelled by a stop, so a job
// is never claimed without the worker knowing; one claimed as the stop
// came goes straight back.
func (s *Store) claim() (*Job, string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), opTimeout)
	defer cancel()
	j, token, err := s.b.claim(ctx)
	if err != nil {
		if !s.down.Swap(true) {
			slog.Error("claim a job: the job database fails; retrying", "error", s.dbErr("claim", err))
		}
		return nil, ""
	}
	if s.down.Swap(false) {
		slog.Info("the job database is back: claiming jobs again")
	}
	if j != nil && s.claiming.Err() != nil {
		if _, err := s.b.requeue(ctx, j.ID, token); err != nil {
			slog.Warn("hand a job claimed while stopping back", "id", j.ID, "error", err)
		}
		return nil, ""
	}
	return j, token
}

// runOne runs a claimed job and records its outcome, unless the job was
// cancelled or reclaimed meanwhile: the outcome is written only while
// the claim is held. A run the stop (or a drain's end) interrupted goes
// back to the queue.
func (s *Store) runOne(j *Job, token string, run RunFunc) {
	ctx, cancel := context.WithCancel(s.runs)
	s.mu.Lock()
	s.running[j.ID] = cancel
	s.mu.Unlock()
	var state State
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT state FROM jobs WHERE id = ?`), j.ID).Scan(&state); err == nil && state != Running {
		cancel() // cancelled between the claim and now
	}
	var lost atomic.Bool
	renewed := make(chan struct{})
	if s.pg {
		go s.renewLoop(ctx, j, token, cancel, &lost, renewed)
	} else {
		close(renewed) // one server holds every claim: no lease to renew
	}
	start := time.Now()
	runCtx, stopRun := ctx, context.CancelFunc(func() {})
	if s.cfg.Deadline > 0 {
		runCtx, stopRun = context.WithTimeout(ctx, s.cfg.Deadline)
	}
	result, err := safeRun(runCtx, run, j)
	// Only the timer ends runCtx with DeadlineExceeded: a cancel or the
	// store's stop end it with Canceled.
	overdue := errors.Is(runCtx.Err(), context.DeadlineExceeded)
	stopRun()
	cancel()
	<-renewed
	s.mu.Lock()
	delete(s.running, j.ID)
	s.mu.Unlock()

	log := slog.With("id", j.ID, "type", j.Type, "attempt", j.Attempts)
	switch {
	case lost.Load():
		log.Warn("job dropped: its claim was lost (cancelled, or reclaimed by another server after the lease ran out)")
	case err == nil:
		if s.record(log, j.ID, token, Completed, result, "") {
			log.Info("job completed", "took", time.Since(start).Round(time.Millisecond))
		}
	case s.runs.Err() != nil:
		rctx, rcancel := context.WithTimeout(context.Background(), opTimeout)
		ok, rerr := s.b.requeue(rctx, j.ID, token)
		rcancel()
		switch {
		case rerr != nil:
			log.Warn("job interrupted by the stop; its lease will run out and another server will take it", "error", rerr)
		case ok:
			log.Info("job interrupted by the stop; queued again")
		}
	case overdue:
		msg := fmt.Sprintf("deadline exceeded: the job ran longer than the server's limit of %v", s.cfg.Deadline)
		if s.record(log, j.ID, token, Failed, nil, msg) {
			log.Warn("job failed", "error", msg)
		}
	default:
		if s.record(log, j.ID, token, Failed, nil, err.Error()) && ctx.Err() == nil {
			log.Warn("job failed", "error", err)
		}
	}
}

// record writes a run's outcome if the claim is still held, reporting
// whether it did. While the database cannot be reached it tries again
// until the store closes: the claim check is atomic with the write, so a
// late write is still exactly one.
func (s *Store) record(log *slog.Logger, id, token string, st State, result []byte, msg string) bool {
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		ok, err := s.b.finish(ctx, id, token, st, result, msg)
		cancel()
		if err == nil {
			if !ok {
				log.Info("job outcome not written: the job was cancelled, or another server holds it now", "state", st)
			}
			return ok
		}
		err = s.dbErr("record a job's outcome", err)
		if !errors.Is(err, ErrUnavailable) {
			log.Error("record a job's outcome", "error", err)
			return false
		}
		log.Warn("record a job's outcome: retrying", "error", err)
		select {
		case <-s.ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// renewLoop renews a running job's lease every Lease/3 until ctx ends;
// a claim no longer held (the job was cancelled or reclaimed) stops the
// run. A renewal the database does not answer is tried at the next tick:
// the run goes on, and if the lease runs out meanwhile another server
// may take the job, and this run's outcome will not be written.
func (s *Store) renewLoop(ctx context.Context, j *Job, token string, stop context.CancelFunc, lost *atomic.Bool, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(max(s.cfg.Lease/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, max(s.cfg.Lease/3, time.Second))
		ok, err := s.b.renew(rctx, j.ID, token)
		cancel()
		if err == nil && !ok && ctx.Err() == nil {
			lost.Store(true)
			stop()
			return
		}
	}
}

// safeRun runs a job, turning a panic into the job's error.
func safeRun(ctx context.Context, run RunFunc, j *Job) (result []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("job panicked", "id", j.ID, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error: %v", p)
		}
	}()
	return run(ctx, j)
}

func (s *Store) pruneLoop() {
	defer s.loops.Done()
	every := min(max(s.cfg.Retention/4, time.Minute), time.Hour)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if _, err := s.Prune(s.ctx); err != nil && s.ctx.Err() == nil {
				slog.Error("prune jobs", "error", err)
			}
		}
	}
}
