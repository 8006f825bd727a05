package server

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
)

// If llama.cpp aborts anyway, the process says why and which requests it
// took down before it dies: ggml's abort callback writes llama.cpp's
// message and the requests in flight to standard error. The abort runs in
// a child process (this test binary again), through ggml's own abort
// path, while a generation streams.
func TestAbortReportsRequestsInFlight(t *testing.T) {
	if os.Getenv("TADPOLE_ABORT_CHILD") == "1" {
		abortChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAbortReportsRequestsInFlight$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TADPOLE_ABORT_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child did not fail: %v\n%s", err, stderr.String())
	}
	// abort() raises SIGABRT; Go's runtime handles it by printing the
	// goroutines and exiting with status 2.
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !(ws.Signaled() && ws.Signal() == syscall.SIGABRT || ws.ExitStatus() == 2) {
		t.Fatalf("child ended with %v, want SIGABRT\n%s", err, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{
		`msg="llama.cpp aborted the process"`, "simulated GGML_ASSERT(n_tokens_all <= cparams.n_batch)",
		"requests_in_flight=1", "in flight: id=", "POST /api/generate",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("abort report lacks %q:\n%s", want, out)
		}
	}
}

func abortChild(t *testing.T) {
	ts := startServer(t)
	body := `{"model":"stories","prompt":"Once upon a time","options":{"num_predict":100000,"temperature":0}}`
	resp, err := http.Post(ts.URL+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// Abort once the generation streams.
	if !bufio.NewScanner(resp.Body).Scan() {
		t.Fatal("no stream")
	}
	engine.Abort("simulated GGML_ASSERT(n_tokens_all <= cparams.n_batch)")
	t.Fatal("still alive after abort")
}
