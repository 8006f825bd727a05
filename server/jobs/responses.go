package jobs

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"
)

// StoredResponse is one response of OpenAI's Responses API as stored
// (server/responses): the response object as answered (Body, JSON), the
// request that made it (Request, JSON, for a background run), its input
// items (Input) and the conversation before them (Context), both JSON
// arrays of items; a previous_response_id continues from Context, Input
// and the output in Body. Owner is the id of the API key that made it;
// JobID the job of a background response.
type StoredResponse struct {
	ID, Owner, Status, JobID string
	Body, Request            []byte
	Input, Context           []byte
	CreatedAt, ExpiresAt     time.Time
}

// ErrResponseNotFound: no stored response has this id for this owner, or
// it expired.
var ErrResponseNotFound = errors.New("response not found")

func orEmpty(b []byte, empty string) []byte {
	if len(b) == 0 {
		return []byte(empty)
	}
	return b
}

// SaveResponse stores r whole, in one statement, replacing a response of
// the same id and owner (a background response as it progresses). Now
// and then it prunes expired responses.
func (s *Store) SaveResponse(ctx context.Context, r *StoredResponse) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO responses (id, owner, status, job_id, body, request, input, context, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET status = excluded.status, job_id = excluded.job_id, body = excluded.body,
			request = excluded.request, input = excluded.input, context = excluded.context, expires_at = excluded.expires_at
		WHERE responses.owner = excluded.owner`),
		r.ID, r.Owner, r.Status, r.JobID, orEmpty(r.Body, "{}"), orEmpty(r.Request, "{}"), orEmpty(r.Input, "[]"), orEmpty(r.Context, "[]"),
		r.CreatedAt.UnixNano(), r.ExpiresAt.UnixNano())
	if err != nil {
		return s.dbErr("save response "+r.ID, err)
	}
	s.mu.Lock()
	due := time.Since(s.prunedResponses) > time.Hour
	if due {
		s.prunedResponses = time.Now()
	}
	s.mu.Unlock()
	if due {
		if _, err := s.PruneResponses(ctx); err != nil {
			slog.Warn("prune responses", "error", err)
		}
	}
	return nil
}

// UpdateResponse sets a stored response's status and body, unless its
// status is one of final (a response cancelled meanwhile stays so). It
// reports whether it changed the response.
func (s *Store) UpdateResponse(ctx context.Context, id, status string, body []byte, final ...string) (bool, error) {
	q := `UPDATE responses SET status = ?, body = ? WHERE id = ?`
	args := []any{status, orEmpty(body, "{}"), id}
	for _, f := range final {
		q += ` AND status != ?`
		args = append(args, f)
	}
	res, err := s.db.ExecContext(ctx, s.q(q), args...)
	if err != nil {
		return false, s.dbErr("update response "+id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SetResponseJob records the job of a background response.
func (s *Store) SetResponseJob(ctx context.Context, id, jobID string) error {
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE responses SET job_id = ? WHERE id = ?`), jobID, id); err != nil {
		return s.dbErr("update response "+id, err)
	}
	return nil
}

// GetResponse returns the stored response with this id. An owner sees
// only its own responses ("" sees every response: the server has no
// keys); an expired response is not found.
func (s *Store) GetResponse(ctx context.Context, id, owner string) (*StoredResponse, error) {
	var r StoredResponse
	var created, expires int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, owner, status, job_id, body, request, input, context, created_at, expires_at
		FROM responses WHERE id = ? AND expires_at > ?`), id, time.Now().UnixNano()).
		Scan(&r.ID, &r.Owner, &r.Status, &r.JobID, &r.Body, &r.Request, &r.Input, &r.Context, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != "" && r.Owner != owner) {
		return nil, ErrResponseNotFound
	}
	if err != nil {
		return nil, s.dbErr("get response "+id, err)
	}
	r.CreatedAt, r.ExpiresAt = unixTime(created), unixTime(expires)
	return &r, nil
}

// DeleteResponse deletes the owner's stored response with this id
// (ErrResponseNotFound when there is none).
func (s *Store) DeleteResponse(ctx context.Context, id, owner string) error {
	q, args := `DELETE FROM responses WHERE id = ?`, []any{id}
	if owner != "" {
		q, args = q+` AND owner = ?`, append(args, owner)
	}
	res, err := s.db.ExecContext(ctx, s.q(q), args...)
	if err != nil {
		return s.dbErr("delete response "+id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrResponseNotFound
	}
	return nil
}

// PruneResponses deletes the stored responses that expired.
func (s *Store) PruneResponses(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM responses WHERE expires_at <= ?`), time.Now().UnixNano())
	if err != nil {
		return 0, s.dbErr("prune responses", err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		slog.Info("pruned expired responses", "responses", n)
	}
	return n, nil
}
