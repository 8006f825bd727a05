package anthropic

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

// The package's own tests run the real Handler, on a real listener, on
// a fake generation path (infertest): the wire shapes of answers,
// streams and errors, without an engine. TestAnthropic* in ./server run
// the same handler on the real engine.

// serve starts the handler on fake and returns its base URL.
func serve(t *testing.T, fake *infertest.Service) string {
	return infertest.Serve(t, func(e *echo.Echo) { (&Handler{Infer: fake}).Register(e) })
}

// post sends body to path and returns the status, headers and body.
func post(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	return infertest.Post(t, url, body)
}

// sse is one Server-Sent Event: its name and data.
type sse struct {
	name string
	data map[string]any
}

// readEvents reads a stream's events, checking that each event's name is its
// data's type.
func readEvents(t *testing.T, body []byte) []sse {
	t.Helper()
	var out []sse
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	var cur sse
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("event %s: %v", cur.name, err)
			}
		case line == "":
			if cur.data["type"] != cur.name {
				t.Errorf("event %q has data of type %v", cur.name, cur.data["type"])
			}
			out = append(out, cur)
			cur = sse{}
		}
	}
	return out
}

// names are the events' names, content_block_* with their block's index.
func names(evs []sse) []string {
	var out []string
	for _, ev := range evs {
		n := ev.name
		if i, ok := ev.data["index"]; ok {
			n += "/" + jsonText(i)
		}
		out = append(out, n)
	}
	return out
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const request = `{"model": "fake", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}`

func streamed(r string) string { return strings.Replace(r, `{"model"`, `{"stream": true, "model"`, 1) }

// thought, text, then a tool call: one generation with every block type.
var toolAnswer = []infer.Event{
	infertest.Thinking("Let me "), infertest.Thinking("think."),
	infertest.Content("\n\n"), infertest.Content("Checking"), infertest.Content(" the weather."),
	infertest.Call("call_1", "weather", `{"city": "Paris"}`),
	infertest.Done("stop", 30, 12, 9),
}

// A whole answer: its blocks in order (thinking with its signature,
// text, tool_use with its input), tool_use as the stop reason, the
// usage split into cached and read prompt tokens, and the request as
// infer got it.
func TestMessageAnswer(t *testing.T) {
	fake := &infertest.Service{Scripts: [][]infer.Event{toolAnswer}}
	url := serve(t, fake)
	status, _, body := post(t, url+"/v1/messages", request)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.ID, "msg_") || m.Type != "message" || m.Role != "assistant" || m.Model != "fake" {
		t.Errorf("message header: %+v", m)
	}
	if len(m.Content) != 3 {
		t.Fatalf("content: %s", body)
	}
	th, tx, tu := m.Content[0], m.Content[1], m.Content[2]
	if th.Type != "thinking" || *th.Thinking != "Let me think." || *th.Signature != signature("Let me think.") {
		t.Errorf("thinking block: %s", jsonText(th))
	}
	if tx.Type != "text" || *tx.Text != "\n\nChecking the weather." {
		t.Errorf("text block: %s", jsonText(tx))
	}
	if tu.Type != "tool_use" || tu.Name != "weather" || !strings.HasPrefix(tu.ID, "toolu_") || string(tu.Input) != `{"city":"Paris"}` {
		t.Errorf("tool_use block: %s", jsonText(tu))
	}
	if m.StopReason == nil || *m.StopReason != "tool_use" || m.StopSequence != nil {
		t.Errorf("stop: %v %v", m.StopReason, m.StopSequence)
	}
	if want := (Usage{InputTokens: 18, OutputTokens: 9, CacheReadInputTokens: 12}); m.Usage != want {
		t.Errorf("usage %+v, want %+v", m.Usage, want)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || !reqs[0].Chat || reqs[0].Options.NumPredict != 64 || len(reqs[0].Messages) != 1 {
		t.Fatalf("requests: %+v", reqs)
	}
}

// The stream of the same generation: message_start (the prompt's size
// in its usage), ping, each block's start, deltas and stop in index
// order (the thinking block's signature last), message_delta (stop
// reason and usage), message_stop; and its content is the answer's.
func TestMessageStream(t *testing.T) {
	fake := &infertest.Service{Scripts: [][]infer.Event{toolAnswer}}
	url := serve(t, fake)
	status, h, body := post(t, url+"/v1/messages", streamed(request))
	if status != http.StatusOK || h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, %s: %s", status, h.Get("Content-Type"), body)
	}
	evs := readEvents(t, body)
	want := []string{
		"message_start", "ping",
		"content_block_start/0", "content_block_delta/0", "content_block_delta/0", "content_block_delta/0", "content_block_stop/0",
		"content_block_start/1", "content_block_delta/1", "content_block_delta/1", "content_block_stop/1",
		"content_block_start/2", "content_block_delta/2", "content_block_stop/2",
		"message_delta", "message_stop",
	}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	start := evs[0].data["message"].(map[string]any)
	if jsonText(start["usage"].(map[string]any)["input_tokens"]) != "30" || jsonText(start["content"]) != "[]" || start["stop_reason"] != nil {
		t.Errorf("message_start: %s", jsonText(start))
	}
	if d := evs[5].data["delta"].(map[string]any); d["type"] != "signature_delta" || d["signature"] != signature("Let me think.") {
		t.Errorf("thinking block's last delta: %s", jsonText(d))
	}
	// "\n\n" alone opens no block: it is held and goes out with the text.
	if d := evs[8].data["delta"].(map[string]any); d["type"] != "text_delta" || d["text"] != "\n\nChecking" {
		t.Errorf("first text delta: %s", jsonText(d))
	}
	if d := evs[12].data["delta"].(map[string]any); d["type"] != "input_json_delta" || d["partial_json"] != `{"city": "Paris"}` {
		t.Errorf("tool_use delta: %s", jsonText(d))
	}
	md := evs[14].data
	if jsonText(md["delta"]) != `{"stop_reason":"tool_use","stop_sequence":null}` {
		t.Errorf("message_delta: %s", jsonText(md))
	}
	if u := md["usage"].(map[string]any); jsonText(u["input_tokens"]) != "18" || jsonText(u["output_tokens"]) != "9" || jsonText(u["cache_read_input_tokens"]) != "12" {
		t.Errorf("message_delta usage: %s", jsonText(u))
	}
}

