package jobs

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// State is where a job is in its life: queued → running → completed,
// failed or cancelled.
type State string

const (
	Queued    State = "queued"
	Running   State = "running"
	Completed State = "completed"
	Failed    State = "failed"
	Cancelled State = "cancelled"
)

// states in the order of their numeric codes.
var states = []State{Queued, Running, Completed, Failed, Cancelled}

// Code is the state's number: 0 queued, 1 running, 2 completed (results
// ready), 3 failed, 4 cancelled.
func (s State) Code() int {
	for i, t := range states {
		if t == s {
			return i
		}
	}
	return -1
}

// Finished reports whether a job in this state will not change any more.
func (s State) Finished() bool { return s == Completed || s == Failed || s == Cancelled }

// ParseState reads a state by name or numeric code.
func ParseState(v string) (State, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(states) {
		return states[n], nil
	}
	for _, s := range states {
		if string(s) == v {
			return s, nil
		}
	}
	return "", fmt.Errorf("unknown job status %q (queued, running, completed, failed, cancelled or 0-4)", v)
}

// Job is one job as stored.
type Job struct {
	ID    string
	Type  string
	Owner string // the id of the API key that submitted it ("" without keys)
	State State
	// Request is the job's input as submitted; Result its output once
	// completed, Error why it failed or was cancelled.
	Request  []byte
	Result   []byte
	Error    string
	Attempts int // runs started, the current one included
	// CreatedAt is when it was accepted; StartedAt and FinishedAt are
	// zero until then.
	CreatedAt, StartedAt, FinishedAt time.Time
}

var (
	// ErrNotFound: no job has this id.
	ErrNotFound = errors.New("job not found")
	// ErrFinished: the job has already completed, failed or been
	// cancelled.
	ErrFinished = errors.New("job has already finished")
	// ErrBadCursor: List's After is not a cursor List returned.
	ErrBadCursor = errors.New("invalid page cursor")
	// ErrQuota: the owner already has Config.MaxQueuedPerOwner jobs
	// queued.
	ErrQuota = errors.New("too many queued jobs")
)

// Config configures a Store.
type Config struct {
	// Dir is the data directory; the database is Dir/jobs.db.
	Dir string
	// Retention is how long finished jobs are kept; 0 keeps them forever.
	Retention time.Duration
	// MaxAttempts is how many runs of a job a crash may interrupt before
	// the job fails instead of running again (default 3).
	MaxAttempts int
	// Deadline bounds one run of a job: a run still going after it is
	// stopped (freeing what it held) and the job fails with "deadline
	// exceeded" (0: no limit).
	Deadline time.Duration
	// MaxQueuedPerOwner is how many queued jobs one owner may have; Submit
	// refuses more with ErrQuota (0: no limit). Jobs submitted without an
	// owner share one quota.
	MaxQueuedPerOwner int
}

// Store is the job database and, once started, its workers.
type Store struct {
	cfg  Config
	db   *sql.DB
	lock *os.File

	ctx     context.Context // ends when the store closes
	stop    context.CancelFunc
	wg      sync.WaitGroup
	wake    chan struct{}
	mu      sync.Mutex
	running map[string]context.CancelFunc // by job id
	started bool

	prunedResponses time.Time // responses.go
}

const schema = `
CREATE TABLE IF NOT EXISTS jobs (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	id          TEXT NOT NULL UNIQUE,
	type        TEXT NOT NULL,
	owner       TEXT NOT NULL DEFAULT '',
	state       TEXT NOT NULL,
	request     BLOB NOT NULL,
	result      BLOB,
	error       TEXT NOT NULL DEFAULT '',
	attempts    INTEGER NOT NULL DEFAULT 0,
	created_at  INTEGER NOT NULL,
	started_at  INTEGER NOT NULL DEFAULT 0,
	finished_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, seq);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs(finished_at) WHERE finished_at > 0;
CREATE INDEX IF NOT EXISTS jobs_owner ON jobs(owner, state);
`

// Open opens (creating) the job database in cfg.Dir, locks the directory
// against other servers, puts the jobs a crash interrupted back in the
// queue and prunes expired ones. Start runs the queue.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("jobs: no data directory")
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cfg.Dir, "jobs.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// One connection: every statement is atomic with respect to the
	// others, and writes never wait on SQLite's busy handler.
	db.SetMaxOpenConns(1)
	ctx, stop := context.WithCancel(context.Background())
	s := &Store{cfg: cfg, db: db, lock: lock, ctx: ctx, stop: stop, wake: make(chan struct{}, 1), running: map[string]context.CancelFunc{}}
	if err := s.init(); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) init() error {
	if _, err := s.db.Exec(schema); err != nil {
		return err
	}
	if err := s.initResponses(); err != nil { // responses.go
		return err
	}
	now := time.Now().UnixNano()
	res, err := s.db.Exec(`UPDATE jobs SET state = 'failed', finished_at = ?,
		error = 'the server stopped while it ran, ' || attempts || ' times'
		WHERE state = 'running' AND attempts >= ?`, now, s.cfg.MaxAttempts)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		slog.Warn("jobs interrupted too often failed", "jobs", n)
	}
	res, err = s.db.Exec(`UPDATE jobs SET state = 'queued', started_at = 0 WHERE state = 'running'`)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		slog.Info("jobs interrupted by a stop are queued again", "jobs", n)
	}
	_, err = s.Prune(context.Background())
	return err
}

