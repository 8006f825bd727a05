package responses

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/infer/infertest"
)

// The package's own tests run the real Handler, on a real listener,
// over a fake generation path (infertest) and without a job store
// (nothing is stored): the wire shapes of responses, streams and
// errors, without an engine. TestResponses* in ./server run the same
// handler on the real engine.

// serve starts the handler on fake, with the server's error handler
// (OpenAI's shape under /v1/), and returns its base URL.
func serve(t *testing.T, fake *infertest.Service) string {
	return infertest.Serve(t, func(e *echo.Echo) {
		e.HTTPErrorHandler = dialect.ErrorHandler(e.DefaultHTTPErrorHandler)
		(&Handler{Infer: fake}).Register(e)
	})
}

func post(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	return infertest.Post(t, url+"/v1/responses", body)
}

// sse is one Server-Sent Event's data.
type sse map[string]any

// readEvents reads a stream's events, checking that each event's name
// is its data's type and that sequence numbers count from 0.
func readEvents(t *testing.T, body []byte) []sse {
	t.Helper()
	var out []sse
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var ev sse
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatalf("event %s: %v", name, err)
			}
			if ev["type"] != name {
				t.Errorf("event %q has data of type %v", name, ev["type"])
			}
			if n, _ := ev["sequence_number"].(float64); int(n) != len(out) {
				t.Errorf("event %d (%s) has sequence_number %v", len(out), name, ev["sequence_number"])
			}
			out = append(out, ev)
		}
	}
	return out
}

