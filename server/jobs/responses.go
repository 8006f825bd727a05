package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// StoredResponse is one response of OpenAI's Responses API as stored
// (server/responses): the response object as answered (Body, JSON), the
// request that made it (Request, JSON, for a background run, without its
// input), its own input items (Input, a JSON array) and Prev, the id of
// the response it continues. A conversation is the chain of responses
// Prev links (ResponseChain), each stored once, so that a conversation of
// n turns takes space in n, not n². Context is the conversation before
// Input as responses stored before the chain carried it whole (kept
// readable: such a response starts its chain). Images are the images its
// input items refer to by hash, stored once per owner (SaveResponse).
// Owner is the id of the API key that made it; JobID the job of a
// background response.
type StoredResponse struct {
	ID, Owner, Status, JobID string
	Prev                     string
	Body, Request            []byte
	Input, Context           []byte
	Images                   []StoredImage
	CreatedAt, ExpiresAt     time.Time
}

// StoredImage is an image of stored input items: its bytes, its media
// type and Hash, the key the items refer to it by (one owner's image is
// stored once however many responses refer to it).
type StoredImage struct {
	Hash, MIME string
	Data       []byte
}

var (
	// ErrResponseNotFound: no stored response has this id for this
	// owner, or it expired.
	ErrResponseNotFound = errors.New("response not found")
	// ErrResponseTooLarge: one response is larger than
	// Config.MaxResponseBytes.
	ErrResponseTooLarge = errors.New("response too large to store")
	// ErrResponseQuota: storing the response would take its owner past
	// Config.ResponseQuotaBytes or ResponseQuotaCount.
	ErrResponseQuota = errors.New("stored responses quota exceeded")
)

func orEmpty(b []byte, empty string) []byte {
	if len(b) == 0 {
		return []byte(empty)
	}
	return b
}

// size is the bytes the response's row takes (its images apart).
func (r *StoredResponse) size() int64 {
	return int64(len(orEmpty(r.Body, "{}")) + len(orEmpty(r.Request, "{}")) + len(orEmpty(r.Input, "[]")) + len(orEmpty(r.Context, "[]")))
}

// imageBytes is the bytes of r's distinct images.
func (r *StoredResponse) imageBytes() int64 {
	seen := map[string]bool{}
	var n int64
	for _, im := range r.Images {
		if !seen[im.Hash] {
			seen[im.Hash] = true
			n += int64(len(im.Data))
		}
	}
	return n
}

// queryer is a database or a transaction.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// checkResponse refuses r when it is larger than MaxResponseBytes, when
// the disk of the database is below MinFreeDisk, or when it would take
// its owner past the quota (the images its owner stores already, and
// the row it replaces, not counted again).
func (s *Store) checkResponse(ctx context.Context, q queryer, r *StoredResponse) error {
	size := r.size() + r.imageBytes()
	if max := s.cfg.MaxResponseBytes; max > 0 && size > max {
		return fmt.Errorf("%w: %d bytes (input, output and images), the server stores at most %d per response (--max-stored-response)",
			ErrResponseTooLarge, size, max)
	}
	if err := s.checkDisk(size); err != nil {
		return err
	}
	maxBytes, maxCount := s.cfg.ResponseQuotaBytes, s.cfg.ResponseQuotaCount
	if maxBytes <= 0 && maxCount <= 0 {
		return nil
	}
	var used, count, images int64
	if err := q.QueryRowContext(ctx, s.q(`SELECT COALESCE(SUM(size), 0), COUNT(*) FROM responses WHERE owner = ? AND id != ?`), r.Owner, r.ID).
		Scan(&used, &count); err != nil {
		return s.dbErr("count stored responses", err)
	}
	if maxCount > 0 && count+1 > maxCount {
		return fmt.Errorf("%w: this key stores %d responses, at most %d (--responses-quota-count); delete some or send store: false",
			ErrResponseQuota, count, maxCount)
	}
	if maxBytes <= 0 {
		return nil
	}
	if err := q.QueryRowContext(ctx, s.q(`SELECT COALESCE(SUM(size), 0) FROM response_images WHERE owner = ?`), r.Owner).Scan(&images); err != nil {
		return s.dbErr("count stored images", err)
	}
	add := r.size()
	seen := map[string]bool{}
	for _, im := range r.Images {
		if seen[im.Hash] {
			continue
		}
		seen[im.Hash] = true
		var one int
		err := q.QueryRowContext(ctx, s.q(`SELECT 1 FROM response_images WHERE owner = ? AND hash = ?`), r.Owner, im.Hash).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			add += int64(len(im.Data))
		} else if err != nil {
			return s.dbErr("look up a stored image", err)
		}
	}
	if used+images+add > maxBytes {
		return fmt.Errorf("%w: this key stores %d bytes of responses and images, this one adds %d, at most %d (--responses-quota-bytes); delete some or send store: false",
			ErrResponseQuota, used+images, add, maxBytes)
	}
	return nil
}

