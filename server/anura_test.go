package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// apiOptions configure startAPIServer.
type apiOptions struct {
	auth     *auth.Auth
	maxBody  int64
	workers  int
	parallel int // slots (default 2)
}

// startAPIServer serves the demo model as "stories" with a job store in
// a temporary data directory, API keys and limits as given.
func startAPIServer(t *testing.T, o apiOptions) *testServer {
	t.Helper()
	if o.parallel == 0 {
		o.parallel = 2
	}
	return serveConfig(t, Config{
		ModelsDir: testModels(t, "stories"), Sched: testSched(o.parallel, 256),
		Auth: o.auth, MaxBody: o.maxBody, Jobs: testJobs(t, jobs.Config{Retention: time.Hour}), JobWorkers: o.workers,
	})
}

// do sends a request (with a bearer key when key is set) and returns the
// status, headers and body.
func do(t *testing.T, method, url, key, body string) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// anuraJob is the job document of the Anura API.
type anuraJob struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Status     int             `json:"status"`
	State      string          `json:"state"`
	Model      string          `json:"model"`
	Request    json.RawMessage `json:"request"`
	Error      string          `json:"error"`
	Attempts   int             `json:"attempts"`
	ResultsURL string          `json:"results_url"`
}

// envelopeOf decodes Anura's {"data", "message", "status"} answer.
func envelopeOf[T any](t *testing.T, body []byte) (T, int) {
	t.Helper()
	var env struct {
		Data    T      `json:"data"`
		Message string `json:"message"`
		Status  int    `json:"status"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return env.Data, env.Status
}

// submitJob creates a job and returns it.
func submitJob(t *testing.T, ts *testServer, key, path, body string) anuraJob {
	t.Helper()
	code, h, b := do(t, "POST", ts.URL+path, key, body)
	if code != http.StatusAccepted {
		t.Fatalf("POST %s %s: %d %s", path, body, code, b)
	}
	j, status := envelopeOf[anuraJob](t, b)
	if status != 202 || j.ID == "" || h.Get("Location") != "/api/v1/jobs/"+j.ID || j.Status > 2 {
		t.Fatalf("created: %s", b)
	}
	return j
}

// waitJob polls a job until it has finished (status 2, 3 or 4).
func waitJob(t *testing.T, ts *testServer, key, id string) anuraJob {
	t.Helper()
	var j anuraJob
	testkit.Eventually(t, 2*time.Minute, "job "+id+" to finish", func() bool {
		j = getJob(t, ts, key, id)
		return j.Status >= 2
	})
	return j
}

// waitRunning polls a job until it runs (status 1).
func waitRunning(t *testing.T, ts *testServer, key, id string) {
	t.Helper()
	testkit.Eventually(t, time.Minute, "job "+id+" to run", func() bool { return getJob(t, ts, key, id).Status == 1 })
}

// getJob is a job as GET /api/v1/jobs/{id} answers it.
func getJob(t *testing.T, ts *testServer, key, id string) anuraJob {
	t.Helper()
	code, _, b := do(t, "GET", ts.URL+"/api/v1/jobs/"+id, key, "")
	if code != 200 {
		t.Fatalf("GET job %s: %d %s", id, code, b)
	}
	j, _ := envelopeOf[anuraJob](t, b)
	return j
}

func TestAnuraCowsayJob(t *testing.T) {
	ts := startAPIServer(t, apiOptions{})
	j := submitJob(t, ts, "", "/api/v1/cowsay", `{"message": "Hello, Tadpole!"}`)
	if j.Type != "cowsay" || string(j.Request) != `{"message":"Hello, Tadpole!"}` {
		t.Fatalf("job %+v", j)
	}
	done := waitJob(t, ts, "", j.ID)
	if done.Status != 2 || done.State != "completed" || done.Attempts != 1 || done.ResultsURL != "/api/v1/cowsay/"+j.ID+"/results" {
		t.Fatalf("finished: %+v", done)
	}
	code, h, b := do(t, "GET", ts.URL+done.ResultsURL, "", "")
	const want = ` _________________
< Hello, Tadpole! >
 -----------------
        \   ^__^
         \  (oo)\_______
            (__)\       )\/\
                ||----w |
                ||     ||
`
	if code != 200 || string(b) != want || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		t.Fatalf("results %d %s:\n%s", code, h.Get("Content-Type"), b)
	}
	// A cowsay job is not an ollama job.
	if code, _, _ := do(t, "GET", ts.URL+"/api/v1/ollama/"+j.ID+"/results", "", ""); code != 404 {
		t.Fatalf("as an ollama job: %d", code)
	}
}

func TestAnuraOllamaJobs(t *testing.T) {
	ts := startAPIServer(t, apiOptions{})
	gen := `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":30}}`
	chat := `{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"options":{"temperature":0,"num_predict":20}}`
	// Anura's examples put max_tokens and temperature at the top.
	short := `{"model":"stories","prompt":"Once upon a time","max_tokens":5,"temperature":0}`
	jg := submitJob(t, ts, "", "/api/v1/ollama", gen)
	jc := submitJob(t, ts, "", "/api/v1/ollama", chat)
	js := submitJob(t, ts, "", "/api/v1/ollama", short)
	if jg.Model != "stories" || jg.Type != "ollama" {
		t.Fatalf("job %+v", jg)
	}

	// The result is exactly the non-streamed Ollama answer.
	waitJob(t, ts, "", jg.ID)
	code, h, b := do(t, "GET", ts.URL+"/api/v1/ollama/"+jg.ID+"/results", "", "")
	var g ollamaapi.GenerateResponse
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || json.Unmarshal(b, &g) != nil {
		t.Fatalf("results %d: %s", code, b)
	}
	_, _, direct := do(t, "POST", ts.URL+"/api/generate", "", strings.Replace(gen, `"options"`, `"stream":false,"options"`, 1))
	var d ollamaapi.GenerateResponse
	json.Unmarshal(direct, &d)
	if !strings.HasPrefix(g.Response, storiesContinuation) || g.Response != d.Response || !g.Done || g.DoneReason != "length" ||
		g.EvalCount != 30 || g.PromptEvalCount != 5 || len(g.Context) != 35 || fmt.Sprint(g.Context) != fmt.Sprint(d.Context) ||
		g.Model != "stories" || g.TotalDuration <= 0 || g.EvalDuration <= 0 {
		t.Fatalf("generate job: %+v\ndirect: %+v", g, d)
	}
	// The same keys as /api/generate's answer.
	var gk, dk map[string]any
	json.Unmarshal(b, &gk)
	json.Unmarshal(direct, &dk)
	delete(dk, "load_duration") // the direct request found the model loaded
	delete(gk, "load_duration")
	if fmt.Sprint(keys(gk)) != fmt.Sprint(keys(dk)) {
		t.Fatalf("fields %v, /api/generate has %v", keys(gk), keys(dk))
	}

	waitJob(t, ts, "", jc.ID)
	_, _, b = do(t, "GET", ts.URL+"/api/v1/ollama/"+jc.ID+"/results", "", "")
	var c, dc ollamaapi.ChatResponse
	json.Unmarshal(b, &c)
	_, _, direct = do(t, "POST", ts.URL+"/api/chat", "", strings.Replace(chat, `"options"`, `"stream":false,"options"`, 1))
	json.Unmarshal(direct, &dc)
	if c.Message.Role != "assistant" || c.Message.Content == "" || c.Message.Content != dc.Message.Content || !c.Done || c.EvalCount != 20 {
		t.Fatalf("chat job: %s\ndirect: %s", b, direct)
	}

	waitJob(t, ts, "", js.ID)
	_, _, b = do(t, "GET", ts.URL+"/api/v1/ollama/"+js.ID+"/results", "", "")
	json.Unmarshal(b, &g)
	if g.EvalCount != 5 || !strings.HasPrefix(storiesContinuation, g.Response) {
		t.Fatalf("max_tokens job: %s", b)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestAnuraJobErrors(t *testing.T) {
	ts := startAPIServer(t, apiOptions{})
	// A job on a model that does not exist fails with the error recorded.
	j := submitJob(t, ts, "", "/api/v1/ollama", `{"model":"nope","prompt":"hi"}`)
	j = waitJob(t, ts, "", j.ID)
	if j.Status != 3 || j.State != "failed" || !strings.Contains(j.Error, `model "nope" not found`) {
		t.Fatalf("failed job: %+v", j)
	}
	code, _, b := do(t, "GET", ts.URL+"/api/v1/ollama/"+j.ID+"/results", "", "")
	if code != 409 || !strings.Contains(string(b), "not found") {
		t.Fatalf("results of a failed job: %d %s", code, b)
	}
	// The server still serves.
	ok := submitJob(t, ts, "", "/api/v1/cowsay", `{"message":"still here"}`)
	if waitJob(t, ts, "", ok.ID).Status != 2 {
		t.Fatal("cowsay after a failed job")
	}

	for _, tc := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"GET", "/api/v1/jobs/nope", "", 404, `job "nope" not found`},
		{"DELETE", "/api/v1/jobs/nope", "", 404, "not found"},
		{"GET", "/api/v1/cowsay/nope/results", "", 404, "not found"},
		{"GET", "/api/v1/ollama/nope/results", "", 404, "not found"},
		{"POST", "/api/v1/cowsay", "", 400, "missing request body"},
		{"POST", "/api/v1/cowsay", `{"message":`, 400, "invalid JSON"},
		{"POST", "/api/v1/cowsay", `{"message":"  "}`, 400, "message is required"},
		{"POST", "/api/v1/cowsay", `{"message":3}`, 400, "invalid JSON"},
		{"POST", "/api/v1/ollama", `{"model":"stories"}`, 400, "either messages"},
		{"POST", "/api/v1/ollama", `{"model":"stories","prompt":"a","messages":[]}`, 400, "either messages"},
		{"POST", "/api/v1/ollama", `{"prompt":"a"}`, 400, "model is required"},
		{"POST", "/api/v1/ollama", `{"model":"stories","prompt":1}`, 400, `"prompt"`},
		{"GET", "/api/v1/jobs?status=done", "", 400, "unknown job status"},
		{"GET", "/api/v1/jobs?limit=0", "", 400, "limit"},
		{"GET", "/api/v1/jobs?after=x", "", 400, "cursor"},
		{"GET", "/api/v1/nothing", "", 404, "Not Found"},
	} {
		code, _, b := do(t, tc.method, ts.URL+tc.path, "", tc.body)
		var e struct {
			Error, Message string
			Status         int
		}
		json.Unmarshal(b, &e)
		if code != tc.code || e.Status != tc.code || !strings.Contains(e.Error, tc.msg) || e.Message != e.Error {
			t.Errorf("%s %s %s: %d %s", tc.method, tc.path, tc.body, code, b)
		}
	}
}

