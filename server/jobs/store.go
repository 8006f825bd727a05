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
	"sync/atomic"
	"time"

	"github.com/tadpole-llm/tadpole/server/usage"
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
	// Model is the model the job runs on ("" for none, or unknown: any
	// server may run it); replicas sharing PostgreSQL claim only the
	// jobs of the models they serve.
	Model string
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
	// Dir is the data directory; the SQLite database is Dir/jobs.db
	// unless URL names another file.
	Dir string
	// URL is the database: "" or "sqlite:///path/to/jobs.db" for SQLite
	// (one server; the default), "postgres://…" or "postgresql://…" for a
	// PostgreSQL database that several servers (replicas) share.
	URL string
	// Retention is how long finished jobs are kept; 0 keeps them forever.
	Retention time.Duration
	// MaxAttempts is how many runs of a job the server's death may
	// interrupt before the job fails instead of running again (default
	// 2): a job that was running when the process died may be what
	// killed it, so after the first death it is suspect and runs alone
	// (no other job of this server beside it), and after the second it
	// fails with "the server died twice while running this job".
	MaxAttempts int
	// Deadline bounds one run of a job: a run still going after it is
	// stopped (freeing what it held) and the job fails with "deadline
	// exceeded" (0: no limit).
	Deadline time.Duration
	// MaxQueuedPerOwner is how many queued jobs one owner may have; Submit
	// refuses more with ErrQuota (0: no limit). Jobs submitted without an
	// owner share one quota.
	MaxQueuedPerOwner int
	// Lease (PostgreSQL) is how long a replica's claim on a running job
	// lasts without renewal; the worker renews it every Lease/3, and a job
	// whose lease ran out (its replica died) is claimed again by another
	// (default DefaultLease).
	Lease time.Duration
	// Models (PostgreSQL) are the models whose jobs this replica claims;
	// nil claims every job. A job without a model (cowsay) runs anywhere.
	// Names are compared without case and without a ":latest" tag.
	Models []string
	// Replica names this server in the leases it holds (default
	// host/pid); for logs and operators.
	Replica string
	// MaxResponseBytes bounds one stored response (its input, output,
	// request and images); 0: no bound. ResponseQuotaBytes and
	// ResponseQuotaCount bound what one owner stores (responses and
	// images; deleted responses that others continue count until they
	// go); 0: no quota. SaveResponse refuses more (ErrResponseTooLarge,
	// ErrResponseQuota).
	MaxResponseBytes, ResponseQuotaBytes, ResponseQuotaCount int64
	// MinFreeDisk is the free space in bytes that storing a response
	// must leave on the SQLite database's disk (ErrDiskLow); 0: none.
	MinFreeDisk int64
}

// DefaultLease is Config.Lease's default.
const DefaultLease = 30 * time.Second

// Store is the job database and, once started, its workers. The SQL the
// two databases share is here and in responses.go; what differs (the
// claim and its lease, submission, notifications) is a backend.
type Store struct {
	cfg  Config
	db   *sql.DB
	b    backend
	pg   bool     // PostgreSQL: placeholders are $n; errors may mean "unavailable"
	lock *os.File // SQLite: the data directory's lock

	ctx     context.Context // ends when the store closes
	stop    context.CancelFunc
	loops   sync.WaitGroup // pruning, notifications, usage
	workers sync.WaitGroup
	// claiming ends at Drain or Close: workers take no new job.
	claiming     context.Context
	stopClaiming context.CancelFunc
	// runs is the parent of every run; it ends at Close or when Drain's
	// time is up, and a run it ends goes back to the queue.
	runs     context.Context
	stopRuns context.CancelFunc
	wake     chan struct{}
	// solo is held shared by each worker while it claims and runs a
	// job, and exclusively to run a suspect job alone (worker.go).
	solo    sync.RWMutex
	mu      sync.Mutex
	running map[string]context.CancelFunc // by job id
	started bool

	prunedResponses time.Time // responses.go
	usage           *usage.Table
	down            atomic.Bool // claims fail: the outage is logged once
}

// backend is what SQLite and PostgreSQL do differently. A claim returns
// a token that the later calls present: only the holder of the current
// claim may renew, finish or requeue the job, so a job another replica
// reclaimed is never completed twice.
type backend interface {
	// submit inserts j unless its owner has quota jobs queued (false).
	submit(ctx context.Context, j *Job, quota int64) (bool, error)
	// claim marks the oldest job this server may run as running; nil
	// when there is none.
	claim(ctx context.Context) (*Job, string, error)
	// renew extends the claim; false when it is no longer held (the job
	// was cancelled or reclaimed).
	renew(ctx context.Context, id, token string) (bool, error)
	// finish records a run's outcome if the claim is still held.
	finish(ctx context.Context, id, token string, st State, result []byte, msg string) (bool, error)
	// requeue hands a claimed job back to the queue, the attempt not
	// counted.
	requeue(ctx context.Context, id, token string) (bool, error)
	// cancelled tells the other servers that a job was cancelled.
	cancelled(ctx context.Context, id string)
	// pollEvery bounds how long an idle worker sleeps without a wake-up.
	pollEvery() time.Duration
	close() error
}

