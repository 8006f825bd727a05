package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// The coding agents' official npm packages, pinned. The tests install
// them once into the cache directory (TADPOLE_CACHE, else
// $XDG_CACHE_HOME/tadpole, else ~/.cache/tadpole) and reuse them.
const (
	claudeCodeVersion = "2.1.332"
	codexVersion      = "0.171.0"
)

// agentContext is the scripted model's trained context and the server's
// context: the agents' first requests are 48k (Claude Code) and 41k
// (Codex) characters of system prompt, tool schemas and instructions.
const agentContext = 65536

// agentsWanted skips the agent tests only when asked to in so many words
// (TADPOLE_AGENTS=0, e.g. on a machine without npm); otherwise they run,
// in `make test` and CI, and fail when npm cannot install the agents.
func agentsWanted(t *testing.T) {
	t.Helper()
	if os.Getenv("TADPOLE_AGENTS") == "0" {
		t.Skip("TADPOLE_AGENTS=0: the coding agent tests are switched off")
	}
}

// agentCache is where the agents are installed.
func agentCache() string {
	if d := os.Getenv("TADPOLE_CACHE"); d != "" {
		return filepath.Join(d, "agents")
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "tadpole", "agents")
}

// installAgent installs pkg@version with npm under the cache (once) and
// returns the path of its command bin. npm missing or unreachable fails
// the test: these tests must not pass by not running.
func installAgent(t *testing.T, pkg, version, bin string) string {
	t.Helper()
	dir := filepath.Join(agentCache(), path.Base(pkg)+"-"+version)
	cmdPath := filepath.Join(dir, "node_modules", ".bin", bin)
	check := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, cmdPath, "--version").CombinedOutput()
		return err == nil && strings.Contains(string(out), version)
	}
	if check() {
		return cmdPath
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("the agent tests need npm (Node.js 20 or later) to install %s@%s: %v", pkg, version, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", pkg+"@"+version)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s into %s failed (is the npm registry reachable?): %v\n%s", pkg, version, dir, err, out)
	}
	if !check() {
		t.Fatalf("%s@%s installed into %s but %s --version does not answer %s", pkg, version, dir, cmdPath, version)
	}
	return cmdPath
}

// exchange is one request an agent made, as the recording proxy saw it.
type exchange struct {
	Path       string
	Status     int
	Request    []byte
	Response   []byte
	Elapsed    time.Duration
	InputToks  int
	OutputToks int
}

// recorder is a reverse proxy in front of the server that keeps every
// request and response body.
type recorder struct {
	mu       sync.Mutex
	log      []*exchange
	next     http.Handler
	inflight sync.WaitGroup
}

type recordWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *recordWriter) WriteHeader(s int) { w.status = s; w.ResponseWriter.WriteHeader(s) }
func (w *recordWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}
func (w *recordWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.inflight.Add(1)
	defer rec.inflight.Done()
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	start := time.Now()
	rw := &recordWriter{ResponseWriter: w}
	// Deferred: the reverse proxy panics with http.ErrAbortHandler when
	// the agent hangs up as soon as it has the answer it needs.
	defer func() {
		path := r.Method + " " + r.URL.Path
		if enc := r.Header.Get("Content-Encoding"); enc != "" {
			path += " (" + enc + ")"
		}
		ex := &exchange{Path: path, Status: rw.status, Request: body, Response: rw.body.Bytes(), Elapsed: time.Since(start)}
		ex.InputToks, ex.OutputToks = usageOf(ex.Response)
		rec.mu.Lock()
		rec.log = append(rec.log, ex)
		rec.mu.Unlock()
	}()
	rec.next.ServeHTTP(rw, r)
}

// exchanges waits for the requests in flight (an agent may exit as soon
// as it has read an answer) and returns them all.
func (rec *recorder) exchanges() []*exchange {
	rec.inflight.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]*exchange(nil), rec.log...)
}

// sseData returns the data payloads of an event stream (or the body
// itself when it is not one).
func sseData(body []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			out = append(out, append([]byte(nil), d...))
		}
	}
	if len(out) == 0 {
		out = append(out, body)
	}
	return out
}

