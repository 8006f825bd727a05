package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// notifyChannel is the LISTEN/NOTIFY channel of job events: "job" when a
// job was queued (idle workers look), "cancel:<id>" when one was
// cancelled (the server running it stops it at once).
const notifyChannel = "tadpole_jobs"

// pgBackend is a queue that several servers share in PostgreSQL. A
// server claims a job with SELECT … FOR UPDATE SKIP LOCKED (so two never
// take the same one), holds it by a lease it renews, and presents the
// claim's token to write the outcome; a job whose lease ran out (its
// server died) is claimed again by another.
type pgBackend struct {
	s      *Store
	cc     *pgx.ConnConfig
	models []string // the models this server claims jobs of (nil: any)
}

// openPostgres connects (an unreachable database fails here, the URL
// named without its password), migrates the schema and listens for
// job events.
func (s *Store) openPostgres(raw string) error {
	where := Redact(raw)
	cc, err := pgx.ParseConfig(raw)
	if err != nil {
		return fmt.Errorf("database %s: %v", where, redactErr(err, raw))
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = 5 * time.Second
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "tadpole"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("cannot reach the job database at %s: %v", where, redactErr(err, raw))
	}
	err = migrate(ctx, conn)
	conn.Close(context.Background())
	if err != nil {
		return fmt.Errorf("job database %s: %w", where, err)
	}
	db := stdlib.OpenDB(*cc)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	b := &pgBackend{s: s, cc: cc}
	for _, m := range s.cfg.Models {
		if m = modelKey(m); m != "" {
			b.models = append(b.models, m)
		}
	}
	s.db, s.b, s.pg = db, b, true
	s.loops.Add(1)
	go b.listen()
	slog.Info("job database: PostgreSQL", "url", where, "replica", s.cfg.Replica, "lease", s.cfg.Lease,
		"models", strings.Join(b.models, ","))
	return nil
}

// redactErr is err's text without the URL's password, should a driver
// message ever quote it.
func redactErr(err error, raw string) string {
	msg := err.Error()
	if cc, perr := pgconn.ParseConfig(raw); perr == nil && cc.Password != "" {
		msg = strings.ReplaceAll(msg, cc.Password, "xxxxx")
	}
	return msg
}

// unreachable reports whether a PostgreSQL error means the database
// cannot be reached now (rather than a statement it refused): anything
// but the server's own answer, or its connection, shutdown and resource
// errors. A request's own cancellation is not.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, sql.ErrNoRows) || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:min(2, len(pe.Code))] {
		case "08", "57", "53": // connection exception, operator intervention (shutdown), insufficient resources
			return true
		}
		return false
	}
	return true
}

func (b *pgBackend) submit(ctx context.Context, j *Job, quota int64) (bool, error) {
	tx, err := b.s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	// The owner's submissions take turns, so the count and the insert
	// are atomic across servers.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('tadpole_jobs_owner:' || $1))`, j.Owner); err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, type, owner, model, state, request, created_at)
		SELECT $1, $2, $3, $4, $5, $6, $7 WHERE (SELECT COUNT(*) FROM jobs WHERE owner = $3 AND state = 'queued') < $8`,
		j.ID, j.Type, j.Owner, j.Model, j.State, j.Request, j.CreatedAt.UnixNano(), quota)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, 'job')`, notifyChannel); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

