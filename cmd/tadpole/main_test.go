package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// binDir holds the binary under test, built on first use (tadpole).
var binDir string

// TestMain removes the binary under test, if a test built it.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var built struct {
	once sync.Once
	path string
	err  error
}

// tadpole is the binary under test, built once, on first use (a test of
// the full tier: -short skips the tests that run it). It inherits the
// cgo flags of `go test` (run it the way the Makefile does) and uses
// -race when the tests do, so both builds share Go's build cache.
func tadpole(t testing.TB) string {
	t.Helper()
	testkit.Full(t, "runs the tadpole binary")
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "tadpole-cli-")
		if err != nil {
			built.err = err
			return
		}
		binDir = dir
		built.path = filepath.Join(dir, "tadpole")
		goCmd, err := exec.LookPath("go")
		if err != nil {
			goCmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		args := []string{"build", "-o", built.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		if out, err := exec.Command(goCmd, append(args, ".")...).CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/tadpole: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// testServer is a Tadpole server on a loopback port, serving a models
// directory with the demo model as "stories", the bigram chat model as
// "bigram" and the scripted tool-calling, thinking model as "script".
type testServer struct {
	host string // for TADPOLE_HOST
	dir  string // the models directory
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	testkit.Full(t, "serves the real engine")
	dir := t.TempDir()
	abs, err := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteBigram(filepath.Join(dir, "bigram.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteScript(filepath.Join(dir, "script.gguf")); err != nil {
		t.Fatal(err)
	}
	// The tests' registries listen on 127.0.0.1 (any port).
	srv := server.New(server.Config{ModelsDir: dir, Sched: sched.Config{Parallel: 2, NumCtx: 256, KeepAlive: time.Minute, Threads: 1}, AllowRegistries: []string{"127.0.0.1"}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return &testServer{host: ln.Addr().String(), dir: dir}
}

// result is what a run of the binary printed and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs the binary against the server with stdin as its input (not a
// terminal) and waits for it.
func (ts *testServer) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runBin(t, ts.env(), stdin, args...)
}

func (ts *testServer) env() []string {
	return binEnv("TADPOLE_HOST=" + ts.host)
}

// binEnv is the environment of the binary under test: this process's,
// without the race detector's one-second pause at exit, plus extra.
func binEnv(extra ...string) []string {
	return append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), extra...)
}

func runBin(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tadpole(t), args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tadpole %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustRun runs the binary and fails the test unless it exits 0.
func (ts *testServer) mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := ts.run(t, "", args...)
	if r.code != 0 {
		t.Fatalf("tadpole %s: %s", strings.Join(args, " "), r)
	}
	return r
}