// Stop reasons: the limit is max_tokens, a stop sequence is named (the
// earliest in the generated text, whichever the request listed first),
// an end of turn is end_turn; streamed and not alike.
func TestStopReasons(t *testing.T) {
	withStops := strings.Replace(request, `"max_tokens"`, `"stop_sequences": ["END", "STOP"], "max_tokens"`, 1)
	stopped := infertest.Done("stop", 5, 0, 9)
	stopped.Tokens = append(infertest.Tokens("Hi"), infertest.Tokens("one STOP two END")[:9]...) // "one STOP "
	for _, tc := range []struct {
		name, req string
		final     infer.Event
		reason    string
		seq       any
	}{
		{"length", request, infertest.Done("length", 5, 0, 64), "max_tokens", nil},
		{"end_turn", request, infertest.Done("stop", 5, 0, 3), "end_turn", nil},
		{"end_turn without a listed sequence", withStops, infertest.Done("stop", 5, 0, 0), "end_turn", nil},
		{"stop_sequence", withStops, stopped, "stop_sequence", "STOP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &infertest.Service{Scripts: [][]infer.Event{{infertest.Content("one"), tc.final}}}
			url := serve(t, fake)
			_, _, body := post(t, url+"/v1/messages", tc.req)
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatal(err)
			}
			if m["stop_reason"] != tc.reason || m["stop_sequence"] != tc.seq {
				t.Errorf("answer: stop_reason %v, stop_sequence %v; want %v, %v", m["stop_reason"], m["stop_sequence"], tc.reason, tc.seq)
			}
			_, _, body = post(t, url+"/v1/messages", streamed(tc.req))
			evs := readEvents(t, body)
			d := evs[len(evs)-2].data["delta"].(map[string]any)
			if d["stop_reason"] != tc.reason || d["stop_sequence"] != tc.seq {
				t.Errorf("stream: message_delta %s; want %v, %v", jsonText(d), tc.reason, tc.seq)
			}
		})
	}
}

