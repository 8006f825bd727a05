package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// sqliteSchema is created when missing; SQLite databases had this one
// shape until stored responses became chains (upgradeSQLite).
const sqliteSchema = `
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
CREATE TABLE IF NOT EXISTS responses (
	id         TEXT PRIMARY KEY,
	owner      TEXT NOT NULL DEFAULT '',
	status     TEXT NOT NULL,
	job_id     TEXT NOT NULL DEFAULT '',
	body       BLOB NOT NULL,
	request    BLOB NOT NULL,
	input      BLOB NOT NULL,
	context    BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_expiry ON responses(expires_at);
`

// sqliteBackend is one server's queue in an embedded SQLite file. The
// directory lock keeps other servers out, so a claim needs no lease: its
// token is the attempt number, and jobs a crash left running are queued
// again when the store opens.
type sqliteBackend struct {
	s *Store
}

// openSQLite opens (creating) the database file at path and locks its
// directory: Dir/LOCK for the default file, path.lock for another.
func (s *Store) openSQLite(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	lockName := filepath.Join(dir, "LOCK")
	if filepath.Base(path) != "jobs.db" {
		lockName = path + ".lock"
	}
	lock, err := lockFile(lockName, dir)
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		lock.Close()
		return fmt.Errorf("open %s: %w", path, err)
	}
	// One connection: every statement is atomic with respect to the
	// others, and writes never wait on SQLite's busy handler.
	db.SetMaxOpenConns(1)
	s.db, s.lock, s.b = db, lock, &sqliteBackend{s: s}
	if err := s.recoverSQLite(); err != nil {
		db.Close()
		lock.Close()
		return fmt.Errorf("open %s: %w", path, err)
	}
	return nil
}

// recoverSQLite creates (or upgrades) the tables and deals with the jobs
// the previous process left running (recoverDied).
func (s *Store) recoverSQLite() error {
	if _, err := s.db.Exec(sqliteSchema); err != nil {
		return err
	}
	if err := s.upgradeSQLite(); err != nil { // responses_schema.go
		return err
	}
	return s.recoverDied() // died.go
}

func (b *sqliteBackend) submit(ctx context.Context, j *Job, quota int64) (bool, error) {
	res, err := b.s.db.ExecContext(ctx, `INSERT INTO jobs (id, type, owner, state, request, created_at)
		SELECT ?, ?, ?, ?, ?, ? WHERE (SELECT COUNT(*) FROM jobs WHERE owner = ? AND state = 'queued') < ?`,
		j.ID, j.Type, j.Owner, j.State, j.Request, j.CreatedAt.UnixNano(), j.Owner, quota)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (b *sqliteBackend) claim(ctx context.Context) (*Job, string, error) {
	j, err := scanJob(b.s.db.QueryRowContext(ctx, `UPDATE jobs SET state = 'running', started_at = ?, attempts = attempts + 1
		WHERE seq = (SELECT seq FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1)
		RETURNING `+columns, time.Now().UnixNano()))
	if err == sql.ErrNoRows {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return j, strconv.Itoa(j.Attempts), nil
}

// renew: one server holds every claim until it stops; a cancel reaches
// the run directly.
func (b *sqliteBackend) renew(context.Context, string, string) (bool, error) { return true, nil }

func (b *sqliteBackend) finish(ctx context.Context, id, token string, st State, result []byte, msg string) (bool, error) {
	res, err := b.s.db.ExecContext(ctx, `UPDATE jobs SET state = ?, result = ?, error = ?, finished_at = ?
		WHERE id = ? AND state = 'running' AND attempts = ?`, st, result, msg, time.Now().UnixNano(), id, token)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (b *sqliteBackend) requeue(ctx context.Context, id, token string) (bool, error) {
	res, err := b.s.db.ExecContext(ctx, `UPDATE jobs SET state = 'queued', started_at = 0, attempts = attempts - 1
		WHERE id = ? AND state = 'running' AND attempts = ?`, id, token)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (b *sqliteBackend) cancelled(context.Context, string) {}

func (b *sqliteBackend) pollEvery() time.Duration { return 10 * time.Second }

func (b *sqliteBackend) close() error { return b.s.db.Close() }
