package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

func TestKeysNew(t *testing.T) {
	r := runBin(t, os.Environ(), "", "keys", "new")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("%s", r)
	}
	sum := sha256.Sum256([]byte(lines[0]))
	if lines[1] != "sha256:"+hex.EncodeToString(sum[:]) || !strings.HasPrefix(lines[0], "tp-") {
		t.Fatalf("key %q, hash line %q", lines[0], lines[1])
	}
	h := runBin(t, os.Environ(), lines[0]+"\n", "keys", "hash")
	if h.code != 0 || strings.TrimSpace(h.stdout) != lines[1] {
		t.Fatalf("keys hash: %s", h)
	}
	if bad := runBin(t, os.Environ(), "", "keys", "old"); bad.code == 0 {
		t.Fatalf("keys old: %s", bad)
	}
}

// daemon is a `tadpole serve` child process.
type daemon struct {
	cmd     *exec.Cmd
	url     string
	logs    string        // its log file
	exited  chan struct{} // closed when it has exited
	waitErr error
}

// startDaemon runs the binary as a server on a free port and waits until
// it answers.
func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close()
	logs := filepath.Join(t.TempDir(), "serve.log")
	f, err := os.Create(logs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TADPOLE_") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(tadpole(t), append([]string{"serve", "--host", host}, args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, url: "http://" + host, logs: logs, exited: make(chan struct{})}
	go func() { d.waitErr = cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-d.exited })
	// A test that fails while this server runs shows its log (a wait
	// that ran out says only what it waited for).
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the log of tadpole serve on %s:\n%s", host, d.log())
		}
	})
	testkit.Eventually(t, time.Minute, "tadpole serve to answer", func() bool {
		select {
		case <-d.exited:
			t.Fatalf("tadpole serve exited: %v\n%s", d.waitErr, d.log())
		default:
		}
		resp, err := http.Get(d.url + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return d
}

// job is the job id as GET /api/v1/jobs/{id} answers it (zero when it
// does not).
func (d *daemon) job(t *testing.T, id string) daemonJob {
	t.Helper()
	var env struct{ Data daemonJob }
	d.call(t, "GET", "/api/v1/jobs/"+id, "", "", &env)
	return env.Data
}

func (d *daemon) log() string {
	b, _ := os.ReadFile(d.logs)
	return string(b)
}

// kill kills the server with SIGKILL: no shutdown runs.
func (d *daemon) kill(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.exited
}

// call sends a request with the API key and decodes a JSON answer into v.
func (d *daemon) call(t *testing.T, method, path, key, body string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, d.log())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode
}

type daemonJob struct {
	ID       string `json:"id"`
	Status   int    `json:"status"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error"`
}

// jobs lists every job of the key.
func (d *daemon) jobs(t *testing.T, key, query string) []daemonJob {
	t.Helper()
	var env struct {
		Data struct {
			Jobs []daemonJob `json:"jobs"`
			Next string      `json:"next"`
		} `json:"data"`
	}
	if code := d.call(t, "GET", "/api/v1/jobs?limit=1000&"+query, key, "", &env); code != 200 || env.Data.Next != "" {
		t.Fatalf("list: %d %+v", code, env)
	}
	return env.Data.Jobs
}

// Jobs survive kill -9: the 20 jobs submitted all complete after a
// restart on the same data directory, each once, those that were running
// run again.
func TestJobsSurviveKill(t *testing.T) {
	models := t.TempDir()
	abs, _ := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err := os.Symlink(abs, filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	key := runBin(t, os.Environ(), "", "keys", "new")
	lines := strings.Split(strings.TrimSpace(key.stdout), "\n")
	keysFile := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keysFile, []byte("# the job test's key\n"+lines[1]+"\n"), 0o600)
	secret := lines[0]
	args := []string{"--models", models, "--data-dir", data, "--api-keys-file", keysFile, "--job-workers", "2",
		"--threads", "1", "--parallel", "2", "--context-length", "256", "--log-level", "warn"}

	d := startDaemon(t, args...)
	if code := d.call(t, "GET", "/api/v1/jobs", "wrong", "", nil); code != 401 {
		t.Fatalf("wrong key: %d", code)
	}
	const n, tokens = 20, 1000 // long enough to be caught running; the context shifts
	body := fmt.Sprintf(`{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":%d}}`, tokens)
	submitted := map[string]bool{}
	for range n {
		var env struct{ Data daemonJob }
		if code := d.call(t, "POST", "/api/v1/ollama", secret, body, &env); code != 202 {
			t.Fatalf("submit: %d", code)
		}
		submitted[env.Data.ID] = true
	}
	// Kill it once some jobs have completed while others run.
	testkit.Eventually(t, 2*time.Minute, "some jobs completed while others run", func() bool {
		completed, running := len(d.jobs(t, secret, "status=completed")), len(d.jobs(t, secret, "status=running"))
		if completed == n {
			t.Fatalf("every job completed before the kill")
		}
		if completed > 0 && running > 0 {
			t.Logf("killed with %d jobs completed and %d running", completed, running)
			return true
		}
		return false
	})
	d.kill(t)

	d = startDaemon(t, args...)
	var all []daemonJob
	testkit.Eventually(t, 3*time.Minute, "every job to finish after the restart", func() bool {
		all = d.jobs(t, secret, "")
		for _, j := range all {
			if j.Status < 2 {
				return false
			}
		}
		return true
	})
	if len(all) != n {
		t.Fatalf("%d jobs after the restart, want %d", len(all), n)
	}
	rerun := 0
	for _, j := range all {
		if !submitted[j.ID] || j.Status != 2 || j.Attempts < 1 || j.Attempts > 2 {
			t.Errorf("job %+v", j)
		}
		if j.Attempts == 2 {
			rerun++
		}
		var r ollamaapi.GenerateResponse
		if code := d.call(t, "GET", "/api/v1/ollama/"+j.ID+"/results", secret, "", &r); code != 200 ||
			!r.Done || r.EvalCount != tokens || !strings.HasPrefix(r.Response, ", there was a little girl named Lily.") {
			t.Errorf("results of %s: %d %+v", j.ID, code, r.Metrics)
		}
	}
	t.Logf("after the restart: %d jobs completed, %d of them ran twice", len(all), rerun)
	if rerun == 0 {
		t.Errorf("no job ran twice: none was running at the kill?")
	}
	if _, err := os.Stat(filepath.Join(data, "jobs.db")); err != nil {
		t.Error(err)
	}
}