// usageOf finds the token counts in an Anthropic or Responses answer,
// streamed or not.
func usageOf(body []byte) (in, out int) {
	type usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
	for _, d := range sseData(body) {
		var ev struct {
			Usage    *usage                  `json:"usage"`
			Message  *struct{ Usage *usage } `json:"message"`
			Response *struct{ Usage *usage } `json:"response"`
		}
		if json.Unmarshal(d, &ev) != nil {
			continue
		}
		us := []*usage{ev.Usage}
		if ev.Message != nil {
			us = append(us, ev.Message.Usage)
		}
		if ev.Response != nil {
			us = append(us, ev.Response.Usage)
		}
		for _, u := range us {
			if u != nil {
				in, out = max(in, u.InputTokens), max(out, u.OutputTokens)
			}
		}
	}
	return in, out
}

// agentServer serves one scripted model as "agent" with the agents'
// context, behind a recording proxy; it returns the proxy's URL.
func agentServer(t *testing.T, script testmodels.ToolScript) (string, *recorder) {
	t.Helper()
	dir := t.TempDir()
	start := time.Now()
	if err := testmodels.WriteScriptVariant(filepath.Join(dir, "agent.gguf"), script); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote the scripted model in %v", time.Since(start).Round(time.Millisecond))
	st, err := jobs.Open(jobs.Config{Dir: t.TempDir(), Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// One thread and no flash attention: the model is tiny, so ggml's
	// per-node thread barriers dominate on a busy machine (a 32k-token
	// prompt took 46 s with 2 threads, 24 s with 1), and with 8-dimensional
	// heads the plain attention path beats the flash one (24 s vs 14 s).
	srv := New(Config{
		ModelsDir: dir, Sched: sched.Config{Parallel: 1, NumCtx: agentContext, KeepAlive: 10 * time.Minute, FlashAttn: engine.FlashAttentionOff, Threads: 1},
		Jobs: st, JobWorkers: 1, ResponsesTTL: time.Hour,
	})
	ts := serveForTest(t, srv)
	target, _ := url.Parse(ts.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rec := &recorder{next: rp}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: rec}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String(), rec
}

// agentEnv is the environment the agents run in: a fresh HOME, PATH (for
// node), no telemetry or update checks, and a proxy at a closed loopback
// port for anything that is not loopback.
func agentEnv(home string, extra ...string) []string {
	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb", "LANG=C.UTF-8",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "ALL_PROXY=http://127.0.0.1:9",
		"http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9",
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
	}
	return append(env, extra...)
}

// runAgent runs an agent command in dir and returns its output.
func runAgent(t *testing.T, dir string, env []string, name string, args ...string) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader("")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		t.Errorf("%s: %v after %v\n%s", filepath.Base(name), err, took.Round(time.Millisecond), out.String())
	}
	return out.String(), took
}

