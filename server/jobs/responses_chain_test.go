package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/server/jobs/pgtest"
)

func chainIDs(rs []*StoredResponse) string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return strings.Join(ids, ",")
}

// respRow is a stored response of owner continuing prev.
func respRow(id, owner, prev string, images ...StoredImage) *StoredResponse {
	now := time.Now()
	return &StoredResponse{ID: id, Owner: owner, Status: "completed", Prev: prev, Body: []byte(`{"status":"completed"}`),
		Input: []byte(`[{"type":"message","id":"` + id + `"}]`), Images: images, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
}

// A conversation is a chain: each response stores its own items and a
// link, the chain reads back oldest first, an image is stored once per
// owner however many responses refer to it, a deleted response that
// another continues is hidden (and kept for it) until that one goes, and
// pruning keeps what a live response continues.
func TestResponseChains(t *testing.T) { each(t, testResponseChains) }

func testResponseChains(t *testing.T, cfg Config) {
	s := openCfg(t, cfg)
	defer s.Close()
	ctx := context.Background()
	img := StoredImage{Hash: "h1", MIME: "image/png", Data: make([]byte, 100_000)}
	for i, r := range []*StoredResponse{respRow("r1", "a", "", img), respRow("r2", "a", "r1"), respRow("r3", "a", "r2", img), respRow("r2b", "a", "r1")} {
		if err := s.SaveResponse(ctx, r); err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	chain, err := s.ResponseChain(ctx, "r3", "a")
	if err != nil || chainIDs(chain) != "r1,r2,r3" || string(chain[1].Input) != `[{"type":"message","id":"r2"}]` {
		t.Fatalf("chain of r3: %s (%v)", chainIDs(chain), err)
	}
	if _, err := s.ResponseChain(ctx, "r3", "b"); !errors.Is(err, ErrResponseNotFound) {
		t.Fatalf("chain of another owner's: %v", err)
	}
	var images, size int64
	if err := s.db.QueryRow(`SELECT COUNT(*), CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM response_images`).Scan(&images, &size); err != nil || images != 1 || size != 100_000 {
		t.Fatalf("images stored: %d of %d bytes (%v), want 1 of 100000", images, size, err)
	}
	imgs, err := s.ResponseImages(ctx, "a", []string{"h1", "nope"})
	if err != nil || len(imgs) != 1 || len(imgs["h1"].Data) != 100_000 || imgs["h1"].MIME != "image/png" {
		t.Fatalf("images: %v (%v)", len(imgs), err)
	}
	if imgs, _ := s.ResponseImages(ctx, "b", []string{"h1"}); len(imgs) != 0 {
		t.Fatal("another owner reads the image")
	}

	// r2 is continued by r3: deleting it hides it; r3 still reads it.
	if err := s.DeleteResponse(ctx, "r2", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetResponse(ctx, "r2", "a"); !errors.Is(err, ErrResponseNotFound) {
		t.Fatalf("deleted r2: %v", err)
	}
	if err := s.DeleteResponse(ctx, "r2", "a"); !errors.Is(err, ErrResponseNotFound) {
		t.Fatalf("deleting r2 again: %v", err)
	}
	if _, err := s.ResponseChain(ctx, "r2", "a"); !errors.Is(err, ErrResponseNotFound) {
		t.Fatalf("chain of deleted r2: %v", err)
	}
	if _, err := s.PruneResponses(ctx); err != nil {
		t.Fatal(err)
	}
	if chain, err := s.ResponseChain(ctx, "r3", "a"); err != nil || chainIDs(chain) != "r1,r2,r3" {
		t.Fatalf("chain of r3 after r2's delete: %s (%v)", chainIDs(chain), err)
	}
	// Deleting r3 takes the hidden r2 with it; r1 stays (r2b continues
	// it), and so does its image.
	if err := s.DeleteResponse(ctx, "r3", "a"); err != nil {
		t.Fatal(err)
	}
	var n int
	s.db.QueryRow(`SELECT COUNT(*) FROM responses`).Scan(&n)
	if n != 2 {
		t.Fatalf("%d responses after deleting r3, want r1 and r2b", n)
	}
	// Expired r1 is kept while r2b continues it.
	if _, err := s.db.Exec(s.q(`UPDATE responses SET expires_at = ? WHERE id = 'r1'`), time.Now().Add(-time.Second).UnixNano()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PruneResponses(ctx); err != nil {
		t.Fatal(err)
	}
	if chain, err := s.ResponseChain(ctx, "r2b", "a"); err != nil || chainIDs(chain) != "r1,r2b" {
		t.Fatalf("chain of r2b after r1 expired: %s (%v)", chainIDs(chain), err)
	}
	if _, err := s.GetResponse(ctx, "r1", "a"); !errors.Is(err, ErrResponseNotFound) {
		t.Fatalf("expired r1: %v", err)
	}
	// r2b deleted: r1 (expired) and the image go at the next prune.
	if err := s.DeleteResponse(ctx, "r2b", "a"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneResponses(ctx); n != 1 || err != nil {
		t.Fatalf("prune: %d (%v), want r1", n, err)
	}
	s.db.QueryRow(`SELECT COUNT(*) FROM response_images`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d images left with no response", n)
	}
}

// The size bound, the per-owner quota (bytes and count) and the disk
// floor refuse a response with an error naming the limit and its
// value; nothing is written, and what was stored stays readable.
func TestResponseLimits(t *testing.T) { each(t, testResponseLimits) }

func testResponseLimits(t *testing.T, cfg Config) {
	cfg.MaxResponseBytes, cfg.ResponseQuotaBytes, cfg.ResponseQuotaCount = 50_000, 120_000, 3
	s := openCfg(t, cfg)
	defer s.Close()
	ctx := context.Background()
	big := StoredImage{Hash: "big", MIME: "image/png", Data: make([]byte, 60_000)}
	err := s.SaveResponse(ctx, respRow("r0", "a", "", big))
	if !errors.Is(err, ErrResponseTooLarge) || !strings.Contains(err.Error(), "--max-stored-response") || !strings.Contains(err.Error(), "50000") {
		t.Fatalf("too large: %v", err)
	}
	img := StoredImage{Hash: "img", MIME: "image/png", Data: make([]byte, 45_000)}
	// The same image twice counts once against the quota.
	if err := s.SaveResponse(ctx, respRow("r1", "a", "", img)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveResponse(ctx, respRow("r2", "a", "r1", img)); err != nil {
		t.Fatal(err)
	}
	img2 := StoredImage{Hash: "img2", MIME: "image/png", Data: make([]byte, 45_000)}
	if err := s.SaveResponse(ctx, respRow("r3", "a", "r2", img2)); err != nil {
		t.Fatal(err)
	}
	err = s.SaveResponse(ctx, respRow("r4", "a", "r3"))
	if !errors.Is(err, ErrResponseQuota) || !strings.Contains(err.Error(), "--responses-quota-count") {
		t.Fatalf("count quota: %v", err)
	}
	// Another owner has its own quota; bytes: a third image is too much.
	if err := s.SaveResponse(ctx, respRow("b1", "b", "", img)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveResponse(ctx, respRow("b2", "b", "b1", img2)); err != nil {
		t.Fatal(err)
	}
	img3 := StoredImage{Hash: "img3", MIME: "image/png", Data: make([]byte, 45_000)}
	err = s.CheckResponse(ctx, respRow("b3", "b", "b2", img3))
	if !errors.Is(err, ErrResponseQuota) || !strings.Contains(err.Error(), "--responses-quota-bytes") {
		t.Fatalf("bytes quota (check): %v", err)
	}
	if err := s.SaveResponse(ctx, respRow("b3", "b", "b2", img3)); !errors.Is(err, ErrResponseQuota) {
		t.Fatalf("bytes quota: %v", err)
	}
	// Deleting frees the quota.
	if err := s.DeleteResponse(ctx, "b2", "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveResponse(ctx, respRow("b3", "b", "b1", img3)); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	s.Close()

	// A disk below the floor refuses storing; what is stored stays.
	cfg.MinFreeDisk = 1 << 62
	s = openCfg(t, cfg)
	err = s.SaveResponse(ctx, respRow("c9", "c", ""))
	if s.pg {
		if err != nil {
			t.Fatalf("PostgreSQL's disk is not this server's: %v", err)
		}
	} else if !errors.Is(err, ErrDiskLow) || !strings.Contains(err.Error(), "--min-free-disk") {
		t.Fatalf("disk floor: %v", err)
	}
	if chain, err := s.ResponseChain(ctx, "r3", "a"); err != nil || chainIDs(chain) != "r1,r2,r3" {
		t.Fatalf("stored before the refusal: %s (%v)", chainIDs(chain), err)
	}
	// Jobs (Anura's, background responses) are under the same floor.
	_, err = s.SubmitModel(ctx, "chat", "a", "m", []byte(`{}`))
	if s.pg {
		if err != nil {
			t.Fatalf("PostgreSQL's disk is not this server's: %v", err)
		}
	} else if !errors.Is(err, ErrDiskLow) || !strings.Contains(err.Error(), "--min-free-disk") {
		t.Fatalf("disk floor, job: %v", err)
	}
}

// A database written before chains (each response with its whole
// conversation in context) is upgraded without losing a response: they
// read as before, with their size counted, and a chain may continue
// them.
func TestResponsesUpgrade(t *testing.T) {
	legacy := func(t *testing.T, exec func(q string, args ...any)) {
		now := time.Now()
		exec(`INSERT INTO responses (id, owner, status, job_id, body, request, input, context, created_at, expires_at)
			VALUES ('old', 'a', 'completed', '', '{"status":"completed"}', '{}', '[{"type":"message","id":"in"}]', '[{"type":"message","id":"ctx"}]', $1, $2)`,
			now.UnixNano(), now.Add(time.Hour).UnixNano())
	}
	check := func(t *testing.T, s *Store) {
		ctx := context.Background()
		r, err := s.GetResponse(ctx, "old", "a")
		if err != nil || string(r.Context) != `[{"type":"message","id":"ctx"}]` || r.Prev != "" {
			t.Fatalf("old response: %+v (%v)", r, err)
		}
		if err := s.SaveResponse(ctx, respRow("new", "a", "old")); err != nil {
			t.Fatal(err)
		}
		chain, err := s.ResponseChain(ctx, "new", "a")
		if err != nil || chainIDs(chain) != "old,new" || string(chain[0].Context) != `[{"type":"message","id":"ctx"}]` {
			t.Fatalf("chain: %s (%v)", chainIDs(chain), err)
		}
		var size int64
		if err := s.db.QueryRow(`SELECT size FROM responses WHERE id = 'old'`).Scan(&size); err != nil || size != int64(len(`{"status":"completed"}{}[{"type":"message","id":"in"}][{"type":"message","id":"ctx"}]`)) {
			t.Fatalf("old response's size %d (%v)", size, err)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "jobs.db"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(sqliteSchema); err != nil {
			t.Fatal(err)
		}
		legacy(t, func(q string, args ...any) {
			if _, err := db.Exec(strings.NewReplacer("$1", "?", "$2", "?").Replace(q), args...); err != nil {
				t.Fatal(err)
			}
		})
		db.Close()
		s := openCfg(t, Config{Dir: dir})
		defer s.Close()
		check(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		cfg := pgConfig(t)
		pgtest.Exec(t, cfg.URL, pgMigrations[0]+";"+pgMigrations[1]+`;
			CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
			INSERT INTO schema_migrations (version) VALUES (1), (2)`)
		legacy(t, func(q string, args ...any) {
			q = strings.NewReplacer("$1", fmt.Sprint(args[0]), "$2", fmt.Sprint(args[1])).Replace(q)
			pgtest.Exec(t, cfg.URL, q)
		})
		s := openCfg(t, cfg)
		defer s.Close()
		check(t, s)
	})
}
