package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// startLimitedJobServer serves the demo model as "stories" with one slot,
// one job worker and the job limits given.
func startLimitedJobServer(t *testing.T, jc jobs.Config, maxTokens int, a *auth.Auth) *testServer {
	t.Helper()
	return serveConfig(t, Config{
		ModelsDir: testModels(t, "stories"), Sched: testSched(1, 256),
		Auth: a, Jobs: testJobs(t, jc), JobWorkers: 1, JobMaxTokens: maxTokens,
	})
}

// anuraError is Anura's error answer.
type anuraError struct {
	Error, Message string
	Status         int
}

// A job may not ask for more tokens than the server's limit, nor for no
// limit: it is refused at submission with a 400 naming the limit, never
// lowered to it. A job that asks for no number gets the limit.
func TestJobTokenLimit(t *testing.T) {
	ts := startLimitedJobServer(t, jobs.Config{}, 40, nil)
	for _, tc := range []struct {
		name, body, msg string
	}{
		{"over", `{"model":"stories","prompt":"a","options":{"num_predict":41}}`, "num_predict 41 is over the job limit: a job may generate at most 40 tokens"},
		{"max_tokens over", `{"model":"stories","prompt":"a","max_tokens":1000}`, "at most 40 tokens"},
		{"chat over", `{"model":"stories","messages":[{"role":"user","content":"a"}],"options":{"num_predict":100000}}`, "at most 40 tokens"},
		{"unlimited", `{"model":"stories","prompt":"a","options":{"num_predict":-1}}`, "num_predict -1 is over the job limit"},
		{"fill the context", `{"model":"stories","prompt":"a","options":{"num_predict":-2}}`, "num_predict -2 is over the job limit"},
		{"not a number", `{"model":"stories","prompt":"a","options":{"num_predict":"many"}}`, "num_predict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, b := do(t, "POST", ts.URL+"/api/v1/ollama", "", tc.body)
			var e anuraError
			json.Unmarshal(b, &e)
			if code != 400 || e.Status != 400 || !strings.Contains(e.Error, tc.msg) {
				t.Fatalf("%d %s", code, b)
			}
		})
	}
	code, _, b := do(t, "GET", ts.URL+"/api/v1/jobs", "", "")
	if list, _ := envelopeOf[struct{ Jobs []anuraJob }](t, b); code != 200 || len(list.Jobs) != 0 {
		t.Fatalf("refused jobs were stored: %s", b)
	}

	for _, tc := range []struct {
		name, body string
		tokens     int
	}{
		{"at the limit", `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":40}}`, 40},
		{"under it", `{"model":"stories","prompt":"Once upon a time","max_tokens":7,"temperature":0}`, 7},
		{"none asked", `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0}}`, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := waitJob(t, ts, "", submitJob(t, ts, "", "/api/v1/ollama", tc.body).ID)
			_, _, b := do(t, "GET", ts.URL+"/api/v1/ollama/"+j.ID+"/results", "", "")
			var g ollamaapi.GenerateResponse
			json.Unmarshal(b, &g)
			if j.Status != 2 || g.EvalCount != tc.tokens || g.DoneReason != "length" || (!strings.HasPrefix(storiesContinuation, g.Response) && !strings.HasPrefix(g.Response, storiesContinuation)) {
				t.Fatalf("job %+v: %s", j, b)
			}
		})
	}
}

