package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

func TestRunOneShot(t *testing.T) {
	ts := startServer(t)
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"prompt", "", []string{"run", "bigram", "Hi"}},
		{"prompt of several words", "", []string{"run", "bigram", "Hi", "there"}},
		{"greedy", "", []string{"run", "-p", "temperature=0", "-p", "seed=1", "bigram", "Hi"}},
		{"piped stdin", "Hi\n", []string{"run", "bigram"}},
		{"piped stdin before the prompt", "Some text.\n", []string{"run", "bigram", "Summarize this."}},
		{"keepalive", "", []string{"run", "--keepalive", "10m", "bigram", "Hi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.run(t, tc.stdin, tc.args...)
			if r.code != 0 || r.stdout != testmodels.BigramAnswer+"\n\n" {
				t.Fatalf("want exactly %q: %s", testmodels.BigramAnswer+"\n\n", r)
			}
			if r.stderr != "" {
				t.Errorf("stderr: %q", r.stderr)
			}
		})
	}
}

func TestRunVerbose(t *testing.T) {
	ts := startServer(t)
	r := ts.mustRun(t, "run", "--verbose", "bigram", "Hi")
	if r.stdout != testmodels.BigramAnswer+"\n\n" {
		t.Fatalf("stdout %q", r.stdout)
	}
	// Ollama's layout: the model was loaded by this request.
	for _, label := range []string{"total duration:", "load duration:", "prompt eval count:", "prompt eval duration:",
		"prompt eval rate:", "eval count:", "eval duration:", "eval rate:"} {
		if !strings.Contains(r.stderr, "\n"+label) && !strings.HasPrefix(r.stderr, label) {
			t.Errorf("no %q in\n%s", label, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, " tokens/s\n") || !strings.Contains(r.stderr, " token(s)\n") {
		t.Errorf("rates:\n%s", r.stderr)
	}
}

// A one-shot run sends the prompt to /api/generate, as `ollama run MODEL
// PROMPT` does: the demo model, which has no chat template, continues the
// story from the bare prompt (through /api/chat it was wrapped in ChatML
// and the answer was not the story's).
func TestRunOneShotGenerates(t *testing.T) {
	ts := startServer(t)
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"prompt", "", []string{"run", "-p", "temperature=0", "-p", "num_predict=20", "stories", "Once upon a time"}},
		{"piped stdin", "Once upon a time\n", []string{"run", "-p", "temperature=0", "-p", "num_predict=20", "stories"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.run(t, tc.stdin, tc.args...)
			if r.code != 0 || !strings.HasPrefix(r.stdout, ", there was a little girl named Lily.") || !strings.HasSuffix(r.stdout, "\n\n") {
				t.Fatalf("want the story's continuation and an empty line: %s", r)
			}
		})
	}
	// /api/show gives Ollama's default template for a model without one.
	if r := ts.mustRun(t, "show", "--template", "stories"); strings.TrimSpace(r.stdout) != "{{ .Prompt }}" {
		t.Errorf("show --template: %s", r)
	}
}

func TestRunErrors(t *testing.T) {
	ts := startServer(t)
	for _, tc := range []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stderr string
	}{
		// The server's {"error": ...} is printed as it is.
		{"server error", "", []string{"run", "-p", "num_keep=100000", "bigram", "Hi"}, 1, `option num_keep: 100000 is out of range`},
		{"bad parameter value", "", []string{"run", "-p", "num_ctx=abc", "bigram", "Hi"}, 1, `parameter num_ctx: "abc" is not an integer`},
		{"unknown parameter", "", []string{"run", "-p", "colour=red", "bigram", "Hi"}, 1, `unknown parameter "colour"`},
		{"parameter without a value", "", []string{"run", "-p", "temperature", "bigram", "Hi"}, 1, "want NAME=VALUE"},
		{"bad keepalive", "", []string{"run", "--keepalive", "soon", "bigram", "Hi"}, 1, "--keepalive"},
		{"empty stdin", "", []string{"run", "bigram"}, 1, "nothing to ask"},
		{"no model", "", []string{"run"}, 2, "needs MODEL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.run(t, tc.stdin, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("want exit %d and %q: %s", tc.code, tc.stderr, r)
			}
		})
	}
}

