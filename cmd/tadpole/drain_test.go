package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// drainArgs are the serve flags of the drain tests: the demo model
// preloaded, two slots (a job and a stream run side by side).
func drainArgs(t *testing.T, drainTimeout string) []string {
	t.Helper()
	models := t.TempDir()
	abs, _ := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err := os.Symlink(abs, filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	return []string{"--models", models, "--data-dir", filepath.Join(t.TempDir(), "data"), "--preload", "stories",
		"--drain-timeout", drainTimeout, "--job-workers", "1", "--job-max-tokens", "100000",
		"--threads", "1", "--parallel", "2", "--context-length", "256", "--log-level", "info"}
}

// timeline logs what happened when, as offsets from the SIGTERM.
type timeline struct {
	t     *testing.T
	start time.Time
	lines []string
}

func (tl *timeline) mark(what string) {
	line := fmt.Sprintf("%+8.3fs  %s", time.Since(tl.start).Seconds(), what)
	tl.lines = append(tl.lines, line)
	tl.t.Log(line)
}

// streamLine is one NDJSON line of /api/generate and when it came.
type streamLine struct {
	resp ollamaapi.GenerateResponse
	at   time.Time
}

// startStream sends a streamed generation of n tokens and returns its
// lines as they come; the channel closes at the end of the body, with the
// read error (nil at a clean end) in *readErr.
func startStream(t *testing.T, d *daemon, n int, readErr *error) <-chan streamLine {
	t.Helper()
	body := fmt.Sprintf(`{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":%d}}`, n)
	resp, err := http.Post(d.url+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	ch := make(chan streamLine, 1<<16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var l streamLine
			if err := json.Unmarshal(sc.Bytes(), &l.resp); err != nil {
				*readErr = fmt.Errorf("line %q: %w", sc.Text(), err)
				return
			}
			l.at = time.Now()
			ch <- l
		}
		*readErr = sc.Err()
	}()
	return ch
}

// waitReady polls /readyz until it answers code.
func waitReady(t *testing.T, d *daemon, code int) readyBody {
	t.Helper()
	var b readyBody
	testkit.Eventually(t, time.Minute, fmt.Sprintf("/readyz to answer %d", code), func() bool {
		resp, err := http.Get(d.url + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b = readyBody{}
		json.NewDecoder(resp.Body).Decode(&b)
		return resp.StatusCode == code
	})
	return b
}

type readyBody struct {
	Status string   `json:"status"`
	Models []string `json:"models"`
}

// waitExit waits for the server to exit and returns its exit status.
func waitExit(t *testing.T, d *daemon) int {
	t.Helper()
	select {
	case <-d.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the server did not exit\n%s", d.log())
	}
	var ee *exec.ExitError
	if errors.As(d.waitErr, &ee) {
		return ee.ExitCode()
	}
	if d.waitErr != nil {
		t.Fatalf("wait: %v", d.waitErr)
	}
	return 0
}

// refused reports whether a new request is turned away: a 503 with
// Retry-After, or no connection at all.
func refused(t *testing.T, d *daemon) string {
	t.Helper()
	resp, err := http.Post(d.url+"/api/generate", "application/json",
		strings.NewReader(`{"model":"stories","prompt":"Once","stream":false,"options":{"num_predict":3}}`))
	if err != nil {
		return "connection refused: " + err.Error()
	}
	defer resp.Body.Close()
	var e struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(e.Error, "shutting down") {
		t.Fatalf("a new request while draining: %d Retry-After %q %+v", resp.StatusCode, resp.Header.Get("Retry-After"), e)
	}
	return fmt.Sprintf("503 %q", e.Error)
}

// On SIGTERM a server stops taking requests at once (/readyz 503, new
// requests 503) while the stream it is generating goes on to its end;
// then it exits 0.
func TestDrainFinishesStream(t *testing.T) {
	d := startDaemon(t, drainArgs(t, "5m")...)
	if b := waitReady(t, d, 200); b.Status != "ready" || len(b.Models) != 1 || b.Models[0] != "stories:latest" {
		t.Fatalf("/readyz after the preload: %+v", b)
	}
	// Several seconds of generation: still running when the signal lands.
	const n = 10000
	var readErr error
	lines := startStream(t, d, n, &readErr)
	<-lines // generating

	tl := &timeline{t: t, start: time.Now()}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	tl.mark("SIGTERM sent, stream running")
	if b := waitReady(t, d, 503); b.Status != "draining" {
		t.Fatalf("/readyz while draining: %+v", b)
	}
	notReady := time.Now()
	tl.mark("/readyz answers 503 draining")
	tl.mark("new request refused: " + refused(t, d))

	var last streamLine
	after := 0 // lines that came after /readyz failed: the drain waited for them
	for l := range lines {
		last = l
		if l.at.After(notReady) {
			after++
		}
	}
	if readErr != nil || !last.resp.Done || last.resp.DoneReason != "length" || last.resp.EvalCount != n {
		t.Fatalf("the stream did not end normally: %v, last line %+v\n%s", readErr, last.resp, d.log())
	}
	if after == 0 {
		t.Fatalf("the stream had ended before the drain began: nothing shows that the drain waited for it")
	}
	tl.mark(fmt.Sprintf("stream done: %d tokens, done_reason %s (%d lines after readiness failed)", last.resp.EvalCount, last.resp.DoneReason, after))
	code := waitExit(t, d)
	tl.mark(fmt.Sprintf("process exited with status %d", code))
	if code != 0 {
		t.Fatalf("exit status %d\n%s", code, d.log())
	}
	if log := d.log(); !strings.Contains(log, "drained: no request running") {
		t.Fatalf("the log lacks the drain:\n%s", log)
	}
}

// With a short --drain-timeout a stream that cannot finish in time is
// cut, a running job goes back to the queue (not counted as an attempt,
// as a crash would be) and the server still exits 0.
func TestDrainTimeoutCutsStream(t *testing.T) {
	args := drainArgs(t, "1s")
	d := startDaemon(t, args...)
	waitReady(t, d, 200)
	var job struct{ Data daemonJob }
	long := `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":100000}}`
	if code := d.call(t, "POST", "/api/v1/ollama", "", long, &job); code != 202 {
		t.Fatalf("submit: %d", code)
	}
	testkit.Eventually(t, time.Minute, "the job to run", func() bool { return d.job(t, job.Data.ID).Status == 1 })
	// About a minute of generation: far past the drain timeout.
	var readErr error
	lines := startStream(t, d, 100000, &readErr)
	<-lines

	tl := &timeline{t: t, start: time.Now()}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	tl.mark("SIGTERM sent, stream and job running, --drain-timeout 1s")
	waitReady(t, d, 503)
	tl.mark("/readyz answers 503 draining")
	var last streamLine
	for l := range lines {
		last = l
	}
	if last.resp.Done {
		t.Fatalf("the stream ended normally: %+v", last.resp)
	}
	tl.mark(fmt.Sprintf("stream cut (read error: %v)", readErr))
	code := waitExit(t, d)
	tl.mark(fmt.Sprintf("process exited with status %d", code))
	if code != 0 {
		t.Fatalf("exit status %d\n%s", code, d.log())
	}
	if log := d.log(); !strings.Contains(log, "drain ended with requests running") {
		t.Fatalf("the log lacks the cut:\n%s", log)
	}

	// The job was handed back: after a restart it runs again as its
	// first attempt (a kill -9 would have counted the interrupted run).
	d = startDaemon(t, args...)
	testkit.Eventually(t, time.Minute, "the job to run again as its first attempt", func() bool {
		j := d.job(t, job.Data.ID)
		if j.Status > 1 || j.Attempts > 1 {
			t.Fatalf("the job after the drain and a restart: %+v", j)
		}
		return j.Status == 1 && j.Attempts == 1
	})
}

// A --preload model that does not exist stops the server with an error
// naming it.
func TestPreloadMissingModel(t *testing.T) {
	r := runBin(t, binEnv(), "", "serve", "--host", "127.0.0.1:0", "--models", t.TempDir(), "--data-dir", filepath.Join(t.TempDir(), "data"), "--preload", "nope")
	if r.code == 0 || !strings.Contains(r.stderr, "preload nope") || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("%s", r)
	}
	for _, bad := range [][]string{{"--drain-timeout", "-1s"}, {"--metrics-compat", "sglang"}} {
		r := runBin(t, binEnv(), "", append([]string{"serve", "--host", "127.0.0.1:0", "--models", t.TempDir(), "--data-dir", filepath.Join(t.TempDir(), "data")}, bad...)...)
		if r.code == 0 || !strings.Contains(r.stderr, bad[0]) {
			t.Fatalf("%v: %s", bad, r)
		}
	}
}
