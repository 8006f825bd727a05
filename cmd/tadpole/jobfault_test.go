package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/flight"
)

// A job that is running each time the server dies (kill -9, as Go's
// fatal "out of memory" or an engine abort would end it) runs again
// after the first death, alone, and after the second fails with the
// reason instead of taking the server down again; the job queued behind
// it still runs. Each restart names the job in its crash report. Nothing
// is lost: both stay listed.
func TestJobKilledRepeatedlyFailsVisibly(t *testing.T) {
	models := t.TempDir()
	abs, _ := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err := os.Symlink(abs, filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"--models", models, "--data-dir", data, "--job-workers", "1", "--job-max-tokens", "100000",
		"--threads", "1", "--parallel", "1", "--context-length", "256", "--log-level", "warn"}

	d := startDaemon(t, args...)
	var env struct{ Data daemonJob }
	// About a minute of generation: it is running whenever it is killed.
	long := `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":100000}}`
	if code := d.call(t, "POST", "/api/v1/ollama", "", long, &env); code != 202 {
		t.Fatalf("submit: %d", code)
	}
	poison := env.Data.ID
	if code := d.call(t, "POST", "/api/v1/cowsay", "", `{"message":"after the crashes"}`, &env); code != 202 {
		t.Fatalf("submit: %d", code)
	}
	next := env.Data.ID

	for attempt := 1; attempt <= 2; attempt++ {
		if attempt > 1 {
			d = startDaemon(t, args...)
			if log := d.log(); !strings.Contains(log, "FATAL: the previous process died with these requests in flight") ||
				!strings.Contains(log, "id="+poison+" job ollama") || !strings.Contains(log, "queued again, to run alone") {
				t.Fatalf("restart %d does not name the job that was running:\n%s", attempt, log)
			}
		}
		testkit.Eventually(t, time.Minute, fmt.Sprintf("the job to run its attempt %d", attempt), func() bool {
			j := d.job(t, poison)
			if j.Status > 1 {
				t.Fatalf("attempt %d: job %+v", attempt, j)
			}
			return j.Status == 1 && j.Attempts == attempt
		})
		waitInFlight(t, data, poison)
		if attempt == 2 && !strings.Contains(d.log(), `a job runs alone: the server died while it ran before" id=`+poison) {
			t.Errorf("the suspect job did not run alone:\n%s", d.log())
		}
		d.kill(t)
	}

	d = startDaemon(t, args...)
	testkit.Eventually(t, time.Minute, "the job behind the failed one to complete", func() bool {
		all := d.jobs(t, "", "")
		byID := map[string]daemonJob{}
		for _, j := range all {
			byID[j.ID] = j
		}
		p, n := byID[poison], byID[next]
		if len(all) != 2 || p.ID == "" || n.ID == "" {
			t.Fatalf("jobs after the restarts: %+v", all)
		}
		if n.Status != 2 {
			return false
		}
		if p.Status != 3 || p.Attempts != 2 || !strings.Contains(p.Error, "the server died twice while running this job") {
			t.Fatalf("the job that was running at each kill: %+v", p)
		}
		return true
	})
	var failed struct{ Error string }
	if code := d.call(t, "GET", "/api/v1/ollama/"+poison+"/results", "", "", &failed); code != 409 || !strings.Contains(failed.Error, "died twice") {
		t.Fatalf("results of the failed job: %d %+v", code, failed)
	}
}

// waitInFlight waits until the in-flight file in the data directory
// names id: its run has begun, and a death now leaves it in the report.
func waitInFlight(t *testing.T, data, id string) {
	t.Helper()
	testkit.Eventually(t, time.Minute, id+" in the in-flight file", func() bool {
		b, _ := os.ReadFile(filepath.Join(data, flight.FileName))
		return strings.Contains(string(b), `"id":"`+id+`"`)
	})
}
