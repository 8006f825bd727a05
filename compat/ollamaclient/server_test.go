package ollamaclient

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// tadpoleBin is the server under test: $TADPOLE_BIN, made absolute.
var tadpoleBin string

func TestMain(m *testing.M) {
	bin := os.Getenv("TADPOLE_BIN")
	if bin == "" {
		fmt.Fprintln(os.Stderr, "TADPOLE_BIN is not set: these tests run the real server; use `make test-compat` (it builds bin/tadpole first) or set TADPOLE_BIN=/path/to/tadpole")
		os.Exit(2)
	}
	abs, err := filepath.Abs(bin)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "TADPOLE_BIN=%s: %v (run `make build` first)\n", bin, err)
		os.Exit(2)
	}
	tadpoleBin = abs
	os.Exit(m.Run())
}

// tadpole is one running `tadpole serve`.
type tadpole struct {
	url    string
	client *api.Client
	logs   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

func (s *tadpole) log() string {
	b, _ := os.ReadFile(s.logs)
	return string(b)
}

// startTadpole runs bin/tadpole serve on a free loopback port with a
// models directory holding the demo model as "stories", the generated
// bigram chat model as "bigram" and the scripted tool-calling, thinking
// model as "script", and returns Ollama's official client of it. extra
// are more serve flags. The server is killed when the test ends.
func startTadpole(t *testing.T, extra ...string) *tadpole {
	t.Helper()
	return startTadpoleWith(t, "http", http.DefaultClient, extra...)
}

// startTadpoleWith is startTadpole with the URL scheme the server serves
// ("https" with --tls-cert) and the HTTP client to reach it with.
func startTadpoleWith(t *testing.T, scheme string, hc *http.Client, extra ...string) *tadpole {
	t.Helper()
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	stories, err := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(stories, filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteBigram(filepath.Join(models, "bigram.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteScript(filepath.Join(models, "script.gguf")); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close()
	s := &tadpole{url: scheme + "://" + host, logs: filepath.Join(dir, "serve.log"), exited: make(chan struct{})}
	f, err := os.Create(s.logs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The server's configuration is the flags alone: none of the
	// developer's TADPOLE_* (an API key, a models directory) applies.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TADPOLE_") {
			env = append(env, kv)
		}
	}
	args := append([]string{"serve", "--host", host, "--models", models, "--data-dir", filepath.Join(dir, "data"),
		"--threads", "1"}, extra...)
	s.cmd = exec.Command(tadpoleBin, args...)
	s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = env, f, f
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", tadpoleBin, err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("tadpole serve's log:\n%s", s.log())
		}
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-s.exited:
			t.Fatalf("tadpole serve exited: %v\n%s", s.err, s.log())
		default:
		}
		if resp, err := hc.Get(s.url + "/"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tadpole serve does not answer within a minute\n%s", s.log())
		}
	}
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	s.client = api.NewClient(u, hc)
	return s
}