func TestAnuraListJobs(t *testing.T) {
	ts := startAPIServer(t, apiOptions{})
	var ids []string
	for i := range 5 {
		ids = append(ids, submitJob(t, ts, "", "/api/v1/cowsay", fmt.Sprintf(`{"message":"moo %d"}`, i)).ID)
	}
	fail := submitJob(t, ts, "", "/api/v1/ollama", `{"model":"nope","prompt":"hi"}`)
	for _, id := range append(ids, fail.ID) {
		waitJob(t, ts, "", id)
	}
	list := func(query string) ([]string, []anuraJob) {
		var got []string
		var all []anuraJob
		after := ""
		for {
			q := query + "&after=" + after
			code, _, b := do(t, "GET", ts.URL+"/api/v1/jobs?"+q, "", "")
			page, _ := envelopeOf[struct {
				Jobs []anuraJob `json:"jobs"`
				Next string     `json:"next"`
			}](t, b)
			if code != 200 || len(page.Jobs) > 2 {
				t.Fatalf("list %s: %d %s", q, code, b)
			}
			for _, j := range page.Jobs {
				got, all = append(got, j.ID), append(all, j)
			}
			if page.Next == "" {
				return got, all
			}
			after = page.Next
		}
	}
	got, all := list("limit=2&type=cowsay")
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]} // newest first
	if fmt.Sprint(got) != fmt.Sprint(want) || all[0].Status != 2 {
		t.Fatalf("cowsay jobs %v, want %v", got, want)
	}
	if got, _ = list("limit=2&status=failed"); fmt.Sprint(got) != fmt.Sprint([]string{fail.ID}) {
		t.Fatalf("failed jobs %v", got)
	}
	if got, _ = list("limit=2&status=2,3"); len(got) != 6 {
		t.Fatalf("completed or failed: %v", got)
	}
	if got, _ = list("limit=2&status=queued"); len(got) != 0 {
		t.Fatalf("queued: %v", got)
	}
}