// Open opens the job database cfg names (creating or migrating it) and
// readies the workers; Start runs the queue. SQLite: the data directory
// is locked against other servers, and jobs a crash left running are
// queued again. PostgreSQL: an unreachable database, or one migrated by a
// newer Tadpole, is an error naming the URL without its password.
func Open(cfg Config) (*Store, error) {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 2
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Replica == "" {
		host, _ := os.Hostname()
		cfg.Replica = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	kind, path, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	claiming, stopClaiming := context.WithCancel(ctx)
	runs, stopRuns := context.WithCancel(ctx)
	s := &Store{cfg: cfg, ctx: ctx, stop: stop, claiming: claiming, stopClaiming: stopClaiming, runs: runs, stopRuns: stopRuns,
		wake: make(chan struct{}, 1), running: map[string]context.CancelFunc{}}
	if kind == "postgres" {
		err = s.openPostgres(cfg.URL)
	} else {
		if path == "" {
			if cfg.Dir == "" {
				stop()
				return nil, errors.New("jobs: no data directory")
			}
			path = filepath.Join(cfg.Dir, "jobs.db")
		}
		err = s.openSQLite(path)
	}
	if err != nil {
		stop()
		return nil, err
	}
	if _, err := s.Prune(context.Background()); err != nil {
		s.Close()
		return nil, err
	}
	if _, err := s.PruneResponses(context.Background()); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Shared reports whether other servers share the store (PostgreSQL).
func (s *Store) Shared() bool { return s.pg }

// Close stops the workers (a job they are running goes back to the
// queue), pushes the last usage counts, then closes the database and
// unlocks the directory.
func (s *Store) Close() error {
	s.stop()
	s.workers.Wait()
	s.loops.Wait()
	s.flushUsage(context.Background())
	err := s.b.close()
	if s.lock != nil {
		if lerr := s.lock.Close(); err == nil {
			err = lerr
		}
	}
	return err
}

// q rewrites a query's ? placeholders as PostgreSQL's $1, $2 … (no query
// here has a ? inside a string literal).
func (s *Store) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ErrUnavailable: the database cannot be reached (PostgreSQL stopped or
// unreachable); the caller may try again later.
var ErrUnavailable = errors.New("the job database is unavailable")

// dbErr wraps a database error with what was being done, marking those
// that mean the database cannot be reached with ErrUnavailable.
func (s *Store) dbErr(op string, err error) error {
	if s.pg && unreachable(err) {
		return fmt.Errorf("%s: %w (%v)", op, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// newID is a new random job id.
func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Submit stores a new queued job of no particular model (SubmitModel).
func (s *Store) Submit(ctx context.Context, typ, owner string, request []byte) (*Job, error) {
	return s.SubmitModel(ctx, typ, owner, "", request)
}

// SubmitModel stores a new queued job that runs on model; it is durable
// when SubmitModel returns. An owner with MaxQueuedPerOwner jobs queued
// already gets ErrQuota: the count and the insert are atomic, so
// concurrent submissions cannot overshoot the quota. A database disk
// below MinFreeDisk (with the request) refuses it with ErrDiskLow.
func (s *Store) SubmitModel(ctx context.Context, typ, owner, model string, request []byte) (*Job, error) {
	if request == nil {
		request = []byte{}
	}
	if err := s.checkDisk(int64(len(request))); err != nil {
		return nil, err
	}
	quota := int64(s.cfg.MaxQueuedPerOwner)
	if quota <= 0 {
		quota = math.MaxInt64
	}
	j := &Job{ID: newID(), Type: typ, Owner: owner, Model: modelKey(model), State: Queued, Request: request, CreatedAt: time.Now().UTC()}
	ok, err := s.b.submit(ctx, j, quota)
	if err != nil {
		return nil, s.dbErr("submit job", err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: at most %d may wait per owner", ErrQuota, quota)
	}
	s.poke()
	return j, nil
}

// modelKey is the form of a model name that claims compare: lower case,
// without the default ":latest" tag.
func modelKey(m string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(m)), ":latest")
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
	j, err := scanJob(s.db.QueryRowContext(ctx, s.q(`SELECT `+columns+` FROM jobs WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, s.dbErr("get job "+id, err)
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
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT seq, id, type, owner, state, request, NULL, error, attempts, created_at, started_at, finished_at
		FROM jobs WHERE `+strings.Join(where, " AND ")+` ORDER BY seq DESC LIMIT ?`), append(args, limit+1)...)
	if err != nil {
		return nil, "", s.dbErr("list jobs", err)
	}
	defer rows.Close()
	var out []*Job
	var seqs []int64
	for rows.Next() {
		var seq int64
		j, err := scanJob(seqScanner{rows, &seq})
		if err != nil {
			return nil, "", s.dbErr("list jobs", err)
		}
		out, seqs = append(out, j), append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.dbErr("list jobs", err)
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
		return nil, s.dbErr("count jobs", err)
	}
	defer rows.Close()
	out := map[State]int{}
	for rows.Next() {
		var st State
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, s.dbErr("count jobs", err)
		}
		out[st] = n
	}
	return out, rows.Err()
}

// stopLocal stops the run of job id if this server runs it.
func (s *Store) stopLocal(id string) {
	s.mu.Lock()
	if cancel := s.running[id]; cancel != nil {
		cancel()
	}
	s.mu.Unlock()
}

// Cancel cancels a queued or running job (a running one stops at its
// next step) and returns it; a finished job is returned with ErrFinished.
func (s *Store) Cancel(ctx context.Context, id string) (*Job, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE jobs SET state = 'cancelled', finished_at = ?, error = 'cancelled'
		WHERE id = ? AND state IN ('queued', 'running')`), time.Now().UnixNano(), id)
	if err != nil {
		return nil, s.dbErr("cancel job "+id, err)
	}
	n, _ := res.RowsAffected()
	if n == 1 {
		s.stopLocal(id)
		s.b.cancelled(ctx, id) // the server running it may be another
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
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM jobs WHERE finished_at > 0 AND finished_at < ?`),
		time.Now().Add(-s.cfg.Retention).UnixNano())
	if err != nil {
		return 0, s.dbErr("prune jobs", err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		slog.Info("pruned finished jobs", "jobs", n, "retention", s.cfg.Retention)
	}
	return n, nil
}
