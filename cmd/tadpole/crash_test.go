package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/flight"
)

// A server killed (SIGKILL: no Go code runs, as with Go's fatal "out of
// memory" or the kernel's OOM killer) while it streams a generation is
// followed by one that names the request at start-up — its id, route,
// model and phase — in an error line and in crash-<time>.json in the
// data directory. A clean stop (SIGTERM) leaves no report.
func TestCrashReportNamesRequestsInFlight(t *testing.T) {
	models := t.TempDir()
	abs, _ := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err := os.Symlink(abs, filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"--models", models, "--data-dir", data, "--threads", "1", "--parallel", "1", "--context-length", "256"}

	d := startDaemon(t, args...)
	if !strings.Contains(d.log(), "Go heap limit") {
		t.Errorf("no heap limit logged:\n%s", d.log())
	}
	body := `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":100000}}`
	resp, err := http.Post(d.url+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	if resp.StatusCode != 200 || id == "" || !bufio.NewScanner(resp.Body).Scan() {
		t.Fatalf("stream: %d, id %q", resp.StatusCode, id)
	}
	d.kill(t) // a token came out: the request is decoding

	d = startDaemon(t, args...)
	logs := d.log()
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "FATAL: the previous process died with these requests in flight") {
			line = l
		}
	}
	for _, want := range []string{"id=" + id + " POST /api/generate", `model=\"stories:latest\"`, "phase=decode", "requests_in_flight=1", "crash-"} {
		if !strings.Contains(line, want) {
			t.Errorf("the report line lacks %q: %q\n%s", want, line, logs)
		}
	}
	files, _ := filepath.Glob(filepath.Join(data, "crash-*.json"))
	if len(files) != 1 {
		t.Fatalf("crash files: %v", files)
	}
	var rep flight.Report
	b, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Requests) != 1 {
		t.Fatalf("crash file: %v\n%s", err, b)
	}
	if e := rep.Requests[0]; e.ID != id || e.Route != "POST /api/generate" || e.Model != "stories:latest" || e.Phase != flight.Decode || e.Body != int64(len(body)) {
		t.Errorf("crash file entry: %+v", e)
	}

	// A clean stop: the next start reports nothing.
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	d = startDaemon(t, args...)
	if strings.Contains(d.log(), "previous process") {
		t.Errorf("a report after a clean stop:\n%s", d.log())
	}
	if files, _ := filepath.Glob(filepath.Join(data, "crash-*.json")); len(files) != 1 {
		t.Errorf("crash files after a clean stop: %v", files)
	}
}