func (b *pgBackend) claim(ctx context.Context) (*Job, string, error) {
	s := b.s
	// A job whose lease ran out MaxAttempts times (its server died
	// running it each time) fails rather than take down one more server.
	// Failing is final, so the lease must have run out by a whole lease
	// more: a live server whose renewals lag (a busy machine) loses the
	// job to a retry at worst, never to this.
	res, err := s.db.ExecContext(ctx, `UPDATE jobs SET state = 'failed', finished_at = $1, lease_token = '', lease_until = NULL,
		error = `+diedMessage+`
		WHERE state = 'running' AND lease_until < now() - $3::bigint * interval '1 millisecond' AND attempts >= $2`,
		time.Now().UnixNano(), s.cfg.MaxAttempts, s.cfg.Lease.Milliseconds())
	if err != nil {
		return nil, "", err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		slog.Warn("jobs interrupted too often failed", "jobs", n)
	}
	// A job at MaxAttempts whose lease ran out is not taken over: it
	// fails above once the grace has passed.
	filter, args := "", []any{time.Now().UnixNano(), newID(), s.cfg.Replica, s.cfg.Lease.Milliseconds(), s.cfg.MaxAttempts}
	if b.models != nil {
		filter, args = ` AND (model = '' OR model = ANY($6))`, append(args, b.models)
	}
	var token string
	j, err := scanJob(tailScanner{s.db.QueryRowContext(ctx, `UPDATE jobs SET state = 'running', started_at = $1, attempts = attempts + 1,
			lease_token = $2, lease_owner = $3, lease_until = now() + $4::bigint * interval '1 millisecond'
		WHERE seq = (SELECT seq FROM jobs
			WHERE (state = 'queued' OR (state = 'running' AND lease_until < now() AND attempts < $5))`+filter+`
			ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+columns+`, lease_token`, args...), &token})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	if j.Attempts > 1 {
		slog.Info("job claimed again", "id", j.ID, "attempt", j.Attempts)
	}
	return j, token, nil
}

// tailScanner scans a job, then one more column.
type tailScanner struct {
	row  scanner
	tail any
}

func (t tailScanner) Scan(dest ...any) error { return t.row.Scan(append(dest, t.tail)...) }

func (b *pgBackend) renew(ctx context.Context, id, token string) (bool, error) {
	res, err := b.s.db.ExecContext(ctx, `UPDATE jobs SET lease_until = now() + $3::bigint * interval '1 millisecond'
		WHERE id = $1 AND lease_token = $2 AND state = 'running'`, id, token, b.s.cfg.Lease.Milliseconds())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (b *pgBackend) finish(ctx context.Context, id, token string, st State, result []byte, msg string) (bool, error) {
	res, err := b.s.db.ExecContext(ctx, `UPDATE jobs SET state = $3, result = $4, error = $5, finished_at = $6, lease_token = '', lease_until = NULL
		WHERE id = $1 AND lease_token = $2 AND state = 'running'`, id, token, st, result, msg, time.Now().UnixNano())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (b *pgBackend) requeue(ctx context.Context, id, token string) (bool, error) {
	res, err := b.s.db.ExecContext(ctx, `UPDATE jobs SET state = 'queued', started_at = 0, attempts = attempts - 1,
			lease_token = '', lease_owner = '', lease_until = NULL
		WHERE id = $1 AND lease_token = $2 AND state = 'running'`, id, token)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if n == 1 {
		b.notify(ctx, "job")
	}
	return n == 1, err
}

func (b *pgBackend) cancelled(ctx context.Context, id string) { b.notify(ctx, "cancel:"+id) }

func (b *pgBackend) notify(ctx context.Context, payload string) {
	if _, err := b.s.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, payload); err != nil {
		slog.Debug("notify", "error", err)
	}
}

// pollEvery: an idle worker looks at least once a lease for jobs whose
// lease ran out, which no notification announces.
func (b *pgBackend) pollEvery() time.Duration { return min(10*time.Second, b.s.cfg.Lease) }

func (b *pgBackend) close() error { return b.s.db.Close() }

// listen holds a connection LISTENing to job events until the store
// closes, reconnecting after the database went away: a queued job wakes
// an idle worker, a cancel stops the run here. After each (re)connection
// the workers look once, for what was queued meanwhile, and the runs
// here cancelled meanwhile stop (stopCancelled).
// stopCancelled stops the runs here whose jobs were cancelled while no
// connection listened: before the first one was up (a worker may claim
// a job before it is), or while it was down. Their notifications went
// to no one, and the lease renewal would stop them only a third of a
// lease later.
func (b *pgBackend) stopCancelled() {
	s := b.s
	s.mu.Lock()
	ids := make([]string, 0, len(s.running))
	for id := range s.running {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		var state string
		err := s.db.QueryRowContext(s.ctx, s.q(`SELECT state FROM jobs WHERE id = ?`), id).Scan(&state)
		if err == nil && state == string(Cancelled) {
			s.stopLocal(id)
		}
	}
}

func (b *pgBackend) listen() {
	s := b.s
	defer s.loops.Done()
	for wait := time.Second; s.ctx.Err() == nil; {
		conn, err := pgx.ConnectConfig(s.ctx, b.cc)
		if err == nil {
			if _, err = conn.Exec(s.ctx, "LISTEN "+notifyChannel); err == nil {
				wait = time.Second
				s.poke()
				b.stopCancelled()
				for {
					var n *pgconn.Notification
					if n, err = conn.WaitForNotification(s.ctx); err != nil {
						break
					}
					if id, ok := strings.CutPrefix(n.Payload, "cancel:"); ok {
						s.stopLocal(id)
					} else {
						s.poke()
					}
				}
			}
			conn.Close(context.Background())
		}
		if s.ctx.Err() != nil {
			return
		}
		slog.Debug("job notifications: reconnecting", "error", err)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}