// An interrupted one-shot answer ends the program with status 130.
func TestRunOneShotInterrupt(t *testing.T) {
	ts := startServer(t)
	// Greedy, the demo model repeats its story without an end.
	cmd := exec.Command(tadpole(t), "run", "-p", "temperature=0", "stories", "Once upon a time")
	cmd.Env = ts.env()
	out := &syncBuffer{}
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, func(s string) bool { return len(s) > 20 }, "some of the answer")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := wait(t, cmd)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v", err)
	}
}

// TestRunInteractive drives a chat through a pseudo-terminal as a person
// would: a message, a message of several lines, commands, Ctrl-C at the
// prompt and during an answer, /bye.
func TestRunInteractive(t *testing.T) {
	ts := startServer(t)
	for _, model := range []string{"bigram", "stories"} {
		// Load both: the stories chat below then starts at once.
		ts.mustRun(t, "run", "-p", "num_predict=1", model, "Hi")
	}
	cmd := exec.Command(tadpole(t), "run", "bigram")
	cmd.Env = ts.env()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	screen := &syncBuffer{}
	go io.Copy(screen, f)
	prompts := func(n int) {
		t.Helper()
		waitFor(t, screen, func(s string) bool { return strings.Count(s, ">>> ") >= n }, ">>> prompt")
	}
	answers := func(n int) {
		t.Helper()
		waitFor(t, screen, func(s string) bool { return strings.Count(s, testmodels.BigramAnswer) >= n }, "the answer")
	}
	send := func(s string) {
		t.Helper()
		if _, err := f.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	contains := func(want string) {
		t.Helper()
		waitFor(t, screen, func(s string) bool { return strings.Contains(s, want) }, want)
	}

	prompts(1)
	send("Hi\n")
	answers(1)
	prompts(2)
	send("\"\"\"\nfirst line\nsecond line\n\"\"\"\n")
	contains("... ")
	answers(2)
	prompts(3)
	send("/set parameter temperature 0\n")
	contains("Set parameter 'temperature' to '0'")
	send("/clear\n")
	contains("Cleared session context")
	send("/nonsense\n")
	contains("Unknown command '/nonsense'")
	send("/?\n")
	contains("Available commands:")
	send("/show info\n")
	contains("    architecture    ")
	send("/show template\n")
	contains("<|im_start|>")
	send("/show parameters\n")
	contains("User defined parameters:\r\ntemperature ")
	prompts(10)
	send("\x03") // Ctrl-C at the prompt keeps the session
	contains("Use Ctrl + d or /bye to exit.")
	prompts(11)
	send("Hi again\n")
	answers(3)
	prompts(12)
	send("/bye\n")
	if err := wait(t, cmd); err != nil {
		t.Fatalf("exit: %v\n%s", err, screen)
	}

	// Ctrl-C during an answer stops it, not the session.
	cmd = exec.Command(tadpole(t), "run", "stories")
	cmd.Env = ts.env()
	f2, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	screen2 := &syncBuffer{}
	go io.Copy(screen2, f2)
	waitFor(t, screen2, func(s string) bool { return strings.Count(s, ">>> ") >= 1 }, ">>> prompt")
	f2.Write([]byte("Once upon a time\n"))
	mark := len(screen2.String())
	waitFor(t, screen2, func(s string) bool { return len(s) > mark+200 }, "a long answer")
	f2.Write([]byte("\x03"))
	waitFor(t, screen2, func(s string) bool { return strings.Count(s, ">>> ") >= 2 }, "the prompt after Ctrl-C")
	f2.Write([]byte("/bye\n"))
	if err := wait(t, cmd); err != nil {
		t.Fatalf("exit: %v\n%s", err, screen2)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls the output until ok, failing the test after a minute.
func waitFor(t *testing.T, out *syncBuffer, ok func(string) bool, what string) {
	t.Helper()
	seen := false
	defer func() {
		if !seen { // Eventually failed the test
			t.Logf("the output:\n%s", out)
		}
	}()
	testkit.Eventually(t, time.Minute, what+" in the output", func() bool { return ok(out.String()) })
	seen = true
}

// wait waits for the command, killing it after a minute.
func wait(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		cmd.Process.Signal(syscall.SIGKILL)
		t.Fatalf("%s did not exit", cmd)
		return nil
	}
}