// A generation that fails: before the answer, a 500 in Anthropic's
// shape; in a stream that has begun, an "error" event that ends it
// after what was sent (the open block is not closed, no message_stop).
func TestGenerationFails(t *testing.T) {
	script := []infer.Event{infertest.Content("Once"), infertest.Failed(errors.New("decode: out of memory"))}
	url := serve(t, &infertest.Service{Scripts: [][]infer.Event{script}})
	status, _, body := post(t, url+"/v1/messages", request)
	if status != http.StatusInternalServerError ||
		string(body) != `{"type":"error","error":{"type":"api_error","message":"generation failed: decode: out of memory"}}`+"\n" {
		t.Errorf("answer: %d %s", status, body)
	}
	status, _, body = post(t, url+"/v1/messages", streamed(request))
	if status != http.StatusOK {
		t.Fatalf("stream status %d", status)
	}
	evs := readEvents(t, body)
	want := []string{"message_start", "ping", "content_block_start/0", "content_block_delta/0", "error"}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if got := jsonText(evs[4].data["error"]); got != `{"message":"generation failed: decode: out of memory","type":"api_error"}` {
		t.Errorf("error event: %s", got)
	}

	// A stream that ends without its final event.
	url = serve(t, &infertest.Service{Scripts: [][]infer.Event{{infertest.Content("Once")}}})
	_, _, body = post(t, url+"/v1/messages", streamed(request))
	evs = readEvents(t, body)
	if last := evs[len(evs)-1]; last.name != "error" || !strings.Contains(jsonText(last.data), "generation ended without a result") {
		t.Errorf("last event: %s %s", last.name, jsonText(last.data))
	}
}

// Errors of the generation path before anything is sent, by kind: the
// status, Anthropic's error type and Retry-After where it applies, for
// messages and count_tokens alike.
func TestInferErrors(t *testing.T) {
	for _, tc := range []struct {
		err        error
		status     int
		typ        string
		retryAfter string
	}{
		{infer.Errorf(infer.BadRequest, "prompt too long"), 400, "invalid_request_error", ""},
		{infer.Errorf(infer.NotFound, "model 'fake' not found"), 404, "not_found_error", ""},
		{infer.Errorf(infer.LoadFailed, "cannot load"), 500, "api_error", ""},
		{infer.Errorf(infer.Internal, "broken"), 500, "api_error", ""},
		{infer.Errorf(infer.Unavailable, "server busy"), 503, "overloaded_error", "5"},
		{infer.Errorf(infer.RateLimited, "too many streams"), 429, "rate_limit_error", "1"},
		{&infer.ParamError{Param: "messages", Message: "messages: bad image"}, 400, "invalid_request_error", ""},
	} {
		url := serve(t, &infertest.Service{Err: tc.err})
		for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
			for _, body := range []string{request, streamed(request)} {
				status, h, got := post(t, url+path, body)
				want := `{"type":"error","error":{"type":"` + tc.typ + `","message":` + jsonText(tc.err.Error()) + "}}\n"
				if status != tc.status || string(got) != want || h.Get("Retry-After") != tc.retryAfter {
					t.Errorf("%s %v: %d %q (Retry-After %q), want %d %q (%q)", path, tc.err, status, got, h.Get("Retry-After"), tc.status, want, tc.retryAfter)
				}
			}
		}
	}
	// An unknown model, found out while reading its parameters.
	url := serve(t, &infertest.Service{OptionsErr: infer.Errorf(infer.NotFound, "model 'nope' not found")})
	status, _, body := post(t, url+"/v1/messages", request)
	if status != 404 || !strings.Contains(string(body), `"not_found_error"`) {
		t.Errorf("unknown model: %d %s", status, body)
	}
}

// count_tokens answers infer's count of the prompt, with the model's
// options and no sampling.
func TestCountTokens(t *testing.T) {
	fake := &infertest.Service{PromptTokens: 42}
	url := serve(t, fake)
	status, _, body := post(t, url+"/v1/messages/count_tokens", `{"model": "fake", "messages": [{"role": "user", "content": "Hi"}]}`)
	if status != 200 || string(body) != `{"input_tokens":42}`+"\n" {
		t.Errorf("%d %s", status, body)
	}
	if reqs := fake.Requests(); len(reqs) != 1 || reqs[0].Model != "fake" || reqs[0].Options.NumPredict == 0 {
		t.Errorf("requests: %+v", reqs)
	}
}
