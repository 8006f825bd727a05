package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// A job that is running each time the server dies (kill -9, as an engine
// abort would end it) runs again after each restart, and after the third
// such death fails visibly instead of taking the server down forever; the
// job queued behind it still runs. Nothing is lost: both stay listed.
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

	for attempt := 1; attempt <= 3; attempt++ {
		if attempt > 1 {
			d = startDaemon(t, args...)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			var env struct{ Data daemonJob }
			d.call(t, "GET", "/api/v1/jobs/"+poison, "", "", &env)
			if env.Data.Status == 1 && env.Data.Attempts == attempt {
				break
			}
			if env.Data.Status > 1 || time.Now().After(deadline) {
				t.Fatalf("attempt %d: job %+v\n%s", attempt, env.Data, d.log())
			}
		}
		d.kill(t)
	}

	d = startDaemon(t, args...)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		all := d.jobs(t, "", "")
		byID := map[string]daemonJob{}
		for _, j := range all {
			byID[j.ID] = j
		}
		p, n := byID[poison], byID[next]
		if len(all) != 2 || p.ID == "" || n.ID == "" {
			t.Fatalf("jobs after the restarts: %+v", all)
		}
		if n.Status == 2 {
			if p.Status != 3 || p.Attempts != 3 || !strings.Contains(p.Error, "the server stopped while it ran, 3 times") {
				t.Fatalf("the job that was running at each kill: %+v", p)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs %+v\n%s", all, d.log())
		}
	}
	var failed struct{ Error string }
	if code := d.call(t, "GET", "/api/v1/ollama/"+poison+"/results", "", "", &failed); code != 409 || !strings.Contains(failed.Error, "stopped while it ran") {
		t.Fatalf("results of the failed job: %d %+v", code, failed)
	}
}
