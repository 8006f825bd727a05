package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/jobs/pgtest"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// storiesModels is a models directory holding the smallest test model as
// "stories".
func storiesModels(t *testing.T) string {
	t.Helper()
	models := t.TempDir()
	abs, _ := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err := os.Symlink(abs, filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	return models
}

// pgServeArgs are the serve flags of a replica on database url, with a
// 2 s job lease.
func pgServeArgs(t *testing.T, models, url string) []string {
	return []string{"--models", models, "--data-dir", filepath.Join(t.TempDir(), "data"), "--database-url", url,
		"--job-lease", "2s", "--job-workers", "2", "--job-max-tokens", "100000", "--job-queue-per-key", "0",
		"--threads", "1", "--parallel", "2", "--context-length", "256", "--log-level", "info"}
}

// Two replicas on one PostgreSQL database; 100 jobs submitted through
// both; one is killed (kill -9) while it runs jobs. Every job completes
// exactly once: none lost (all completed in the database, each result
// readable through the survivor), none completed twice (each outcome
// written once, counted by a trigger on every UPDATE that leaves a job
// completed, with the replica that wrote it), and the jobs the dead
// replica held were taken over after their lease ran out.
func TestPGReplicasExactlyOnce(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	models := storiesModels(t)
	a := startDaemon(t, pgServeArgs(t, models, url)...)
	b := startDaemon(t, pgServeArgs(t, models, url)...)
	host, _ := os.Hostname()
	ownerA := fmt.Sprintf("%s/%d", host, a.cmd.Process.Pid)
	// Every write of a completed state, by whom: a job completed twice
	// would have two rows.
	pgtest.Exec(t, url, `CREATE TABLE completions (id TEXT NOT NULL, by_replica TEXT NOT NULL);
		CREATE FUNCTION count_completion() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO completions VALUES (NEW.id, NEW.lease_owner); RETURN NEW; END $$;
		CREATE TRIGGER count_completion AFTER UPDATE ON jobs FOR EACH ROW WHEN (NEW.state = 'completed')
			EXECUTE FUNCTION count_completion()`)

	// About 0.5 s a job here (the window shifts past 256 tokens): 100
	// take several seconds on two replicas, and a job outlives by far the
	// moment between seeing it running and the kill (at 300 tokens, CI
	// once saw A's jobs all end in that moment).
	const n, tokens = 100, 800
	body := fmt.Sprintf(`{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":%d}}`, tokens)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := range 4 { // four clients, each through both replicas in turn
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				d := a
				if i%2 == 1 {
					d = b
				}
				var env struct{ Data daemonJob }
				if code := d.call(t, "POST", "/api/v1/ollama", "", body, &env); code != 202 {
					t.Errorf("submit %d: %d", i, code)
				}
				ids[i] = env.Data.ID
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Kill A while it runs jobs (some having completed).
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A victim's jobs may all end in the moment between seeing one
	// running and the kill (seen once in CI under -race): then a new
	// replica takes A's place and is killed in turn, up to three times.
	var held [][]string
	for attempt := 1; len(held) == 0; attempt++ {
		// Fails only if no job completes for a minute (a stall, not a slow
		// machine).
		lastDone := -1
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Millisecond) {
			var done, running int
			err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'completed'),
				count(*) FILTER (WHERE state = 'running' AND lease_owner = $1) FROM jobs`, ownerA).Scan(&done, &running)
			if err != nil {
				t.Fatal(err)
			}
			if done > 0 && running > 0 {
				a.kill(t)
				// What A held when it died: running under its lease, which
				// nobody renews now.
				held = pgtest.Query(t, url, `SELECT id FROM jobs WHERE state = 'running' AND lease_owner = $1`, ownerA)
				done, _ := strconv.Atoi(pgtest.Query(t, url, `SELECT count(*) FROM jobs WHERE state = 'completed'`)[0][0])
				t.Logf("killed replica A (kill -9) with %d jobs running on it; %d of %d completed by then (both replicas)", len(held), done, n)
				break
			}
			if done != lastDone {
				lastDone, deadline = done, time.Now().Add(time.Minute)
			}
			if done == n || time.Now().After(deadline) {
				t.Fatalf("A was not caught running a job: %d completed\n%s", done, a.log())
			}
		}
		if len(held) == 0 {
			if attempt == 3 {
				t.Fatalf("three replicas held no job at their kill: their jobs completed between the check and the kill")
			}
			a = startDaemon(t, pgServeArgs(t, models, url)...)
			ownerA = fmt.Sprintf("%s/%d", host, a.cmd.Process.Pid)
		}
	}
	// The survivor finishes the rest: the wait fails only when no job
	// finishes for 2 minutes (a stall), so a slow or busy machine that
	// still makes progress passes.
	lastLeft, stall := "", time.Now().Add(2*time.Minute)
	for ; ; time.Sleep(50 * time.Millisecond) {
		left := pgtest.Query(t, url, `SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')`)[0][0]
		if left == "0" {
			break
		}
		if left != lastLeft {
			lastLeft, stall = left, time.Now().Add(2*time.Minute)
		}
		if time.Now().After(stall) {
			t.Fatalf("%s jobs not finished, none for 2 minutes\n%s", left, b.log())
		}
	}

	// Count: completions written per job (the trigger's rows), states
	// from the database, results through the survivor.
	written, byA := map[string]int{}, 0
	for _, r := range pgtest.Query(t, url, `SELECT id, by_replica FROM completions`) {
		written[r[0]]++
		if r[1] == ownerA {
			byA++
		}
	}
	states := map[string]string{}
	for _, r := range pgtest.Query(t, url, `SELECT id, state FROM jobs`) {
		states[r[0]] = r[1]
	}
	completed, duplicated, lost := 0, 0, 0
	for _, id := range ids {
		if states[id] == "completed" && written[id] > 0 {
			completed++
		} else {
			lost++
			t.Errorf("job %s: %q, %d completions", id, states[id], written[id])
		}
		if written[id] > 1 {
			duplicated++
			t.Errorf("job %s completed %d times", id, written[id])
		}
		var r ollamaapi.GenerateResponse
		if code := b.call(t, "GET", "/api/v1/ollama/"+id+"/results", "", "", &r); code != 200 || !r.Done || r.EvalCount != tokens {
			t.Errorf("results of %s through B: %d %+v", id, code, r.Metrics)
		}
	}
	if len(states) != n {
		t.Errorf("%d jobs in the database, want %d", len(states), n)
	}
	for _, r := range held {
		got := pgtest.Query(t, url, `SELECT state, attempts, lease_owner, coalesce(error, '') FROM jobs WHERE id = $1`, r[0])[0]
		if got[0] != "completed" || got[1] != "2" || got[2] == ownerA {
			t.Errorf("job %s, held by A at the kill: %v (state, attempts, completed by, error)", r[0], got)
		}
	}
	t.Logf("exactly-once: submitted %d (50 through each replica), completed %d (by A before the kill %d, by B %d), duplicated %d, lost %d; A held %d running at kill -9, each completed by B on attempt 2 after the 2s lease",
		n, completed, byA, completed-byA, duplicated, lost, len(held))
}

// A Response stored through one replica is read and continued
// (previous_response_id) through the other.
func TestPGResponsesAcrossReplicas(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	models := storiesModels(t)
	a := startDaemon(t, pgServeArgs(t, models, url)...)
	b := startDaemon(t, pgServeArgs(t, models, url)...)
	type resp struct {
		ID                 string `json:"id"`
		Status             string `json:"status"`
		PreviousResponseID string `json:"previous_response_id"`
	}
	// max_output_tokens 8 ends each response "incomplete" (the length
	// limit), which is stored and continued like a completed one.
	var first, second, read resp
	if code := a.call(t, "POST", "/v1/responses", "", `{"model":"stories","input":"Once upon a time","max_output_tokens":8,"temperature":0}`, &first); code != 200 || first.Status != "incomplete" {
		t.Fatalf("create through A: %d %+v", code, first)
	}
	if code := b.call(t, "GET", "/v1/responses/"+first.ID, "", "", &read); code != 200 || read.ID != first.ID {
		t.Fatalf("read through B: %d %+v", code, read)
	}
	cont := fmt.Sprintf(`{"model":"stories","input":"and then","previous_response_id":%q,"max_output_tokens":8,"temperature":0}`, first.ID)
	if code := b.call(t, "POST", "/v1/responses", "", cont, &second); code != 200 || second.Status != "incomplete" || second.PreviousResponseID != first.ID {
		t.Fatalf("continue through B: %d %+v", code, second)
	}
	var items struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if code := a.call(t, "GET", "/v1/responses/"+second.ID+"/input_items", "", "", &items); code != 200 || len(items.Data) == 0 {
		t.Fatalf("input items through A: %d %+v", code, items)
	}
}

// The database stopped while serving: job endpoints answer 503 with
// Retry-After in Anura's shape, generation still works; restarted, the
// jobs are readable again and new ones run.
func TestPGDatabaseOutage(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	d := startDaemon(t, pgServeArgs(t, storiesModels(t), url)...)
	var env struct{ Data daemonJob }
	if code := d.call(t, "POST", "/api/v1/cowsay", "", `{"message":"before"}`, &env); code != 202 {
		t.Fatalf("submit: %d", code)
	}
	before := env.Data.ID
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/jobs/" + before, ""},
		{"GET", "/api/v1/jobs", ""},
		{"POST", "/api/v1/cowsay", `{"message":"during"}`},
		{"GET", "/v1/responses/resp_x", ""},
	} {
		req, _ := http.NewRequest(c.method, d.url+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error any `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || e.Error == nil || !strings.Contains(fmt.Sprint(e.Error), "unavailable") {
			t.Fatalf("%s %s with the database stopped: %d Retry-After %q %+v", c.method, c.path, resp.StatusCode, resp.Header.Get("Retry-After"), e)
		}
	}
	var gen ollamaapi.GenerateResponse
	if code := d.call(t, "POST", "/api/generate", "", `{"model":"stories","prompt":"Once","stream":false,"options":{"num_predict":8}}`, &gen); code != 200 || !gen.Done {
		t.Fatalf("generation with the database stopped: %d %+v", code, gen)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, "job "+before+" to complete after the database's restart", func() bool {
		var got struct{ Data daemonJob }
		code := d.call(t, "GET", "/api/v1/jobs/"+before, "", "", &got)
		return code == 200 && got.Data.Status == 2
	})
	if code := d.call(t, "POST", "/api/v1/ollama", "", `{"model":"stories","prompt":"Once","options":{"num_predict":8}}`, &env); code != 202 {
		t.Fatalf("submit after the restart: %d", code)
	}
	testkit.Eventually(t, time.Minute, "the job submitted after the restart to complete", func() bool { return d.job(t, env.Data.ID).Status == 2 })
}

// Bad databases at start-up: one migrated by a newer Tadpole is refused
// (nothing written), an unreachable one is an error naming the URL
// without its password; both exit non-zero.
func TestPGServeRefuses(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	pgtest.Exec(t, url, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
		INSERT INTO schema_migrations (version) VALUES (999)`)
	models := storiesModels(t)
	r := runBin(t, binEnv(), "", "serve", "--host", "127.0.0.1:0", "--models", models, "--database-url", url)
	if r.code == 0 || !strings.Contains(r.stderr, "newer than this Tadpole knows") || !strings.Contains(r.stderr, "version 999") {
		t.Fatalf("newer schema: %s", r)
	}
	if tables := pgtest.Query(t, url, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`)[0][0]; tables != "1" {
		t.Fatalf("%s tables after the refusal: something was written", tables)
	}
	bad := "postgres://tadpole:hunter2-secret@127.0.0.1:1/jobs?sslmode=disable"
	r = runBin(t, binEnv(), "", "serve", "--host", "127.0.0.1:0", "--models", models, "--database-url", bad)
	if r.code == 0 || strings.Contains(r.stderr+r.stdout, "hunter2-secret") || !strings.Contains(r.stderr, "postgres://tadpole@127.0.0.1:1/jobs") {
		t.Fatalf("unreachable: %s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	t.Logf("unreachable database: exit %d, %s", r.code, lines[len(lines)-1])
}

// Per-key usage is shared: the tokens a key generated through one
// replica show in the other's /metrics.
func TestPGUsageAcrossReplicas(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	models := storiesModels(t)
	key := runBin(t, os.Environ(), "", "keys", "new")
	lines := strings.Split(strings.TrimSpace(key.stdout), "\n")
	keysFile := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keysFile, []byte(lines[1]+"\n"), 0o600)
	secret := lines[0]
	a := startDaemon(t, append(pgServeArgs(t, models, url), "--api-keys-file", keysFile)...)
	b := startDaemon(t, append(pgServeArgs(t, models, url), "--api-keys-file", keysFile)...)
	var gen ollamaapi.GenerateResponse
	if code := a.call(t, "POST", "/api/generate", secret, `{"model":"stories","prompt":"Once","stream":false,"options":{"num_predict":8}}`, &gen); code != 200 || gen.EvalCount == 0 {
		t.Fatalf("generate through A: %d %+v", code, gen)
	}
	out := regexp.MustCompile(`(?m)^tadpole_key_tokens(?:_total)?\{[^}]*direction="out"[^}]*\} (\d+)`)
	testkit.Eventually(t, time.Minute, fmt.Sprintf("B's /metrics to show A's %d tokens out", gen.EvalCount), func() bool {
		req, _ := http.NewRequest("GET", b.url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := out.FindSubmatch(body)
		return m != nil && string(m[1]) == strconv.Itoa(gen.EvalCount)
	})
	t.Logf("B's /metrics shows the %d tokens generated through A", gen.EvalCount)
}

// SIGTERM drains a replica: the job it runs past --drain-timeout goes
// back to the queue, uncounted, and the other replica takes it at once
// (its notification); the drained replica exits 0.
func TestPGDrainHandsJobToReplica(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	models := storiesModels(t)
	a := startDaemon(t, append(pgServeArgs(t, models, url), "--drain-timeout", "1s")...)
	host, _ := os.Hostname()
	ownerA := fmt.Sprintf("%s/%d", host, a.cmd.Process.Pid)
	var env struct{ Data daemonJob }
	// About a minute of generation: it is running when A drains.
	long := `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":100000}}`
	if code := a.call(t, "POST", "/api/v1/ollama", "", long, &env); code != 202 {
		t.Fatalf("submit: %d", code)
	}
	id := env.Data.ID
	owner := func() []string {
		return pgtest.Query(t, url, `SELECT state, attempts, lease_owner FROM jobs WHERE id = $1`, id)[0]
	}
	testkit.Eventually(t, time.Minute, "the job to run on A", func() bool { got := owner(); return got[0] == "running" && got[2] == ownerA })
	b := startDaemon(t, pgServeArgs(t, models, url)...)
	ownerB := fmt.Sprintf("%s/%d", host, b.cmd.Process.Pid)
	t0 := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	if a.waitErr != nil {
		t.Fatalf("drained replica: %v\n%s", a.waitErr, a.log())
	}
	exited := time.Since(t0)
	testkit.Eventually(t, time.Minute, "B to run the job A handed back", func() bool {
		got := owner()
		if got[0] != "running" && got[0] != "queued" {
			t.Fatalf("after A's drain: %v (state, attempts, replica)", got)
		}
		if got[0] == "running" && got[2] == ownerB {
			if got[1] != "1" {
				t.Fatalf("the handed-back attempt was counted: %v", got)
			}
			return true
		}
		return false
	})
	t.Logf("SIGTERM to A with the job running; A exited 0 after %v (--drain-timeout 1s); B was running the job %v after the SIGTERM, attempt still 1",
		exited.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	if code := b.call(t, "DELETE", "/api/v1/jobs/"+id, "", "", &env); code != 200 || env.Data.Status != 4 {
		t.Fatalf("cancel through B: %d %+v", code, env.Data)
	}
}
