package ollama

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/infer/infertest"
)

// The package's own tests of generate, chat and ps run the real Handler,
// on a real listener, over a fake generation path (infertest): Ollama's
// wire shapes of answers, NDJSON streams and errors, without an engine.
// The end-to-end tests in ./server run the same handler on the real
// engine.

var _ Inference = (*infertest.Service)(nil)

// serveFake starts the handler on fake and returns its base URL.
func serveFake(t *testing.T, fake *infertest.Service) string {
	return infertest.Serve(t, func(e *echo.Echo) {
		e.HTTPErrorHandler = ErrorHandler
		(&Handler{Store: &models.Store{Dir: t.TempDir()}, Infer: fake}).Register(e)
	})
}

// lines are an NDJSON body's objects, in order.
func lines(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const chatRequest = `{"model": "fake", "messages": [{"role": "user", "content": "Weather?"}]}`

// A streamed chat: a line per decided piece (thinking, content, the
// tool call) as an assistant message, in the model's order, then the
// final line with done, done_reason and the statistics; the request as
// infer got it.
func TestChatStream(t *testing.T) {
	fake := &infertest.Service{Scripts: [][]infer.Event{{
		infertest.Thinking("Hmm."), infertest.Content("Let me"), infertest.Content(" look."),
		infertest.Call("call_1", "weather", `{"city":"Paris"}`), infertest.Done("stop", 9, 4, 12),
	}}}
	url := serveFake(t, fake)
	status, h, body := infertest.Post(t, url+"/api/chat", chatRequest)
	if status != http.StatusOK || h.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %q %s", status, h.Get("Content-Type"), body)
	}
	ls := lines(t, body)
	var msgs []string
	for _, l := range ls {
		if l["model"] != "fake" || l["created_at"] == nil {
			t.Errorf("line without model or created_at: %v", l)
		}
		msgs = append(msgs, jsonText(l["message"]))
	}
	want := []string{
		`{"content":"","role":"assistant","thinking":"Hmm."}`,
		`{"content":"Let me","role":"assistant"}`,
		`{"content":" look.","role":"assistant"}`,
		`{"content":"","role":"assistant","tool_calls":[{"function":{"arguments":{"city":"Paris"},"index":0,"name":"weather"},"id":"call_1"}]}`,
		`{"content":"","role":"assistant"}`,
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Fatalf("messages\n got %v\nwant %v", msgs, want)
	}
	for _, l := range ls[:len(ls)-1] {
		if l["done"] != false || l["done_reason"] != nil || l["eval_count"] != nil {
			t.Errorf("a chunk with the final line's fields: %v", l)
		}
	}
	last := ls[len(ls)-1]
	if last["done"] != true || last["done_reason"] != "stop" || last["eval_count"] != 12.0 || last["prompt_eval_count"] != 5.0 ||
		last["eval_duration"] != float64(20*time.Millisecond) || last["total_duration"] == nil || last["load_duration"] == nil {
		t.Errorf("final line: %v", last)
	}
	if reqs := fake.Requests(); len(reqs) != 1 || !reqs[0].Chat || len(reqs[0].Messages) != 1 || reqs[0].Messages[0].Content != "Weather?" {
		t.Errorf("requests: %+v", reqs)
	}
}

// A generate answer with "stream": false: one JSON object with the whole
// text, the context to send back and the statistics.
func TestGenerateAnswer(t *testing.T) {
	final := infertest.Done("length", 7, 0, 2)
	final.Tokens = []int32{5, 6, 7}
	url := serveFake(t, &infertest.Service{Scripts: [][]infer.Event{{infertest.Content("Once"), infertest.Content(" upon"), final}}})
	status, h, body := infertest.Post(t, url+"/api/generate", `{"model": "fake", "prompt": "Tell me", "stream": false}`)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %q %s", status, h.Get("Content-Type"), body)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil || bytes.Count(bytes.TrimSpace(body), []byte("\n")) != 0 {
		t.Fatalf("not one JSON object: %v %s", err, body)
	}
	if got["model"] != "fake" || got["response"] != "Once upon" || got["done"] != true || got["done_reason"] != "length" ||
		jsonText(got["context"]) != "[5,6,7]" || got["eval_count"] != 2.0 || got["prompt_eval_count"] != 7.0 {
		t.Errorf("answer: %s", body)
	}
}