// A job that runs past the deadline fails visibly with "deadline
// exceeded" and gives its slot back: with one slot, a request afterwards
// is answered. The job would otherwise generate for hours.
func TestJobDeadline(t *testing.T) {
	ts := startLimitedJobServer(t, jobs.Config{Deadline: time.Second}, 0, nil)
	j := submitJob(t, ts, "", "/api/v1/ollama", `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":100000000}}`)
	j = waitJob(t, ts, "", j.ID)
	if j.Status != 3 || !strings.HasPrefix(j.Error, "deadline exceeded") || !strings.Contains(j.Error, "1s") || j.Attempts != 1 {
		t.Fatalf("job %+v", j)
	}
	code, _, b := do(t, "GET", ts.URL+"/api/v1/ollama/"+j.ID+"/results", "", "")
	if code != 409 || !strings.Contains(string(b), "deadline exceeded") {
		t.Fatalf("results: %d %s", code, b)
	}
	code, _, b = do(t, "POST", ts.URL+"/api/generate", "", `{"model":"stories","prompt":"Once upon a time","stream":false,"options":{"temperature":0,"num_predict":5}}`)
	if code != 200 || !strings.Contains(string(b), `"done":true`) {
		t.Fatalf("after the deadline: %d %s", code, b)
	}
	// The next job runs.
	ok := waitJob(t, ts, "", submitJob(t, ts, "", "/api/v1/cowsay", `{"message":"next"}`).ID)
	if ok.Status != 2 {
		t.Fatalf("next job: %+v", ok)
	}
}

// Each key may have a limited number of jobs queued: one more is answered
// 429 with Retry-After in Anura's error shape; another key still submits.
func TestJobQueueQuota(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"alice", "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startLimitedJobServer(t, jobs.Config{MaxQueuedPerOwner: 2}, 0, a)
	// The one worker runs this job until it is cancelled; later ones wait.
	busy := submitJob(t, ts, "alice", "/api/v1/ollama", `{"model":"stories","prompt":"Once upon a time","options":{"temperature":0,"num_predict":100000000}}`)
	waitRunning(t, ts, "alice", busy.ID)
	for i := range 2 {
		submitJob(t, ts, "alice", "/api/v1/cowsay", fmt.Sprintf(`{"message":"moo %d"}`, i))
	}
	code, h, b := do(t, "POST", ts.URL+"/api/v1/cowsay", "alice", `{"message":"one too many"}`)
	var e anuraError
	json.Unmarshal(b, &e)
	if code != 429 || e.Status != 429 || h.Get("Retry-After") == "" || !strings.Contains(e.Error, "too many queued jobs: at most 2") {
		t.Fatalf("over the quota: %d %v %s", code, h, b)
	}
	submitJob(t, ts, "bob", "/api/v1/cowsay", `{"message":"bob's"}`)
	code, _, b = do(t, "GET", ts.URL+"/api/v1/jobs?status=queued", "alice", "")
	if list, _ := envelopeOf[struct{ Jobs []anuraJob }](t, b); code != 200 || len(list.Jobs) != 2 {
		t.Fatalf("alice's queue: %s", b)
	}
	// Cancelling the running job lets the queue move, and makes room.
	if code, _, b := do(t, "DELETE", ts.URL+"/api/v1/jobs/"+busy.ID, "alice", ""); code != 200 {
		t.Fatalf("cancel: %d %s", code, b)
	}
	code, _, b = do(t, "GET", ts.URL+"/api/v1/jobs", "alice", "")
	list, _ := envelopeOf[struct{ Jobs []anuraJob }](t, b)
	for _, j := range list.Jobs {
		waitJob(t, ts, "alice", j.ID)
	}
	submitJob(t, ts, "alice", "/api/v1/cowsay", `{"message":"room again"}`)
}

// The job database is under --min-free-disk too (issue 40): with the
// floor above the disk's free space a submission is a 507 in Anura's
// shape naming the flag, nothing is stored, and the jobs' list still
// answers.
func TestJobDiskFloor(t *testing.T) {
	ts := startLimitedJobServer(t, jobs.Config{MinFreeDisk: 1 << 62}, 0, nil)
	code, _, b := do(t, "POST", ts.URL+"/api/v1/cowsay", "", `{"message":"moo"}`)
	var e anuraError
	json.Unmarshal(b, &e)
	if code != http.StatusInsufficientStorage || e.Status != code || !strings.Contains(e.Error, "--min-free-disk") {
		t.Fatalf("below the floor: %d %s", code, b)
	}
	code, _, b = do(t, "GET", ts.URL+"/api/v1/jobs", "", "")
	if list, _ := envelopeOf[struct{ Jobs []anuraJob }](t, b); code != 200 || len(list.Jobs) != 0 {
		t.Fatalf("jobs after the refusal: %d %s", code, b)
	}
}
