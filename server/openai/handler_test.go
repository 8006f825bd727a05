package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/infer/infertest"
)

// The package's own tests of chat completions run the real Handler, on
// a real listener, over a fake generation path (infertest): OpenAI's
// wire shapes of answers, Server-Sent Events and errors, without an
// engine. TestOpenAI* in ./server run the same handler on the real
// engine.

var _ Inference = (*infertest.Service)(nil)

// serveFake starts the handler's /v1 routes on fake and returns the base
// URL.
func serveFake(t *testing.T, fake *infertest.Service) string {
	return infertest.Serve(t, func(e *echo.Echo) { (&Handler{Infer: fake}).RegisterV1(e.Group("/v1", Errors)) })
}

// events are a stream's data lines, in order ("[DONE]" as it is).
func events(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			out = append(out, strings.TrimPrefix(line, "data: "))
		case line != "":
			t.Fatalf("not an SSE data line: %q", line)
		}
	}
	return out
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const chatRequest = `{"model": "fake", "messages": [{"role": "user", "content": "Weather?"}]}`

// thinking, text, then a tool call.
var toolAnswer = []infer.Event{
	infertest.Thinking("Hmm."), infertest.Content("Let me"), infertest.Content(" look."),
	infertest.Call("call_1", "weather", `{"city":"Paris"}`), infertest.Done("stop", 9, 4, 12),
}

// A whole chat completion: one choice with the assistant's message
// (reasoning, content, the tool call with its arguments as a string),
// tool_calls as the finish reason, the usage with cached prompt tokens;
// the request as infer got it, with OpenAI's sampling defaults.
func TestChatCompletion(t *testing.T) {
	fake := &infertest.Service{Scripts: [][]infer.Event{toolAnswer}}
	status, h, body := infertest.Post(t, serveFake(t, fake)+"/v1/chat/completions", chatRequest)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %q %s", status, h.Get("Content-Type"), body)
	}
	got := jsonOf(t, string(body))
	if id, _ := got["id"].(string); !strings.HasPrefix(id, "chatcmpl-") || got["object"] != "chat.completion" || got["model"] != "fake" ||
		got["created"] == nil || got["system_fingerprint"] == nil {
		t.Errorf("envelope: %s", body)
	}
	choices, _ := got["choices"].([]any)
	if len(choices) != 1 {
		t.Fatalf("choices: %s", body)
	}
	ch := choices[0].(map[string]any)
	want := `{"content":"Let me look.","reasoning_content":"Hmm.","refusal":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}","name":"weather"},"id":"call_1","type":"function"}]}`
	if msg := jsonText(ch["message"]); msg != want || ch["finish_reason"] != "tool_calls" || ch["index"] != 0.0 {
		t.Errorf("choice: %s\nwant message %s", jsonText(ch), want)
	}
	u, _ := got["usage"].(map[string]any)
	if u["prompt_tokens"] != 9.0 || u["completion_tokens"] != 12.0 || u["total_tokens"] != 21.0 ||
		jsonText(u["prompt_tokens_details"]) != `{"cached_tokens":4}` {
		t.Errorf("usage: %s", jsonText(u))
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || !reqs[0].Chat || len(reqs[0].Messages) != 1 || reqs[0].Messages[0].Content != "Weather?" ||
		reqs[0].Options.Temperature != 1 || reqs[0].Options.TopP != 1 || reqs[0].Options.RepeatPenalty != 1 {
		t.Errorf("requests: %+v", reqs)
	}
}

// A streamed chat completion: a first chunk with the role, a chunk per
// piece in the model's order (tool calls indexed), a last chunk with
// the finish reason, the usage chunk asked for, then [DONE].
func TestChatStream(t *testing.T) {
	fake := &infertest.Service{Scripts: [][]infer.Event{toolAnswer}}
	body := strings.Replace(chatRequest, `{"model"`, `{"stream": true, "stream_options": {"include_usage": true}, "model"`, 1)
	status, h, raw := infertest.Post(t, serveFake(t, fake)+"/v1/chat/completions", body)
	if status != 200 || h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %q %s", status, h.Get("Content-Type"), raw)
	}
	evs := events(t, raw)
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %s", raw)
	}
	var deltas, finishes []string
	var id string
	for _, ev := range evs[:len(evs)-1] {
		c := jsonOf(t, ev)
		if c["object"] != "chat.completion.chunk" || c["model"] != "fake" {
			t.Errorf("chunk envelope: %s", ev)
		}
		if id == "" {
			id, _ = c["id"].(string)
		} else if c["id"] != id {
			t.Errorf("chunk id %v, first %s", c["id"], id)
		}
		choices, _ := c["choices"].([]any)
		if len(choices) == 0 {
			u, _ := c["usage"].(map[string]any)
			if u["prompt_tokens"] != 9.0 || u["completion_tokens"] != 12.0 {
				t.Errorf("usage chunk: %s", ev)
			}
			finishes = append(finishes, "usage")
			continue
		}
		ch := choices[0].(map[string]any)
		if r, ok := ch["finish_reason"].(string); ok {
			finishes = append(finishes, r)
			continue
		}
		deltas = append(deltas, jsonText(ch["delta"]))
	}
	want := []string{
		`{"content":"","role":"assistant"}`,
		`{"reasoning_content":"Hmm."}`,
		`{"content":"Let me"}`,
		`{"content":" look."}`,
		`{"tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}","name":"weather"},"id":"call_1","index":0,"type":"function"}]}`,
	}
	if !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas\n got %v\nwant %v", deltas, want)
	}
	if !reflect.DeepEqual(finishes, []string{"tool_calls", "usage"}) {
		t.Errorf("after the deltas: %v", finishes)
	}
}

