package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/tadpole-llm/tadpole/server/usage"
)

// UsageEvery is how often a shared store pools the per-key usage counts.
const UsageEvery = 5 * time.Second

// ShareUsage pools t's per-key counts with the other servers' in a
// shared store (PostgreSQL), every UsageEvery and at Close, so that the
// metrics of any server show every server's totals. A store of one
// server (SQLite) leaves t as it is. Call it once, before Start.
func (s *Store) ShareUsage(t *usage.Table) {
	if !s.pg || t == nil {
		return
	}
	s.usage = t
	t.Share(s)
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		tick := time.NewTicker(UsageEvery)
		defer tick.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-tick.C:
				s.flushUsage(s.ctx)
			}
		}
	}()
}

// flushUsage pools the usage counts now, if they are shared; counts the
// database did not take stay for the next time.
func (s *Store) flushUsage(ctx context.Context) {
	if s.usage == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	if err := s.usage.Flush(ctx); err != nil {
		slog.Debug("share usage counts", "error", err)
	}
}

// usageBatchesKept is how long a batch id is remembered: a retry comes
// within seconds (the next flush), and the table stays small.
const usageBatchesKept = 24 * time.Hour

// AddUsage adds per-key counts to the shared totals, once per batch id
// (usage.Sink): the id is recorded in the same transaction, and a batch
// whose id is there already (its commit went through, its
// acknowledgement did not) adds nothing.
func (s *Store) AddUsage(ctx context.Context, batch string, deltas []usage.Snapshot) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr("add usage", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO usage_batches (id, applied_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`), batch, time.Now().Unix())
	if err != nil {
		return s.dbErr("add usage", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.dbErr("add usage", err)
	} else if n == 0 {
		return nil // added before
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM usage_batches WHERE applied_at < ?`), time.Now().Add(-usageBatchesKept).Unix()); err != nil {
		return s.dbErr("add usage", err)
	}
	for _, d := range deltas {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO key_usage (key, requests, rate_limited, tokens_in, tokens_out) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET requests = key_usage.requests + excluded.requests,
				rate_limited = key_usage.rate_limited + excluded.rate_limited,
				tokens_in = key_usage.tokens_in + excluded.tokens_in, tokens_out = key_usage.tokens_out + excluded.tokens_out`),
			d.Key, d.Requests, d.RateLimited, d.TokensIn, d.TokensOut)
		if err != nil {
			return s.dbErr("add usage", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr("add usage", err)
	}
	return nil
}

// UsageTotals reads every key's shared totals (usage.Sink).
func (s *Store) UsageTotals(ctx context.Context) ([]usage.Snapshot, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key, requests, rate_limited, tokens_in, tokens_out FROM key_usage ORDER BY key`)
	if err != nil {
		return nil, s.dbErr("read usage", err)
	}
	defer rows.Close()
	var out []usage.Snapshot
	for rows.Next() {
		var u usage.Snapshot
		if err := rows.Scan(&u.Key, &u.Requests, &u.RateLimited, &u.TokensIn, &u.TokensOut); err != nil {
			return nil, s.dbErr("read usage", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
