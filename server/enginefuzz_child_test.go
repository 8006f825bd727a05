package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/jobs"
)

// FuzzEngine's server runs in a child process: a GGML_ASSERT aborts the
// whole process, and the fuzzer must see that as "the server died on this
// input" (with the server's last words) rather than die itself. The child
// is this test binary, run again with childDirEnv set and only
// TestEngineFuzzChild selected.
const childDirEnv = "TADPOLE_ENGINEFUZZ_CHILD"

// TestEngineFuzzChild is the server process of FuzzEngine, not a test of
// its own: without childDirEnv it skips. With it, it serves the models in
// $dir/models (jobs in $dir/data) on a loopback port, prints the address
// on stdout and serves until its stdin closes (the parent ended).
func TestEngineFuzzChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("the server process of FuzzEngine; runs only under it")
	}
	js, err := jobs.Open(jobs.Config{Dir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{
		ModelsDir: filepath.Join(dir, "models"),
		Sched:     testSched(2, 256),
		Jobs:      js, JobWorkers: 1,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	fmt.Printf("listening %s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0) // no Shutdown: the parent is gone
}

// fuzzModelsDir lays out the child's directory: the demo model, the
// generated bigram chat model, the generated reranker, a GGUF v1 file and
// a file that is not GGUF (as startServer does).
func fuzzModelsDir(tb testing.TB) string {
	dir := tb.TempDir()
	md := filepath.Join(dir, "models")
	if err := os.MkdirAll(md, 0o755); err != nil {
		tb.Fatal(err)
	}
	for src, name := range map[string]string{
		testmodels.Testdata("stories260K.gguf"):                             "stories.gguf",
		testmodels.Testdata("unsupported/tinyllamas-stories-260k-f32.gguf"): "old.gguf",
	} {
		if err := linkFile(src, filepath.Join(md, name)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(md, "junk.gguf"), []byte("not a model"), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := testmodels.WriteBigram(filepath.Join(md, "bigram.gguf")); err != nil {
		tb.Fatal(err)
	}
	if err := testmodels.WriteReranker(filepath.Join(md, "reranker.gguf")); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// fuzzChild is a running server process.
type fuzzChild struct {
	url    string
	cmd    *exec.Cmd
	stdin  io.Closer
	stderr *tail
	done   chan struct{} // closed when the process has exited
	err    error         // its exit status, once done
}

// startFuzzChild starts the server process on dir and waits for its
// address.
func startFuzzChild(dir string) (*fuzzChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^TestEngineFuzzChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	c := &fuzzChild{cmd: cmd, stderr: &tail{max: 16 << 10}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the server process: %w", err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				addr <- a
			}
		}
	}()
	go func() { c.err = cmd.Wait(); close(c.done) }()
	select {
	case a := <-addr:
		c.url = "http://" + a
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("the server process exited at start-up (%v): %s", c.err, c.stderr)
	case <-time.After(2 * time.Minute):
		c.stop()
		return nil, fmt.Errorf("the server process did not listen within 2 minutes: %s", c.stderr)
	}
}

// alive reports whether the process still runs.
func (c *fuzzChild) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// stop ends the process and waits for it.
func (c *fuzzChild) stop() {
	c.stdin.Close()
	c.cmd.Process.Kill()
	<-c.done
}

// responsive reports whether GET / and GET /api/ps still answer 200
// within the limit; the error says what failed.
func (c *fuzzChild) responsive(limit time.Duration) error {
	for _, p := range []string{"/", "/api/ps"} {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url+p, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		cancel()
		if err != nil {
			return fmt.Errorf("GET %s: %w", p, err)
		}
	}
	return nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// TestEngineFuzzSeesDeath: a server process that aborts (as a GGML_ASSERT
// does) is reported as dead with its exit status, not missed.
func TestEngineFuzzSeesDeath(t *testing.T) {
	c, err := startFuzzChild(fuzzModelsDir(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.stop()
	if err := fuzzLiveness(c); err != nil {
		t.Fatalf("a fresh server: %v", err)
	}
	c.cmd.Process.Signal(syscall.SIGABRT)
	<-c.done
	err = fuzzLiveness(c)
	if err == nil || !strings.Contains(err.Error(), "died") {
		t.Fatalf("after SIGABRT: %v", err)
	}
}