// Errors in Ollama's {"error": "..."} shape: the generation path's
// refusals by kind (status and Retry-After) streamed or not, bad requests
// before anything runs, and a generation that fails: a 500 when not
// streaming, a last error line after what was sent when streaming.
func TestErrorShapes(t *testing.T) {
	for _, tc := range []struct {
		err        error
		status     int
		retryAfter string
	}{
		{infer.Errorf(infer.BadRequest, "prompt too long"), 400, ""},
		{infer.Errorf(infer.NotFound, "model 'fake' not found"), 404, ""},
		{infer.Errorf(infer.LoadFailed, "cannot load"), 500, ""},
		{infer.Errorf(infer.Unavailable, "server busy"), 503, "5"},
		{infer.Errorf(infer.RateLimited, "too many streams"), 429, "1"},
	} {
		url := serveFake(t, &infertest.Service{Err: tc.err})
		for _, req := range []struct{ path, body string }{
			{"/api/chat", chatRequest},
			{"/api/generate", `{"model": "fake", "prompt": "Hi", "stream": false}`},
		} {
			status, h, body := infertest.Post(t, url+req.path, req.body)
			want := `{"error":` + jsonText(tc.err.Error()) + "}\n"
			if status != tc.status || string(body) != want || h.Get("Retry-After") != tc.retryAfter {
				t.Errorf("%s %v: %d %q (Retry-After %q), want %d %q (%q)", req.path, tc.err, status, body, h.Get("Retry-After"), tc.status, want, tc.retryAfter)
			}
		}
	}

	url := serveFake(t, &infertest.Service{Scripts: [][]infer.Event{{infertest.Content("Once")}}})
	for _, tc := range []struct{ path, body, want string }{
		{"/api/chat", `{"messages": []}`, "model is required"},
		{"/api/generate", `{"model": "fake", "prompt": 5}`, "prompt"},
		{"/api/generate", `{"model": "fake", "prompt": "Hi", "options": {"temperature": "hot"}}`, "temperature"},
		{"/api/chat", `{"model": "fake", "messages": [{"role": "user", "content": "Hi"}], "format": "yaml"}`, "format"},
		{"/api/generate", `{"model":`, ""},
	} {
		status, _, body := infertest.Post(t, url+tc.path, tc.body)
		var e struct{ Error string }
		if err := json.Unmarshal(body, &e); err != nil || status != 400 || e.Error == "" || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, status, body)
		}
	}

	fail := []infer.Event{infertest.Content("Once"), infertest.Failed(errors.New("decode: out of memory"))}
	url = serveFake(t, &infertest.Service{Scripts: [][]infer.Event{fail}})
	status, _, body := infertest.Post(t, url+"/api/generate", `{"model": "fake", "prompt": "Hi", "stream": false}`)
	if status != 500 || string(body) != `{"error":"decode: out of memory"}`+"\n" {
		t.Errorf("failed answer: %d %s", status, body)
	}
	status, _, body = infertest.Post(t, url+"/api/generate", `{"model": "fake", "prompt": "Hi"}`)
	ls := lines(t, body)
	if status != 200 || len(ls) != 2 || ls[0]["response"] != "Once" || jsonText(ls[1]) != `{"error":"decode: out of memory"}` {
		t.Errorf("failed stream: %d %s", status, body)
	}
}

// /api/ps lists what infer reports loaded, in Ollama's shape with
// Tadpole's extras; a busy model reports a far expiry when kept
// forever.
func TestPS(t *testing.T) {
	loaded := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := &infertest.Service{Idle: -1, Models: []infer.Loaded{
		{Name: "zeta:latest", Path: "/m/z", NumCtx: 4096, Requests: 1, LoadedAt: loaded, Size: 1000, SizeVRAM: 0,
			Processor: "100% CPU", SlotsBusy: 1, SlotsTotal: 4, QueueDepth: 2},
		{Name: "alpha:latest", Path: "/m/a", NumCtx: 2048, ExpiresAt: loaded.Add(time.Hour), LoadedAt: loaded, Size: 10, SizeVRAM: 10,
			Processor: "100% GPU", SlotsTotal: 1},
	}}
	resp, err := http.Get(serveFake(t, fake) + "/api/ps")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ps struct {
		Models []struct {
			Name          string    `json:"name"`
			Model         string    `json:"model"`
			Size          int64     `json:"size"`
			SizeVRAM      int64     `json:"size_vram"`
			ExpiresAt     time.Time `json:"expires_at"`
			ContextLength int       `json:"context_length"`
			Tadpole       struct {
				Processor  string `json:"processor"`
				SlotsBusy  int    `json:"slots_busy"`
				SlotsTotal int    `json:"slots_total"`
				QueueDepth int    `json:"queue_depth"`
			} `json:"tadpole"`
		} `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil || resp.StatusCode != 200 || len(ps.Models) != 2 {
		t.Fatalf("%d %v %+v", resp.StatusCode, err, ps)
	}
	a, z := ps.Models[0], ps.Models[1]
	if a.Name != "alpha:latest" || a.Model != a.Name || a.SizeVRAM != 10 || !a.ExpiresAt.Equal(loaded.Add(time.Hour)) || a.ContextLength != 2048 ||
		a.Tadpole.Processor != "100% GPU" {
		t.Errorf("alpha: %+v", a)
	}
	if z.Name != "zeta:latest" || z.ExpiresAt.Year() != 2318 || z.Tadpole.SlotsBusy != 1 || z.Tadpole.SlotsTotal != 4 || z.Tadpole.QueueDepth != 2 {
		t.Errorf("zeta: %+v", z)
	}
}