func TestAnuraCancel(t *testing.T) {
	ts := startAPIServer(t, apiOptions{workers: 1})
	// num_predict -1 generates until cancelled (the context shifts).
	forever := submitJob(t, ts, "", "/api/v1/ollama", `{"model":"stories","prompt":"Once upon a time","options":{"num_predict":-1}}`)
	queued := submitJob(t, ts, "", "/api/v1/cowsay", `{"message":"never"}`)
	waitRunning(t, ts, "", forever.ID)
	cancel := func(id string, want int) anuraJob {
		code, _, b := do(t, "DELETE", ts.URL+"/api/v1/jobs/"+id, "", "")
		if code != want {
			t.Fatalf("cancel %s: %d %s", id, code, b)
		}
		j, _ := envelopeOf[anuraJob](t, b)
		return j
	}
	if j := cancel(queued.ID, 200); j.Status != 4 || j.State != "cancelled" {
		t.Fatalf("cancelled queued job: %+v", j)
	}
	if j := cancel(forever.ID, 200); j.Status != 4 {
		t.Fatalf("cancelled running job: %+v", j)
	}
	// The worker is free again; cancelling twice is no error; a finished
	// job cannot be cancelled.
	next := submitJob(t, ts, "", "/api/v1/cowsay", `{"message":"next"}`)
	if j := waitJob(t, ts, "", next.ID); j.Status != 2 {
		t.Fatalf("after the cancellation: %+v", j)
	}
	cancel(forever.ID, 200)
	cancel(next.ID, 409)
	if j := waitJob(t, ts, "", forever.ID); j.Status != 4 {
		t.Fatalf("the cancelled job became %+v", j)
	}
	code, _, b := do(t, "GET", ts.URL+"/api/v1/cowsay/"+queued.ID+"/results", "", "")
	if code != 409 || !strings.Contains(string(b), "cancelled") {
		t.Fatalf("results of a cancelled job: %d %s", code, b)
	}
}

