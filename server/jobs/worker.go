package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// RunFunc runs one job and returns its result. It must stop when ctx
// ends (the job was cancelled, or the server is stopping).
type RunFunc func(ctx context.Context, j *Job) ([]byte, error)

// pollInterval bounds how long a queued job can wait for an idle worker
// that missed its wake-up.
const pollInterval = 10 * time.Second

// Start runs the queue with n workers (at least 1) until Close, and
// prunes expired jobs periodically. It may be called once.
func (s *Store) Start(n int, run RunFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic("jobs: Start called twice")
	}
	s.started = true
	for range max(n, 1) {
		s.wg.Add(1)
		go s.work(run)
	}
	if s.cfg.Retention > 0 {
		s.wg.Add(1)
		go s.pruneLoop()
	}
}

func (s *Store) work(run RunFunc) {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		j, err := s.claim()
		if err != nil {
			slog.Error("claim a job", "error", err)
		}
		if j == nil {
			select {
			case <-s.ctx.Done():
			case <-s.wake:
			case <-time.After(pollInterval):
			}
			continue
		}
		s.poke() // there may be more: let another idle worker look
		s.runOne(j, run)
	}
}

// claim marks the oldest queued job running and returns it (nil when the
// queue is empty).
func (s *Store) claim() (*Job, error) {
	row := s.db.QueryRowContext(s.ctx, `UPDATE jobs SET state = 'running', started_at = ?, attempts = attempts + 1
		WHERE seq = (SELECT seq FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1)
		RETURNING `+columns, time.Now().UnixNano())
	j, err := scanJob(row)
	if errors.Is(err, sql.ErrNoRows) || s.ctx.Err() != nil {
		return nil, nil
	}
	return j, err
}

// runOne runs a claimed job and records its outcome, unless the job was
// cancelled meanwhile. A job the server's stop interrupted goes back to
// the queue.
func (s *Store) runOne(j *Job, run RunFunc) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.running[j.ID] = cancel
	s.mu.Unlock()
	var state State
	if err := s.db.QueryRowContext(ctx, `SELECT state FROM jobs WHERE id = ?`, j.ID).Scan(&state); err == nil && state != Running {
		cancel() // cancelled between the claim and now
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
	s.mu.Lock()
	delete(s.running, j.ID)
	s.mu.Unlock()

	now := time.Now().UnixNano()
	bg := context.Background() // the outcome is written even while stopping
	var dbErr error
	switch {
	case err == nil:
		_, dbErr = s.db.ExecContext(bg, `UPDATE jobs SET state = 'completed', result = ?, finished_at = ? WHERE id = ? AND state = 'running'`,
			result, now, j.ID)
		slog.Info("job completed", "id", j.ID, "type", j.Type, "attempt", j.Attempts, "took", time.Since(start).Round(time.Millisecond))
	case s.ctx.Err() != nil:
		_, dbErr = s.db.ExecContext(bg, `UPDATE jobs SET state = 'queued', started_at = 0, attempts = attempts - 1 WHERE id = ? AND state = 'running'`, j.ID)
		slog.Info("job interrupted by the stop; queued again", "id", j.ID, "type", j.Type)
	case overdue:
		msg := fmt.Sprintf("deadline exceeded: the job ran longer than the server's limit of %v", s.cfg.Deadline)
		_, dbErr = s.db.ExecContext(bg, `UPDATE jobs SET state = 'failed', error = ?, finished_at = ? WHERE id = ? AND state = 'running'`,
			msg, now, j.ID)
		slog.Warn("job failed", "id", j.ID, "type", j.Type, "error", msg)
	default:
		_, dbErr = s.db.ExecContext(bg, `UPDATE jobs SET state = 'failed', error = ?, finished_at = ? WHERE id = ? AND state = 'running'`,
			err.Error(), now, j.ID)
		if ctx.Err() == nil {
			slog.Warn("job failed", "id", j.ID, "type", j.Type, "error", err)
		}
	}
	if dbErr != nil {
		slog.Error("record a job's outcome", "id", j.ID, "error", dbErr)
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
	defer s.wg.Done()
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
