package jobs

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Stored responses: owned, updated unless final, expired, deleted, and
// kept across a reopening of the database.
func TestResponses(t *testing.T) { each(t, testResponses) }

func testResponses(t *testing.T, cfg Config) {
	s := openCfg(t, cfg)
	ctx := context.Background()
	now := time.Now()
	r := &StoredResponse{ID: "resp_1", Owner: "a", Status: "completed", Body: []byte(`{"status":"completed"}`),
		Input: []byte(`[{"type":"message"}]`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.SaveResponse(ctx, r); err != nil {
		t.Fatal(err)
	}
	old := &StoredResponse{ID: "resp_old", Owner: "a", Status: "completed", CreatedAt: now, ExpiresAt: now.Add(-time.Second)}
	if err := s.SaveResponse(ctx, old); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetResponse(ctx, "resp_1", "a")
	if err != nil || string(got.Body) != `{"status":"completed"}` || string(got.Context) != "[]" || string(got.Input) != `[{"type":"message"}]` {
		t.Fatalf("get: %+v (%v)", got, err)
	}
	if _, err := s.GetResponse(ctx, "resp_1", ""); err != nil {
		t.Fatalf("without keys every response is visible: %v", err)
	}
	for _, c := range []struct{ id, owner string }{{"resp_1", "b"}, {"resp_old", "a"}, {"nope", "a"}} {
		if _, err := s.GetResponse(ctx, c.id, c.owner); !errors.Is(err, ErrResponseNotFound) {
			t.Fatalf("get %s as %s: %v", c.id, c.owner, err)
		}
	}
	// Another owner cannot overwrite or delete it.
	if err := s.SaveResponse(ctx, &StoredResponse{ID: "resp_1", Owner: "b", Status: "failed", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteResponse(ctx, "resp_1", "b"); !errors.Is(err, ErrResponseNotFound) {
		t.Fatalf("delete as another owner: %v", err)
	}
	// A final status is kept.
	if ok, err := s.UpdateResponse(ctx, "resp_1", "cancelled", []byte(`{}`), "completed"); ok || err != nil {
		t.Fatalf("update of a completed response: %v %v", ok, err)
	}
	if n, err := s.PruneResponses(ctx); n != 1 || err != nil {
		t.Fatalf("prune: %d %v", n, err)
	}
	s.Close()

	s = openCfg(t, cfg)
	defer s.Close()
	if got, err := s.GetResponse(ctx, "resp_1", "a"); err != nil || got.Status != "completed" {
		t.Fatalf("after reopening: %+v (%v)", got, err)
	}
	if err := s.DeleteResponse(ctx, "resp_1", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetResponse(ctx, "resp_1", "a"); !errors.Is(err, ErrResponseNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}