// sse reads a raw event stream: each event's name ("" for none) and data.
func sse(t *testing.T, r io.Reader) (names, data []string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			names, data = append(names, name), append(data, strings.TrimPrefix(line, "data: "))
		case line == "":
			name = ""
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return names, data
}

// anuraChat posts to the SSE chat and returns the streamed text, the
// last event's fields and the events.
func anuraChat(t *testing.T, ts *testServer, key, body string) (string, map[string]any, []string, []string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Accept", "text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	names, data := sse(t, resp.Body)
	if len(data) < 4 || data[0] != `{"status":"processing","state":0}` || data[1] != `{"status":"processing","state":1}` || data[len(data)-1] != "[DONE]" {
		t.Fatalf("events %q", data)
	}
	var text strings.Builder
	var last map[string]any
	for i, d := range data[2 : len(data)-1] {
		var ev struct {
			Model     string            `json:"model"`
			CreatedAt time.Time         `json:"created_at"`
			Message   ollamaapi.Message `json:"message"`
			Done      bool              `json:"done"`
		}
		if names[i+2] != "delta" || json.Unmarshal([]byte(d), &ev) != nil || ev.Model == "" || ev.CreatedAt.IsZero() || ev.Message.Role != "assistant" {
			t.Fatalf("event %d: %s %s", i+2, names[i+2], d)
		}
		text.WriteString(ev.Message.Content)
		if ev.Done != (i == len(data)-4) {
			t.Fatalf("done at event %d of %d: %s", i+2, len(data), d)
		}
		json.Unmarshal([]byte(d), &last)
	}
	return text.String(), last, names, data
}