// Close stops the workers (a job they are running goes back to the
// queue), then closes the database and unlocks the directory.
func (s *Store) Close() error {
	s.stop()
	s.wg.Wait()
	err := s.db.Close()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// newID is a new random job id.
func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Submit stores a new queued job; it is durable when Submit returns. An
// owner with MaxQueuedPerOwner jobs queued already gets ErrQuota: the
// count and the insert are one statement, so concurrent submissions
// cannot overshoot the quota.
func (s *Store) Submit(ctx context.Context, typ, owner string, request []byte) (*Job, error) {
	if request == nil {
		request = []byte{}
	}
	quota := int64(s.cfg.MaxQueuedPerOwner)
	if quota <= 0 {
		quota = math.MaxInt64
	}
	j := &Job{ID: newID(), Type: typ, Owner: owner, State: Queued, Request: request, CreatedAt: time.Now().UTC()}
	res, err := s.db.ExecContext(ctx, `INSERT INTO jobs (id, type, owner, state, request, created_at)
		SELECT ?, ?, ?, ?, ?, ? WHERE (SELECT COUNT(*) FROM jobs WHERE owner = ? AND state = 'queued') < ?`,
		j.ID, j.Type, j.Owner, j.State, j.Request, j.CreatedAt.UnixNano(), j.Owner, quota)
	if err != nil {
		return nil, fmt.Errorf("submit job: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("submit job: %w", err)
	} else if n == 0 {
		return nil, fmt.Errorf("%w: at most %d may wait per owner", ErrQuota, quota)
	}
	s.poke()
	return j, nil
}

// poke wakes an idle worker, if one waits.
func (s *Store) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

const columns = `id, type, owner, state, request, result, error, attempts, created_at, started_at, finished_at`

type scanner interface{ Scan(...any) error }

func scanJob(row scanner) (*Job, error) {
	var j Job
	var created, started, finished int64
	err := row.Scan(&j.ID, &j.Type, &j.Owner, &j.State, &j.Request, &j.Result, &j.Error, &j.Attempts, &created, &started, &finished)
	if err != nil {
		return nil, err
	}
	j.CreatedAt, j.StartedAt, j.FinishedAt = unixTime(created), unixTime(started), unixTime(finished)
	return &j, nil
}

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// Get returns the job with this id.
func (s *Store) Get(ctx context.Context, id string) (*Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return j, nil
}

// Query selects jobs to list.
type Query struct {
	Owner  string  // "" for every owner's
	States []State // none for all
	Type   string  // "" for all
	Limit  int     // page size (default 50, at most 1000)
	After  string  // the Next of the previous page
}

// List returns a page of the jobs q selects, newest first, without their
// results, and the cursor of the next page ("" after the last).
func (s *Store) List(ctx context.Context, q Query) ([]*Job, string, error) {
	where, args := []string{"1 = 1"}, []any{}
	if q.Owner != "" {
		where, args = append(where, "owner = ?"), append(args, q.Owner)
	}
	if len(q.States) > 0 {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(q.States)), ", ")
		where = append(where, "state IN ("+marks+")")
		for _, st := range q.States {
			args = append(args, st)
		}
	}
	if q.Type != "" {
		where, args = append(where, "type = ?"), append(args, q.Type)
	}
	if q.After != "" {
		seq, err := strconv.ParseInt(q.After, 10, 64)
		if err != nil || seq <= 0 {
			return nil, "", fmt.Errorf("%w %q", ErrBadCursor, q.After)
		}
		where, args = append(where, "seq < ?"), append(args, seq)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	rows, err := s.db.QueryContext(ctx, `SELECT seq, id, type, owner, state, request, NULL, error, attempts, created_at, started_at, finished_at
		FROM jobs WHERE `+strings.Join(where, " AND ")+` ORDER BY seq DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var out []*Job
	var seqs []int64
	for rows.Next() {
		var seq int64
		j, err := scanJob(seqScanner{rows, &seq})
		if err != nil {
			return nil, "", fmt.Errorf("list jobs: %w", err)
		}
		out, seqs = append(out, j), append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = strconv.FormatInt(seqs[limit-1], 10)
	}
	return out, next, nil
}

// seqScanner scans a leading seq column, then a job.
type seqScanner struct {
	rows *sql.Rows
	seq  *int64
}

func (s seqScanner) Scan(dest ...any) error { return s.rows.Scan(append([]any{s.seq}, dest...)...) }

// Counts is the number of jobs in each state.
func (s *Store) Counts(ctx context.Context) (map[State]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, COUNT(*) FROM jobs GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	out := map[State]int{}
	for rows.Next() {
		var st State
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count jobs: %w", err)
		}
		out[st] = n
	}
	return out, rows.Err()
}

// Cancel cancels a queued or running job (a running one stops at its
// next step) and returns it; a finished job is returned with ErrFinished.
func (s *Store) Cancel(ctx context.Context, id string) (*Job, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE jobs SET state = 'cancelled', finished_at = ?, error = 'cancelled'
		WHERE id = ? AND state IN ('queued', 'running')`, time.Now().UnixNano(), id)
	if err != nil {
		return nil, fmt.Errorf("cancel job %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	if n == 1 {
		s.mu.Lock()
		if cancel := s.running[id]; cancel != nil {
			cancel()
		}
		s.mu.Unlock()
	}
	j, err := s.Get(ctx, id)
	if err == nil && n == 0 {
		err = ErrFinished
	}
	return j, err
}

// Prune deletes the jobs that finished longer than the retention ago.
func (s *Store) Prune(ctx context.Context) (int64, error) {
	if s.cfg.Retention <= 0 {
		return 0, nil
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM jobs WHERE finished_at > 0 AND finished_at < ?`,
		time.Now().Add(-s.cfg.Retention).UnixNano())
	if err != nil {
		return 0, fmt.Errorf("prune jobs: %w", err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		slog.Info("pruned finished jobs", "jobs", n, "retention", s.cfg.Retention)
	}
	return n, nil
}
