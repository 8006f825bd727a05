package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/flight"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// A Go fatal error — here a real "out of memory", which no recover
// catches and after which no deferred function runs — while a
// generation streams: the next server opened on the same data directory
// names the request (id, route, model, phase) in crash-<time>.json. The
// death runs in a child process (this test binary again).
func TestFatalErrorLeavesCrashReport(t *testing.T) {
	if dir := os.Getenv("TADPOLE_FATAL_CHILD"); dir != "" {
		fatalChild(t, dir)
		return
	}
	data := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestFatalErrorLeavesCrashReport$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TADPOLE_FATAL_CHILD="+data)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(stderr.String(), "fatal error: ") {
		t.Fatalf("the child did not die of a Go fatal error: %v\n%s", err, stderr.String())
	}
	_, rest, _ := strings.Cut(stdout.String(), "request id: ")
	id, _, _ := strings.Cut(rest, "\n")
	if id == "" {
		t.Fatalf("no request id from the child:\n%s", stdout.String())
	}

	srv := New(Config{ModelsDir: t.TempDir(), DataDir: data, Sched: sched.Config{Parallel: 1, NumCtx: 256, Threads: 1}})
	defer srv.Shutdown(t.Context())
	files, _ := filepath.Glob(filepath.Join(data, "crash-*.json"))
	if len(files) != 1 {
		t.Fatalf("crash files: %v", files)
	}
	var rep flight.Report
	b, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Requests) != 1 {
		t.Fatalf("crash report: %v\n%s", err, b)
	}
	if e := rep.Requests[0]; e.ID != id || e.Route != "POST /api/generate" || e.Model != "stories:latest" || e.Phase != flight.Decode {
		t.Errorf("the request in flight: %+v, want id %s", e, id)
	}
}

// fatalChild serves on the data directory dir, starts a generation and,
// once it streams, allocates more memory than the address space holds.
func fatalChild(t *testing.T, dir string) {
	models := testModels(t, "stories")
	srv := New(Config{ModelsDir: models, DataDir: dir, Sched: testSched(1, 256)})
	ts := serveForTest(t, srv)
	body := `{"model":"stories","prompt":"Once upon a time","options":{"num_predict":100000,"temperature":0}}`
	resp, err := http.Post(ts.URL+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if !bufio.NewScanner(resp.Body).Scan() {
		t.Fatal("no stream")
	}
	fmt.Printf("request id: %s\n", resp.Header.Get("X-Request-Id"))
	os.Stdout.Sync()
	sink = make([]byte, 1<<47) // 128 TiB: "fatal error: out of memory"
	t.Fatal("still alive after the allocation")
}

var sink []byte
