package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
)

// pgMigrations are the PostgreSQL schema's versions: applying
// pgMigrations[i] takes a database from version i to i+1. A released
// migration is never edited; a change is a new one at the end.
var pgMigrations = []string{
	// 1: jobs (with the model claims filter on, and the claim's lease),
	// stored responses, per-key usage.
	`CREATE TABLE jobs (
		seq         BIGSERIAL PRIMARY KEY,
		id          TEXT NOT NULL UNIQUE,
		type        TEXT NOT NULL,
		owner       TEXT NOT NULL DEFAULT '',
		model       TEXT NOT NULL DEFAULT '',
		state       TEXT NOT NULL,
		request     BYTEA NOT NULL,
		result      BYTEA,
		error       TEXT NOT NULL DEFAULT '',
		attempts    INTEGER NOT NULL DEFAULT 0,
		created_at  BIGINT NOT NULL,
		started_at  BIGINT NOT NULL DEFAULT 0,
		finished_at BIGINT NOT NULL DEFAULT 0,
		lease_token TEXT NOT NULL DEFAULT '',
		lease_owner TEXT NOT NULL DEFAULT '',
		lease_until TIMESTAMPTZ
	);
	CREATE INDEX jobs_queued ON jobs(seq) WHERE state = 'queued';
	CREATE INDEX jobs_leases ON jobs(lease_until) WHERE state = 'running';
	CREATE INDEX jobs_finished ON jobs(finished_at) WHERE finished_at > 0;
	CREATE INDEX jobs_owner ON jobs(owner, state);
	CREATE TABLE responses (
		id         TEXT PRIMARY KEY,
		owner      TEXT NOT NULL DEFAULT '',
		status     TEXT NOT NULL,
		job_id     TEXT NOT NULL DEFAULT '',
		body       BYTEA NOT NULL,
		request    BYTEA NOT NULL,
		input      BYTEA NOT NULL,
		context    BYTEA NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL
	);
	CREATE INDEX responses_expiry ON responses(expires_at);
	CREATE TABLE key_usage (
		key          TEXT PRIMARY KEY,
		requests     BIGINT NOT NULL DEFAULT 0,
		rate_limited BIGINT NOT NULL DEFAULT 0,
		tokens_in    BIGINT NOT NULL DEFAULT 0,
		tokens_out   BIGINT NOT NULL DEFAULT 0
	);`,
	// 2: the usage batches added (a retried batch is not added twice).
	`CREATE TABLE usage_batches (
		id         TEXT PRIMARY KEY,
		applied_at BIGINT NOT NULL
	);
	CREATE INDEX usage_batches_applied ON usage_batches(applied_at);`,
	// 3: stored responses as chains, images stored once per key
	// (responses_schema.go).
	fmt.Sprintf(responsesChains, "BYTEA"),
}

// SchemaVersion is the newest PostgreSQL schema this build knows.
var SchemaVersion = len(pgMigrations)

// ErrNewerSchema: the database was migrated by a newer Tadpole; this one
// refuses to use it rather than write to a schema it does not know.
var ErrNewerSchema = errors.New("the database schema is newer than this Tadpole knows")

// migrationLock is the advisory lock servers starting together take in
// turn, so that one migrates and the others find the work done.
const migrationLock = 0x7461647030 // "tadp0"

// migrate brings the schema to SchemaVersion, one transaction per
// version recorded in schema_migrations. A database at a newer version
// is refused before anything is written.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("lock for migration: %w", err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, migrationLock)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	version := 0
	if exists {
		if err := conn.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
	}
	if version > SchemaVersion {
		return fmt.Errorf("%w: it is at version %d, this Tadpole knows versions up to %d (a newer Tadpole migrated it); run that version or a newer one — nothing was written",
			ErrNewerSchema, version, SchemaVersion)
	}
	for v := version + 1; v <= SchemaVersion; v++ {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return fmt.Errorf("migrate to version %d: %w", v, err)
		}
		if _, err = tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err == nil {
			if _, err = tx.Exec(ctx, pgMigrations[v-1]); err == nil {
				_, err = tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v)
			}
		}
		if err == nil {
			err = tx.Commit(ctx)
		}
		if err != nil {
			tx.Rollback(context.Background())
			return fmt.Errorf("migrate to version %d: %w", v, err)
		}
		slog.Info("job database migrated", "version", v)
	}
	return nil
}