// names are the events' types, with the output index where they have one.
func names(evs []sse) []string {
	var out []string
	for _, ev := range evs {
		n := strings.TrimPrefix(ev["type"].(string), "response.")
		if i, ok := ev["output_index"]; ok {
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

const request = `{"model": "fake", "input": "Weather in Paris?", "tools": [{"type": "function", "name": "weather",
 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}`

func streamed(r string) string { return strings.Replace(r, `{"model"`, `{"stream": true, "model"`, 1) }

// Reasoning, text, then a function call: every output item type.
var toolAnswer = []infer.Event{
	infertest.Thinking("Let me "), infertest.Thinking("think."),
	infertest.Content("Checking"), infertest.Content(" the weather."),
	infertest.Call("call_1", "weather", `{"city":"Paris"}`),
	infertest.Done("stop", 30, 12, 9),
}

// The whole response: status, output items in order with their content,
// usage from the final event's statistics, and the request as infer
// got it.
func TestResponse(t *testing.T) {
	fake := &infertest.Service{Scripts: [][]infer.Event{toolAnswer}}
	url := serve(t, fake)
	status, _, body := post(t, url, request)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var r Response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.Status != "completed" || r.Model != "fake" ||
		r.CompletedAt == nil || r.Error != nil || r.IncompleteDetails != nil || r.Store {
		t.Errorf("response: %s", body)
	}
	if len(r.Output) != 3 {
		t.Fatalf("output: %s", body)
	}
	var rs reasoningItem
	var msg messageItem
	var call callItem
	for i, v := range []any{&rs, &msg, &call} {
		if err := json.Unmarshal(r.Output[i], v); err != nil {
			t.Fatal(err)
		}
	}
	if rs.Type != "reasoning" || !strings.HasPrefix(rs.ID, "rs_") || len(rs.Content) != 1 || rs.Content[0].Text != "Let me think." {
		t.Errorf("reasoning item: %s", r.Output[0])
	}
	if msg.Type != "message" || msg.Role != "assistant" || msg.Status != "completed" || len(msg.Content) != 1 || msg.Content[0].Text != "Checking the weather." {
		t.Errorf("message item: %s", r.Output[1])
	}
	if call.Type != "function_call" || call.CallID != "call_1" || call.Name != "weather" || call.Arguments != `{"city":"Paris"}` || call.Status != "completed" {
		t.Errorf("function_call item: %s", r.Output[2])
	}
	want := Usage{InputTokens: 30, InputTokensDetails: InputDetails{CachedTokens: 12}, OutputTokens: 9, TotalTokens: 39}
	if r.Usage == nil || *r.Usage != want {
		t.Errorf("usage %+v, want %+v", r.Usage, want)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || !reqs[0].Chat || reqs[0].Model != "fake" || len(reqs[0].Tools) != 1 {
		t.Fatalf("requests: %+v", reqs)
	}
}

// The stream of the same generation: created, in_progress, then per
// item added … done in output order (a text item's content part and
// deltas inside it), completed with the whole response.
func TestResponseStream(t *testing.T) {
	url := serve(t, &infertest.Service{Scripts: [][]infer.Event{toolAnswer}})
	status, h, body := post(t, url, streamed(request))
	if status != http.StatusOK || h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, %s: %s", status, h.Get("Content-Type"), body)
	}
	evs := readEvents(t, body)
	want := []string{
		"created", "in_progress",
		"output_item.added/0", "content_part.added/0", "reasoning_text.delta/0", "reasoning_text.delta/0",
		"reasoning_text.done/0", "content_part.done/0", "output_item.done/0",
		"output_item.added/1", "content_part.added/1", "output_text.delta/1", "output_text.delta/1",
		"output_text.done/1", "content_part.done/1", "output_item.done/1",
		"output_item.added/2", "function_call_arguments.delta/2", "function_call_arguments.done/2", "output_item.done/2",
		"completed",
	}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	for _, i := range []int{0, 1} {
		if r := evs[i]["response"].(map[string]any); r["status"] != "in_progress" || jsonText(r["output"]) != "[]" {
			t.Errorf("%s: %s", evs[i]["type"], jsonText(r))
		}
	}
	if d := evs[13]; d["text"] != "Checking the weather." {
		t.Errorf("output_text.done: %s", jsonText(d))
	}
	if d := evs[18]; d["name"] != "weather" || d["arguments"] != `{"city":"Paris"}` {
		t.Errorf("function_call_arguments.done: %s", jsonText(d))
	}
	done := evs[len(evs)-1]["response"].(map[string]any)
	if done["status"] != "completed" || len(done["output"].([]any)) != 3 ||
		jsonText(done["usage"]) != `{"input_tokens":30,"input_tokens_details":{"cached_tokens":12},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":39}` {
		t.Errorf("completed: %s", jsonText(done))
	}
}

// The output limit makes a response incomplete (max_output_tokens),
// whole and streamed; the last item is incomplete too.
func TestResponseIncomplete(t *testing.T) {
	url := serve(t, &infertest.Service{Scripts: [][]infer.Event{{infertest.Content("Once upon"), infertest.Done("length", 4, 0, 16)}}})
	_, _, body := post(t, url, request)
	var r Response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" ||
		len(r.Output) != 1 || !strings.Contains(string(r.Output[0]), `"status":"incomplete"`) {
		t.Errorf("response: %s", body)
	}
	_, _, body = post(t, url, streamed(request))
	evs := readEvents(t, body)
	want := []string{"created", "in_progress", "output_item.added/0", "content_part.added/0", "output_text.delta/0",
		"output_text.done/0", "content_part.done/0", "output_item.done/0", "incomplete"}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	last := evs[len(evs)-1]["response"].(map[string]any)
	if last["status"] != "incomplete" || jsonText(last["incomplete_details"]) != `{"reason":"max_output_tokens"}` {
		t.Errorf("incomplete: %s", jsonText(last))
	}
	if it := evs[7]["item"].(map[string]any); it["status"] != "incomplete" {
		t.Errorf("last item: %s", jsonText(it))
	}
}

// A generation that fails: before the response, a 500 in OpenAI's
// shape; in a stream that has begun, an error event then
// response.failed with the error, which end the stream.
func TestResponseGenerationFails(t *testing.T) {
	script := []infer.Event{infertest.Content("Once"), infertest.Failed(errors.New("decode: out of memory"))}
	url := serve(t, &infertest.Service{Scripts: [][]infer.Event{script}})
	status, _, body := post(t, url, request)
	var e dialect.OpenAIError
	if err := json.Unmarshal(body, &e); err != nil || status != http.StatusInternalServerError ||
		e.Error.Message != "generation failed: decode: out of memory" || e.Error.Type != "server_error" {
		t.Errorf("response: %d %s", status, body)
	}
	status, _, body = post(t, url, streamed(request))
	if status != http.StatusOK {
		t.Fatalf("stream status %d", status)
	}
	evs := readEvents(t, body)
	want := []string{"created", "in_progress", "output_item.added/0", "content_part.added/0", "output_text.delta/0", "error", "failed"}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if ev := evs[5]; ev["code"] != "server_error" || ev["message"] != "generation failed: decode: out of memory" || ev["param"] != nil {
		t.Errorf("error event: %s", jsonText(ev))
	}
	if r := evs[6]["response"].(map[string]any); r["status"] != "failed" ||
		jsonText(r["error"]) != `{"code":"server_error","message":"generation failed: decode: out of memory"}` {
		t.Errorf("response.failed: %s", jsonText(r))
	}
}

// Errors of the generation path before anything is sent, by kind: the
// status, OpenAI's error type, param and code, and Retry-After where it
// applies; streamed or not alike.
func TestResponseInferErrors(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		err        error
		status     int
		want       dialect.OpenAIErrorBody
		retryAfter string
	}{
		{infer.Errorf(infer.BadRequest, "prompt too long"), 400,
			dialect.OpenAIErrorBody{Message: "prompt too long", Type: "invalid_request_error"}, ""},
		{infer.Errorf(infer.NotFound, "model 'fake' not found"), 404,
			dialect.OpenAIErrorBody{Message: "The model 'fake' does not exist or you do not have access to it.", Type: "invalid_request_error",
				Param: str("model"), Code: str("model_not_found")}, ""},
		{infer.Errorf(infer.LoadFailed, "cannot load"), 500, dialect.OpenAIErrorBody{Message: "cannot load", Type: "server_error"}, ""},
		{infer.Errorf(infer.Internal, "broken"), 500, dialect.OpenAIErrorBody{Message: "broken", Type: "server_error"}, ""},
		{infer.Errorf(infer.Unavailable, "server busy"), 503,
			dialect.OpenAIErrorBody{Message: "server busy", Type: "server_error", Code: str("server_overloaded")}, "5"},
		{infer.Errorf(infer.RateLimited, "too many streams"), 429,
			dialect.OpenAIErrorBody{Message: "too many streams", Type: "requests", Code: str("rate_limit_exceeded")}, "1"},
		{&infer.ParamError{Param: "input", Message: "bad image"}, 400,
			dialect.OpenAIErrorBody{Message: "bad image", Type: "invalid_request_error", Param: str("input")}, ""},
	} {
		url := serve(t, &infertest.Service{Err: tc.err})
		for _, req := range []string{request, streamed(request)} {
			status, h, body := post(t, url, req)
			var e dialect.OpenAIError
			if err := json.Unmarshal(body, &e); err != nil || status != tc.status || !reflect.DeepEqual(e.Error, tc.want) ||
				h.Get("Retry-After") != tc.retryAfter {
				t.Errorf("%v: %d %s (Retry-After %q), want %d %s (%q)", tc.err, status, body, h.Get("Retry-After"),
					tc.status, jsonText(tc.want), tc.retryAfter)
			}
		}
	}
	// An unknown model, found out while reading its parameters.
	url := serve(t, &infertest.Service{OptionsErr: infer.Errorf(infer.NotFound, "model 'fake' not found")})
	status, _, body := post(t, url, request)
	if status != 404 || !strings.Contains(string(body), `"model_not_found"`) {
		t.Errorf("unknown model: %d %s", status, body)
	}
}