// transcript logs each request's summary: status, prompt tokens, time,
// and the summary summarize gives its bodies.
func transcript(t *testing.T, rec *recorder, summarize func(req, resp []byte) string) {
	t.Helper()
	for i, ex := range rec.exchanges() {
		t.Logf("request %d: %s -> %d, %d prompt tokens, %d generated, %v; %s", i+1, ex.Path, ex.Status, ex.InputToks, ex.OutputToks,
			ex.Elapsed.Round(time.Millisecond), summarize(ex.Request, ex.Response))
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// agentFile writes the file the agent is to read: a line it cannot guess.
func agentFile(t *testing.T, dir string) (path, content string) {
	content = fmt.Sprintf("The tadpole code word is %d-frog.", time.Now().UnixNano()%1000000)
	path = filepath.Join(dir, "note.txt")
	if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, content
}

const agentAnswer = "The note has been read."

// Claude Code (`claude -p`, Anthropic Messages API) reads a file with its
// Read tool at the scripted model's request and prints the model's final
// sentence.
func TestAgentClaudeCode(t *testing.T) {
	agentsWanted(t)
	claude := installAgent(t, "@anthropic-ai/claude-code", claudeCodeVersion, "claude")
	work, home := t.TempDir(), t.TempDir()
	note, content := agentFile(t, work)
	base, rec := agentServer(t, testmodels.ToolScript{
		Tool: "Read", Arguments: `{"file_path": "` + note + `"}`, Answer: agentAnswer, ContextLength: agentContext,
	})
	env := agentEnv(home,
		"ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY=tadpole-test",
		"ANTHROPIC_MODEL=agent", "ANTHROPIC_SMALL_FAST_MODEL=agent", "ANTHROPIC_DEFAULT_HAIKU_MODEL=agent",
		"ANTHROPIC_DEFAULT_SONNET_MODEL=agent", "ANTHROPIC_DEFAULT_OPUS_MODEL=agent",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1",
		fmt.Sprintf("CLAUDE_CODE_MAX_CONTEXT_TOKENS=%d", agentContext), // the window of a model it does not know
	)
	out, took := runAgent(t, work, env, claude, "-p", "What does note.txt say?", "--model", "agent",
		"--allowedTools", "Read", "--output-format", "text")
	t.Logf("claude -p took %v; output: %q", took.Round(time.Millisecond), out)
	transcript(t, rec, summarizeAnthropic)

	var sawCall, sawResult bool
	for _, ex := range rec.exchanges() {
		if ex.Status != http.StatusOK {
			t.Errorf("%s answered %d: %s", ex.Path, ex.Status, clip(string(ex.Response), 500))
		}
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(ex.Request, &req)
		for _, m := range req.Messages {
			var blocks []struct {
				Type    string          `json:"type"`
				Name    string          `json:"name"`
				Input   json.RawMessage `json:"input"`
				Content json.RawMessage `json:"content"`
			}
			json.Unmarshal(m.Content, &blocks)
			for _, b := range blocks {
				switch b.Type {
				case "tool_use":
					var in struct {
						FilePath string `json:"file_path"`
					}
					sawCall = sawCall || b.Name == "Read" && json.Unmarshal(b.Input, &in) == nil && in.FilePath == note
				case "tool_result":
					sawResult = sawResult || strings.Contains(string(b.Content), content)
				}
			}
		}
	}
	if !sawCall || !sawResult {
		t.Errorf("Claude Code did not send back the Read call (%v) and its result holding the file's line (%v)", sawCall, sawResult)
	}
	if !strings.Contains(out, agentAnswer) {
		t.Errorf("Claude Code printed %q, not the model's final answer %q", out, agentAnswer)
	}
}

// summarizeAnthropic is one line about a Messages exchange: the last
// message's blocks and what the model answered.
func summarizeAnthropic(reqBody, respBody []byte) string {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	}
	json.Unmarshal(reqBody, &req)
	var parts []string
	parts = append(parts, fmt.Sprintf("%d messages, %d tools, %d request bytes", len(req.Messages), len(req.Tools), len(reqBody)))
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					parts = append(parts, "tool result "+clip(string(b.Content), 160))
				}
			}
		}
	}
	var text, tool strings.Builder
	for _, d := range sseData(respBody) {
		var ev struct {
			Type         string `json:"type"`
			ContentBlock struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		if json.Unmarshal(d, &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "content_block_start" && ev.ContentBlock.Type == "tool_use":
			tool.WriteString(ev.ContentBlock.Name + " ")
		case ev.Delta.Type == "text_delta":
			text.WriteString(ev.Delta.Text)
		case ev.Delta.Type == "input_json_delta":
			tool.WriteString(ev.Delta.PartialJSON)
		}
	}
	if tool.Len() > 0 {
		parts = append(parts, "tool call "+tool.String())
	}
	if text.Len() > 0 {
		parts = append(parts, fmt.Sprintf("text %q", text.String()))
	}
	if len(respBody) > 0 && tool.Len() == 0 && text.Len() == 0 {
		parts = append(parts, "answer "+clip(string(respBody), 300))
	}
	return strings.Join(parts, "; ")
}