// Errors in OpenAI's {"error": {"message", "type", "param", "code"}}
// shape: the generation path's refusals by kind, streamed or not (with
// Retry-After where it applies), a bad request before anything runs, and
// a generation that fails: a 500 when not streaming, one error event
// and no [DONE] in a stream that has begun.
func TestErrorShapes(t *testing.T) {
	for _, tc := range []struct {
		err               error
		status            int
		typ, param, code  string
		retryAfter        string
		messageContaining string
	}{
		{infer.Errorf(infer.BadRequest, "prompt too long"), 400, "invalid_request_error", "", "", "", "prompt too long"},
		{infer.Errorf(infer.NotFound, "model 'fake' not found"), 404, "invalid_request_error", "model", "model_not_found", "", "fake"},
		{infer.Errorf(infer.LoadFailed, "cannot load"), 500, "server_error", "", "", "", "cannot load"},
		{infer.Errorf(infer.Unavailable, "server busy"), 503, "server_error", "", "server_overloaded", "5", "server busy"},
		{infer.Errorf(infer.RateLimited, "too many streams"), 429, "requests", "", "rate_limit_exceeded", "1", "too many streams"},
	} {
		url := serveFake(t, &infertest.Service{Err: tc.err})
		for _, body := range []string{chatRequest, strings.Replace(chatRequest, `{"model"`, `{"stream": true, "model"`, 1)} {
			status, h, raw := infertest.Post(t, url+"/v1/chat/completions", body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("%v: %s", tc.err, raw)
			}
			param, code := "", ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if e.Error.Code != nil {
				code = *e.Error.Code
			}
			if status != tc.status || e.Error.Type != tc.typ || param != tc.param || code != tc.code ||
				!strings.Contains(e.Error.Message, tc.messageContaining) || h.Get("Retry-After") != tc.retryAfter {
				t.Errorf("%v: %d %s (Retry-After %q)", tc.err, status, raw, h.Get("Retry-After"))
			}
		}
	}

	url := serveFake(t, &infertest.Service{Scripts: [][]infer.Event{{infertest.Done("stop", 1, 0, 1)}}})
	status, _, raw := infertest.Post(t, url+"/v1/chat/completions", `{"model": "fake", "messages": [], "temperature": 3}`)
	if status != 400 || !strings.Contains(string(raw), `"type":"invalid_request_error","param":"messages"`) {
		t.Errorf("no messages: %d %s", status, raw)
	}
	status, _, raw = infertest.Post(t, url+"/v1/chat/completions", strings.Replace(chatRequest, `{"model"`, `{"temperature": 3, "model"`, 1))
	if status != 400 || !strings.Contains(string(raw), `"param":"temperature"`) {
		t.Errorf("temperature 3: %d %s", status, raw)
	}

	fail := []infer.Event{infertest.Content("Once"), infertest.Failed(errors.New("decode: out of memory"))}
	url = serveFake(t, &infertest.Service{Scripts: [][]infer.Event{fail}})
	status, _, raw = infertest.Post(t, url+"/v1/chat/completions", chatRequest)
	if status != 500 || !strings.Contains(string(raw), `"type":"server_error"`) || !strings.Contains(string(raw), "decode: out of memory") {
		t.Errorf("failed answer: %d %s", status, raw)
	}
	status, _, raw = infertest.Post(t, url+"/v1/chat/completions", strings.Replace(chatRequest, `{"model"`, `{"stream": true, "model"`, 1))
	evs := events(t, raw)
	if status != 200 || len(evs) != 3 || !strings.Contains(evs[1], `"content":"Once"`) ||
		!strings.HasPrefix(evs[2], `{"error":{`) || !strings.Contains(evs[2], "decode: out of memory") {
		t.Errorf("failed stream: %d %s", status, raw)
	}
}
