package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server/jobs"
)

// dbFlags are the serve flags of the job database: SQLite in the data
// directory (one server), or PostgreSQL shared by replicas.
type dbFlags struct {
	url, lease, models *string
	// stored responses: the bound of one, the quota of a key
	maxStored, quotaBytes *string
	quotaCount            *int64
}

func addDBFlags(fs *pflag.FlagSet) *dbFlags {
	return &dbFlags{
		url: fs.String("database-url", env("TADPOLE_DATABASE_URL", ""),
			"database of jobs, stored responses and (with PostgreSQL) per-key usage: sqlite:///path/jobs.db (default: jobs.db in --data-dir), or postgres://user:password@host:5432/db to share them between replicas (TADPOLE_DATABASE_URL)"),
		lease: fs.String("job-lease", env("TADPOLE_JOB_LEASE", jobs.DefaultLease.String()),
			"PostgreSQL: how long a replica holds a running job without renewing (renewed every third of it); a dead replica's jobs run elsewhere after it (TADPOLE_JOB_LEASE)"),
		models: fs.String("job-models", env("TADPOLE_JOB_MODELS", ""),
			"PostgreSQL: comma-separated models whose jobs this replica runs; empty: every job (TADPOLE_JOB_MODELS)"),
		maxStored: fs.String("max-stored-response", env("TADPOLE_MAX_STORED_RESPONSE", "32MiB"),
			"largest stored response of /v1/responses (its input, output and images); larger ones get 400 unless sent with store: false; 0: no bound (TADPOLE_MAX_STORED_RESPONSE)"),
		quotaBytes: fs.String("responses-quota-bytes", env("TADPOLE_RESPONSES_QUOTA_BYTES", "1GiB"),
			"bytes of stored responses and their images per API key (all clients share one quota without keys); more get 400; 0: no quota (TADPOLE_RESPONSES_QUOTA_BYTES)"),
		quotaCount: fs.Int64("responses-quota-count", int64(envInt("TADPOLE_RESPONSES_QUOTA_COUNT", 100000)),
			"stored responses per API key (all clients share one quota without keys); more get 400; 0: no quota (TADPOLE_RESPONSES_QUOTA_COUNT)"),
	}
}

// apply puts the database flags in c and returns where the database is,
// for the log (a URL without its password).
func (f *dbFlags) apply(c *jobs.Config) (string, error) {
	kind, path, err := jobs.ParseURL(*f.url)
	if err != nil {
		return "", fmt.Errorf("--database-url: %w", err)
	}
	lease, err := time.ParseDuration(*f.lease)
	if err != nil || lease < time.Second {
		return "", fmt.Errorf("--job-lease: want a duration of 1s or more, such as 30s, not %q", *f.lease)
	}
	c.URL, c.Lease, c.Models = *f.url, lease, splitList(*f.models)
	if c.MaxResponseBytes, err = parseSize("--max-stored-response", *f.maxStored); err != nil {
		return "", err
	}
	if c.ResponseQuotaBytes, err = parseSize("--responses-quota-bytes", *f.quotaBytes); err != nil {
		return "", err
	}
	if c.ResponseQuotaCount = *f.quotaCount; c.ResponseQuotaCount < 0 {
		return "", fmt.Errorf("--responses-quota-count must be 0 (no quota) or more, not %d", c.ResponseQuotaCount)
	}
	switch {
	case kind == "postgres":
		return jobs.Redact(*f.url), nil
	case len(c.Models) > 0:
		slog.Warn("--job-models applies to a PostgreSQL database only: this server runs every job")
	}
	if path == "" {
		return "sqlite in " + c.Dir, nil
	}
	return "sqlite " + path, nil
}
