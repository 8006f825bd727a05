// Package serve starts bin/tadpole serve as a child process for the
// loopback tools (scripts/soak, scripts/attack): a free loopback port,
// the log in a file, a wait until it answers, a stop that kills it if it
// lingers, and the models directory both tools serve.
package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// Process is a running tadpole serve.
type Process struct {
	URL  string    // http://127.0.0.1:PORT
	Cmd  *exec.Cmd // Cmd.Process.Pid for /proc
	Log  string    // its stdout and stderr
	done chan struct{}
	err  error
}

// FreePort is a loopback port nothing listens on now.
func FreePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, nil
}

// Models lays out dir/models with the demo model ("stories", linked) and
// the generated bigram chat model ("bigram"), and returns its path.
func Models(dir string) (string, error) {
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		return "", err
	}
	src, err := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err != nil {
		return "", err
	}
	if err := os.Symlink(src, filepath.Join(models, "stories.gguf")); err != nil {
		return "", fmt.Errorf("link the demo model: %w", err)
	}
	if err := testmodels.WriteBigram(filepath.Join(models, "bigram.gguf")); err != nil {
		return "", fmt.Errorf("write the bigram model: %w", err)
	}
	return models, nil
}

// Start runs bin serve --host 127.0.0.1:port with the further args, in
// workdir ("": this one), its output in logPath, and waits (a minute at
// most) until GET /api/version answers 200.
func Start(bin, port, workdir, logPath string, args []string) (*Process, error) {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &Process{URL: "http://127.0.0.1:" + port, Log: logPath, done: make(chan struct{})}
	p.Cmd = exec.Command(bin, append([]string{"serve", "--host", "127.0.0.1:" + port}, args...)...)
	p.Cmd.Dir = workdir
	p.Cmd.Stdout, p.Cmd.Stderr = logf, logf
	if err := p.Cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { p.err = p.Cmd.Wait(); logf.Close(); close(p.done) }()
	deadline := time.Now().Add(time.Minute)
	for !p.answers() {
		select {
		case <-p.done:
			return nil, fmt.Errorf("the server exited at start-up (%v):\n%s", p.err, p.Tail(2000))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("the server did not answer within a minute:\n%s", p.Tail(2000))
		}
	}
	return p, nil
}

func (p *Process) answers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/version", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Err is how the process ended (nil while it runs, or after a clean
// exit).
func (p *Process) Err() error {
	if p.Running() {
		return nil
	}
	return p.err
}

// Alive reports whether the process runs and answers /api/version.
func (p *Process) Alive() bool { return p.Running() && p.answers() }

// Stop asks the server to shut down (SIGINT) and kills it if it has not
// within 15 s.
func (p *Process) Stop() {
	if !p.Running() {
		return
	}
	p.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.Cmd.Process.Kill()
		<-p.done
	}
}

// Tail is the last n bytes of the server's log.
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
