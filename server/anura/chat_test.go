package anura

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/infer/infertest"
)

// The package's own tests of the chat run the real Handler, on a real
// listener, over a fake generation path (infertest), without an engine:
// the stream's events and the error shapes. TestAnura* in ./server run
// it on the real engine.

func serve(t *testing.T, fake *infertest.Service) string {
	return infertest.Serve(t, func(e *echo.Echo) { (&Handler{Infer: fake}).Register(e) })
}

func postChat(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	return infertest.Post(t, url+"/api/v1/chat/completions", body)
}

// event is one Server-Sent Event: its name ("" for a plain data line)
// and data.
type event struct {
	name, data string
}

func readEvents(body []byte) []event {
	var out []event
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	var cur event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "":
			out = append(out, cur)
			cur = event{}
		}
	}
	return out
}

const chatBody = `{"model": "fake", "max_tokens": 20, "temperature": 0.2, "messages": [{"role": "user", "content": "Hi"}]}`

// The stream: processing (waiting, then queued), a delta per piece of
// text or thinking (a tool call alone sends none), the last delta with
// done, its reason and every statistic, then [DONE].
func TestChatStream(t *testing.T) {
	fake := &infertest.Service{Scripts: [][]infer.Event{{
		infertest.Thinking("Hmm."), infertest.Content("Once"), infertest.Content(" upon"),
		infertest.Call("c", "f", `{}`), infertest.Done("length", 6, 1, 20),
	}}}
	url := serve(t, fake)
	status, h, body := postChat(t, url, chatBody)
	if status != http.StatusOK || h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, %s: %s", status, h.Get("Content-Type"), body)
	}
	evs := readEvents(body)
	var names []string
	for _, ev := range evs {
		names = append(names, ev.name)
	}
	if want := []string{"", "", "delta", "delta", "delta", "delta", ""}; !reflect.DeepEqual(names, want) {
		t.Fatalf("events %v, want %v:\n%s", names, want, body)
	}
	if evs[0].data != `{"status":"processing","state":0}` || evs[1].data != `{"status":"processing","state":1}` || evs[6].data != "[DONE]" {
		t.Errorf("processing and end: %s", body)
	}
	var pieces []chatEvent
	for _, ev := range evs[2:5] {
		var c chatEvent
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatal(err)
		}
		if c.Done || c.Model != "fake" || c.Message.Role != "assistant" || strings.Contains(ev.data, "eval_count") {
			t.Errorf("delta: %s", ev.data)
		}
		pieces = append(pieces, c)
	}
	if pieces[0].Message.Thinking != "Hmm." || pieces[1].Message.Content != "Once" || pieces[2].Message.Content != " upon" {
		t.Errorf("deltas: %+v", pieces)
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(evs[5].data), &last); err != nil {
		t.Fatal(err)
	}
	if last["done"] != true || last["done_reason"] != "length" || last["prompt_eval_count"] != 5.0 || last["eval_count"] != 20.0 ||
		last["eval_duration"] != 20e6 || last["load_duration"] != float64(infertest.LoadDuration) {
		t.Errorf("last delta: %s", evs[5].data)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Options.NumPredict != 20 || reqs[0].Options.Temperature != 0.2 || !reqs[0].Chat {
		t.Fatalf("requests: %+v", reqs)
	}
}

// Errors: refused at once by the generation path, a plain answer in
// Anura's shape with the kind's status; failing after the stream began,
// an "error" event then [DONE].
func TestChatErrors(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
	}{
		{infer.Errorf(infer.NotFound, "model 'fake' not found"), 404},
		{infer.Errorf(infer.Unavailable, "server busy"), 503},
		{infer.Errorf(infer.RateLimited, "too many streams"), 429},
		{infer.Errorf(infer.LoadFailed, "cannot load"), 500},
	} {
		url := serve(t, &infertest.Service{Err: tc.err})
		status, _, body := postChat(t, url, chatBody)
		want, _ := json.Marshal(map[string]any{"error": tc.err.Error(), "message": tc.err.Error(), "status": tc.status})
		if status != tc.status || strings.TrimSpace(string(body)) != string(want) {
			t.Errorf("%v: %d %s, want %d %s", tc.err, status, body, tc.status, want)
		}
	}
	url := serve(t, &infertest.Service{Scripts: [][]infer.Event{{infertest.Content("Once"), infertest.Failed(errors.New("decode: out of memory"))}}})
	status, _, body := postChat(t, url, chatBody)
	evs := readEvents(body)
	if status != 200 || len(evs) != 5 || evs[3].name != "error" || evs[3].data != `{"error":"decode: out of memory","status":500}` || evs[4].data != "[DONE]" {
		t.Errorf("failed generation: %d %s", status, body)
	}
	url = serve(t, &infertest.Service{OptionsErr: infer.Errorf(infer.NotFound, "model 'fake' not found")})
	if status, _, body := postChat(t, url, chatBody); status != 404 || !strings.Contains(string(body), `"status":404`) {
		t.Errorf("unknown model: %d %s", status, body)
	}
}