func TestAnuraChatSSE(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	tokensIn := func() int64 { return a.Usage().Snapshot()[0].TokensIn }
	text, last, _, data := anuraChat(t, ts, "k", `{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":20,"temperature":0}`)
	// The same text as Ollama's /api/chat: the same generation path.
	single := tokensIn()
	_, _, b := do(t, "POST", ts.URL+"/api/chat", "k", `{"model":"stories","stream":false,"messages":[{"role":"user","content":"Once upon a time"}],"options":{"num_predict":20,"temperature":0}}`)
	var direct ollamaapi.ChatResponse
	json.Unmarshal(b, &direct)
	if text == "" || text != direct.Message.Content || len(data) < 10 {
		t.Fatalf("streamed %q in %d events; /api/chat %q", text, len(data), direct.Message.Content)
	}
	for _, k := range []string{"done_reason", "total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"} {
		if _, ok := last[k]; !ok {
			t.Errorf("the last event has no %s: %v", k, last)
		}
	}
	if last["done_reason"] != "length" || last["eval_count"] != float64(20) || last["prompt_eval_count"].(float64) < 5 || last["total_duration"].(float64) <= 0 {
		t.Fatalf("last event %v", last)
	}

	// Multi-turn: the history is in the prompt (the key's prompt tokens
	// count every prompt token, cached or not).
	multi := `[{"role":"user","content":"Once upon a time"},{"role":"assistant","content":` + mustJSON(text) + `},{"role":"user","content":"Then what?"}]`
	before := tokensIn()
	text2, last2, _, _ := anuraChat(t, ts, "k", `{"model":"stories","messages":`+multi+`,"max_tokens":15,"options":{"temperature":0}}`)
	multiIn := tokensIn() - before
	_, _, b = do(t, "POST", ts.URL+"/api/chat", "k", `{"model":"stories","stream":false,"messages":`+multi+`,"options":{"num_predict":15,"temperature":0}}`)
	json.Unmarshal(b, &direct)
	if text2 != direct.Message.Content || last2["eval_count"] != float64(15) || multiIn <= single+20 {
		t.Fatalf("multi-turn %q (%v, %d prompt tokens, %d for one turn); /api/chat %q", text2, last2, multiIn, single, direct.Message.Content)
	}

	for _, tc := range []struct {
		body string
		code int
		msg  string
	}{
		{`{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, `model "nope" not found`},
		{`{"model":"stories","messages":[]}`, 400, "messages is required"},
		{`{"messages":[{"role":"user","content":"hi"}]}`, 400, "model is required"},
		{`{"model":"stories","messages":[{"role":"robot","content":"hi"}]}`, 400, "invalid role"},
		{`{"model":"stories","messages":[{"role":"user","content":"hi"}],"max_tokens":"many"}`, 400, "max_tokens"},
		{`{"model":"stories"`, 400, "invalid JSON"},
	} {
		code, h, b := do(t, "POST", ts.URL+"/api/v1/chat/completions", "k", tc.body)
		var e struct {
			Error  string
			Status int
		}
		json.Unmarshal(b, &e)
		if code != tc.code || e.Status != tc.code || !strings.Contains(e.Error, tc.msg) || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s", tc.body, code, b)
		}
	}

	code, _, b := do(t, "GET", ts.URL+"/api/v1/models", "k", "")
	m, status := envelopeOf[struct {
		Models []string `json:"models"`
	}](t, b)
	if code != 200 || status != 200 || fmt.Sprint(m.Models) != "[stories:latest]" {
		t.Fatalf("models %d %s", code, b)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Jobs without a data directory answer 503; the SSE chat still works.
func TestAnuraWithoutJobs(t *testing.T) {
	dir := testModels(t, "stories")
	os.WriteFile(filepath.Join(dir, "README"), []byte("not a model"), 0o644)
	ts := serveConfig(t, Config{ModelsDir: dir, Sched: sched.Config{Parallel: 1, NumCtx: 256, Threads: 1}})
	code, _, b := do(t, "POST", ts.URL+"/api/v1/cowsay", "", `{"message":"moo"}`)
	if code != 503 || !strings.Contains(string(b), "jobs are disabled") {
		t.Fatalf("%d %s", code, b)
	}
	if text, _, _, _ := anuraChat(t, ts, "", `{"model":"stories","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`); text == "" {
		t.Fatal("no text")
	}
}

// Jobs run behind interactive requests: with one slot, a request that
// arrives while one job holds it goes before the other job, queued for
// it earlier.
func TestAnuraJobsYieldToInteractive(t *testing.T) {
	ts := startAPIServer(t, apiOptions{parallel: 1, workers: 2})
	// Long jobs: prompt lookup drafts much of what this model writes, and
	// at 1000 tokens both jobs once ended before the request went out.
	body := `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":4000}}`
	ids := []string{submitJob(t, ts, "", "/api/v1/ollama", body).ID, submitJob(t, ts, "", "/api/v1/ollama", body).ID}
	testkit.Eventually(t, time.Minute, "both jobs to run", func() bool {
		return getJob(t, ts, "", ids[0]).Status == 1 && getJob(t, ts, "", ids[1]).Status == 1
	})
	sent := time.Now()
	code, _, b := do(t, "POST", ts.URL+"/api/generate", "", `{"model":"stories","prompt":"Once upon a time","stream":false,"options":{"num_predict":5}}`)
	answered := time.Now()
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var finished []time.Time
	for _, id := range ids {
		waitJob(t, ts, "", id)
		_, _, b := do(t, "GET", ts.URL+"/api/v1/jobs/"+id, "", "")
		j, _ := envelopeOf[struct {
			Status     int       `json:"status"`
			FinishedAt time.Time `json:"finished_at"`
		}](t, b)
		if j.Status != 2 {
			t.Fatalf("job %s: %s", id, b)
		}
		finished = append(finished, j.FinishedAt)
	}
	first, last := finished[0], finished[1]
	if last.Before(first) {
		first, last = last, first
	}
	if !sent.Before(first) {
		t.Fatalf("both jobs finished before the request was sent")
	}
	if !answered.Before(last) {
		t.Fatalf("the interactive request was answered at %v, after the job queued before it finished (%v)", answered, last)
	}
}