// CheckResponse tells whether r could be stored now (its size, the
// disk, its owner's quota), so that a response that cannot be stored is
// refused before it is generated. SaveResponse checks again.
func (s *Store) CheckResponse(ctx context.Context, r *StoredResponse) error {
	return s.checkResponse(ctx, s.db, r)
}

// SaveResponse stores r, replacing a response of the same id and owner (a
// background response as it progresses; the id of another owner's is
// left alone), with its images (those its owner stores already are not
// written again), in one transaction. It is refused as CheckResponse
// says. Now and then it prunes expired responses.
func (s *Store) SaveResponse(ctx context.Context, r *StoredResponse) error {
	if err := s.saveResponse(ctx, r); err != nil {
		return err
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

func (s *Store) saveResponse(ctx context.Context, r *StoredResponse) error {
	op := "save response " + r.ID
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr(op, err)
	}
	defer tx.Rollback()
	if s.pg { // one owner's saves in turn, so that its quota holds
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "tadpole responses of "+r.Owner); err != nil {
			return s.dbErr(op, err)
		}
	}
	var owner string
	switch err := tx.QueryRowContext(ctx, s.q(`SELECT owner FROM responses WHERE id = ?`), r.ID).Scan(&owner); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return s.dbErr(op, err)
	case owner != r.Owner:
		return nil // another owner's id: left alone
	}
	if err := s.checkResponse(ctx, tx, r); err != nil {
		return err
	}
	for _, im := range r.Images {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO response_images (owner, hash, mime, data, size) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (owner, hash) DO NOTHING`), r.Owner, im.Hash, im.MIME, im.Data, len(im.Data)); err != nil {
			return s.dbErr(op, err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO response_image_refs (response_id, owner, hash) VALUES (?, ?, ?)
			ON CONFLICT (response_id, hash) DO NOTHING`), r.ID, r.Owner, im.Hash); err != nil {
			return s.dbErr(op, err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO responses (id, owner, status, job_id, prev, body, request, input, context, size, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET status = excluded.status, job_id = excluded.job_id, prev = excluded.prev, body = excluded.body,
			request = excluded.request, input = excluded.input, context = excluded.context, size = excluded.size, expires_at = excluded.expires_at
		WHERE responses.owner = excluded.owner`),
		r.ID, r.Owner, r.Status, r.JobID, r.Prev, orEmpty(r.Body, "{}"), orEmpty(r.Request, "{}"), orEmpty(r.Input, "[]"), orEmpty(r.Context, "[]"),
		r.size(), r.CreatedAt.UnixNano(), r.ExpiresAt.UnixNano()); err != nil {
		return s.dbErr(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr(op, err)
	}
	return nil
}

// UpdateResponse sets a stored response's status and body, unless its
// status is one of final (a response cancelled meanwhile stays so). It
// reports whether it changed the response.
func (s *Store) UpdateResponse(ctx context.Context, id, status string, body []byte, final ...string) (bool, error) {
	body = orEmpty(body, "{}")
	q := `UPDATE responses SET status = ?, body = ?, size = size - length(body) + ? WHERE id = ?`
	args := []any{status, body, len(body), id}
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

const responseColumns = `id, owner, status, job_id, prev, body, request, input, context, created_at, expires_at`

func scanResponse(row scanner, extra ...any) (*StoredResponse, error) {
	var r StoredResponse
	var created, expires int64
	err := row.Scan(append([]any{&r.ID, &r.Owner, &r.Status, &r.JobID, &r.Prev, &r.Body, &r.Request, &r.Input, &r.Context, &created, &expires}, extra...)...)
	if err != nil {
		return nil, err
	}
	r.CreatedAt, r.ExpiresAt = unixTime(created), unixTime(expires)
	return &r, nil
}

// GetResponse returns the stored response with this id (without its
// images: ResponseImages). An owner sees only its own responses (""
// sees every response: the server has no keys); an expired or deleted
// response is not found.
func (s *Store) GetResponse(ctx context.Context, id, owner string) (*StoredResponse, error) {
	r, err := scanResponse(s.db.QueryRowContext(ctx, s.q(`SELECT `+responseColumns+`
		FROM responses WHERE id = ? AND expires_at > ? AND hidden = 0`), id, time.Now().UnixNano()))
	if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != "" && r.Owner != owner) {
		return nil, ErrResponseNotFound
	}
	if err != nil {
		return nil, s.dbErr("get response "+id, err)
	}
	return r, nil
}

// MaxChain bounds the responses of one conversation ResponseChain reads.
const MaxChain = 1 << 14

// ResponseChain returns the conversation that ends with the response id:
// it and the responses it continues (Prev), oldest first, in one query.
// The last, id, must be one the owner may see (GetResponse); those before
// it are returned even if they were deleted or expired since (a
// conversation keeps what it continues: DeleteResponse, PruneResponses).
func (s *Store) ResponseChain(ctx context.Context, id, owner string) ([]*StoredResponse, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`WITH RECURSIVE chain(id, depth) AS (
			SELECT id, 0 FROM responses WHERE id = ? AND expires_at > ? AND hidden = 0
			UNION ALL
			SELECT r.prev, c.depth + 1 FROM responses r JOIN chain c ON r.id = c.id WHERE r.prev != '' AND c.depth < ?
		)
		SELECT `+prefixed("r.", responseColumns)+`, c.depth FROM chain c JOIN responses r ON r.id = c.id ORDER BY c.depth DESC`),
		id, time.Now().UnixNano(), MaxChain)
	if err != nil {
		return nil, s.dbErr("read the conversation of "+id, err)
	}
	defer rows.Close()
	var out []*StoredResponse
	depth := -1
	for rows.Next() {
		var d int
		r, err := scanResponse(rows, &d)
		if err != nil {
			return nil, s.dbErr("read the conversation of "+id, err)
		}
		if depth < 0 {
			depth = d
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("read the conversation of "+id, err)
	}
	if len(out) == 0 || out[len(out)-1].ID != id || (owner != "" && out[len(out)-1].Owner != owner) {
		return nil, ErrResponseNotFound
	}
	if len(out) != depth+1 || out[0].Prev != "" {
		return nil, fmt.Errorf("the conversation of %s is incomplete (%d responses found of %d, or longer than %d)", id, len(out), depth+1, MaxChain)
	}
	for _, r := range out {
		if owner != "" && r.Owner != owner {
			return nil, ErrResponseNotFound
		}
	}
	return out, nil
}

func prefixed(p, cols string) string {
	parts := strings.Split(cols, ", ")
	for i := range parts {
		parts[i] = p + parts[i]
	}
	return strings.Join(parts, ", ")
}

// ResponseImages returns the owner's stored images of these hashes, by
// hash (a hash it does not store is missing from the map).
func (s *Store) ResponseImages(ctx context.Context, owner string, hashes []string) (map[string]StoredImage, error) {
	out := map[string]StoredImage{}
	for _, h := range hashes {
		if _, ok := out[h]; ok {
			continue
		}
		im := StoredImage{Hash: h}
		err := s.db.QueryRowContext(ctx, s.q(`SELECT mime, data FROM response_images WHERE owner = ? AND hash = ?`), owner, h).Scan(&im.MIME, &im.Data)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, s.dbErr("read a stored image", err)
		}
		out[h] = im
	}
	return out, nil
}

// DeleteResponse deletes the owner's stored response with this id
// (ErrResponseNotFound when there is none). A response that another
// continues is hidden instead (not found from now on, its items kept for
// the conversations that go on from it) and goes when they go; deleting
// the last of a conversation also deletes the hidden ones before it that
// nothing else continues, and the images nothing refers to any more.
func (s *Store) DeleteResponse(ctx context.Context, id, owner string) error {
	op := "delete response " + id
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr(op, err)
	}
	defer tx.Rollback()
	var rowOwner, prev string
	err = tx.QueryRowContext(ctx, s.q(`SELECT owner, prev FROM responses WHERE id = ? AND hidden = 0`), id).Scan(&rowOwner, &prev)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != "" && rowOwner != owner) {
		return ErrResponseNotFound
	}
	if err != nil {
		return s.dbErr(op, err)
	}
	for first := true; id != ""; first = false {
		var one int
		err := tx.QueryRowContext(ctx, s.q(`SELECT 1 FROM responses WHERE prev = ? LIMIT 1`), id).Scan(&one)
		if err == nil { // continued: hidden
			if first {
				if _, err := tx.ExecContext(ctx, s.q(`UPDATE responses SET hidden = 1 WHERE id = ?`), id); err != nil {
					return s.dbErr(op, err)
				}
			}
			break
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return s.dbErr(op, err)
		}
		if !first { // an earlier response: it goes if it was hidden
			var hidden int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT hidden, prev FROM responses WHERE id = ?`), id).Scan(&hidden, &prev); err != nil || hidden == 0 {
				break
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM responses WHERE id = ?`), id); err != nil {
			return s.dbErr(op, err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM response_image_refs WHERE response_id = ?`), id); err != nil {
			return s.dbErr(op, err)
		}
		id = prev
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM response_images WHERE owner = ? AND NOT EXISTS
		(SELECT 1 FROM response_image_refs f WHERE f.owner = response_images.owner AND f.hash = response_images.hash)`), rowOwner); err != nil {
		return s.dbErr(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr(op, err)
	}
	return nil
}

// PruneResponses deletes the stored responses that expired or were
// deleted, except those a live response continues (its conversation is
// kept whole while it lives), and the images nothing refers to any
// more. It returns how many responses went.
func (s *Store) PruneResponses(ctx context.Context) (int64, error) {
	now := time.Now().UnixNano()
	res, err := s.db.ExecContext(ctx, s.q(`WITH RECURSIVE keep(id) AS (
			SELECT prev FROM responses WHERE expires_at > ? AND hidden = 0 AND prev != ''
			UNION
			SELECT r.prev FROM responses r JOIN keep k ON r.id = k.id WHERE r.prev != ''
		)
		DELETE FROM responses WHERE (expires_at <= ? OR hidden = 1) AND id NOT IN (SELECT id FROM keep)`), now, now)
	if err != nil {
		return 0, s.dbErr("prune responses", err)
	}
	n, _ := res.RowsAffected()
	if _, err := s.db.ExecContext(ctx, `DELETE FROM response_image_refs WHERE NOT EXISTS
		(SELECT 1 FROM responses r WHERE r.id = response_image_refs.response_id)`); err != nil {
		return n, s.dbErr("prune responses", err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM response_images WHERE NOT EXISTS
		(SELECT 1 FROM response_image_refs f WHERE f.owner = response_images.owner AND f.hash = response_images.hash)`); err != nil {
		return n, s.dbErr("prune responses", err)
	}
	if n > 0 {
		slog.Info("pruned expired responses", "responses", n)
	}
	return n, nil
}