// Codex (`codex exec`, a custom provider on the Responses API) runs `cat`
// through its exec_command tool at the scripted model's request and
// prints the model's final sentence.
func TestAgentCodex(t *testing.T) {
	agentsWanted(t)
	codex := installAgent(t, "@openai/codex", codexVersion, "codex")
	work, home := t.TempDir(), t.TempDir()
	note, content := agentFile(t, work)
	base, rec := agentServer(t, testmodels.ToolScript{
		Tool: "exec_command", Arguments: `{"cmd": "cat ` + note + `"}`, Answer: agentAnswer, ContextLength: agentContext,
	})
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	env := agentEnv(home, "CODEX_HOME="+codexHome, "TADPOLE_API_KEY=tadpole-test", "RUST_LOG=error")
	out, took := runAgent(t, work, env, codex, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access",
		"-c", "model_provider=tadpole", "-c", "model=agent",
		"-c", `model_providers.tadpole={name="Tadpole", base_url="`+base+`/v1", env_key="TADPOLE_API_KEY", wire_api="responses"}`,
		"-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false", "-c", "feedback.enabled=false",
		"-c", fmt.Sprintf("model_context_window=%d", agentContext),
		"What does note.txt say?")
	t.Logf("codex exec took %v; output: %q", took.Round(time.Millisecond), out)
	transcript(t, rec, summarizeResponses)

	var sawCall, sawResult bool
	for _, ex := range rec.exchanges() {
		if ex.Status != http.StatusOK {
			t.Errorf("%s answered %d: %s", ex.Path, ex.Status, clip(string(ex.Response), 500))
		}
		var req struct {
			Input []struct {
				Type      string          `json:"type"`
				Name      string          `json:"name"`
				Arguments string          `json:"arguments"`
				Output    json.RawMessage `json:"output"`
			} `json:"input"`
		}
		json.Unmarshal(ex.Request, &req)
		for _, it := range req.Input {
			switch it.Type {
			case "function_call":
				sawCall = sawCall || it.Name == "exec_command" && strings.Contains(it.Arguments, "cat "+note)
			case "function_call_output":
				sawResult = sawResult || strings.Contains(string(it.Output), content)
			}
		}
	}
	if !sawCall || !sawResult {
		t.Errorf("Codex did not send back the exec_command call (%v) and its output holding the file's line (%v)", sawCall, sawResult)
	}
	if !strings.Contains(out, agentAnswer) {
		t.Errorf("Codex printed %q, not the model's final answer %q", out, agentAnswer)
	}
}

// summarizeResponses is one line about a Responses exchange.
func summarizeResponses(reqBody, respBody []byte) string {
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
		Tools []json.RawMessage `json:"tools"`
	}
	json.Unmarshal(reqBody, &req)
	parts := []string{fmt.Sprintf("%d input items, %d tools, %d request bytes", len(req.Input), len(req.Tools), len(reqBody))}
	for _, it := range req.Input {
		if it.Type == "function_call_output" {
			parts = append(parts, "tool result "+clip(string(it.Output), 160))
		}
	}
	found := false
	for _, d := range sseData(respBody) {
		var ev struct {
			Type     string `json:"type"`
			Response struct {
				Status string `json:"status"`
				Output []struct {
					Type      string `json:"type"`
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
					Content   []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"output"`
			} `json:"response"`
		}
		if json.Unmarshal(d, &ev) != nil || ev.Type != "response.completed" && ev.Type != "response.failed" && ev.Type != "response.incomplete" {
			continue
		}
		found = true
		parts = append(parts, ev.Type+" "+ev.Response.Status)
		for _, o := range ev.Response.Output {
			switch o.Type {
			case "function_call":
				parts = append(parts, "tool call "+o.Name+" "+o.Arguments)
			case "message":
				for _, c := range o.Content {
					parts = append(parts, fmt.Sprintf("text %q", c.Text))
				}
			}
		}
	}
	if !found && len(respBody) > 0 {
		parts = append(parts, "answer "+clip(string(respBody), 300))
	}
	return strings.Join(parts, "; ")
}
