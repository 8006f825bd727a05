package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/auth"
)

// The official Anthropic SDK against the real server and engine:
// Anthropic's Messages API at /v1/messages (server/anthropic).

// anClient is the official Anthropic client pointed at the test server.
func anClient(ts *testServer, opts ...option.RequestOption) anthropic.Client {
	base := []option.RequestOption{option.WithBaseURL(ts.URL), option.WithAPIKey("unused"), option.WithMaxRetries(0)}
	return anthropic.NewClient(append(base, opts...)...)
}

func anUser(s string) []anthropic.MessageParam {
	return []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(s))}
}

// anAPIError checks that err is an Anthropic API error of the status and
// type whose message holds want.
func anAPIError(t *testing.T, err error, status int, typ, want string) {
	t.Helper()
	var e *anthropic.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an API error", err)
	}
	var body struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if json.Unmarshal([]byte(e.RawJSON()), &body) != nil || body.Type != "error" {
		t.Fatalf("error body %s is not Anthropic's shape", e.RawJSON())
	}
	if e.StatusCode != status || string(e.Type()) != typ || body.Error.Type != typ || !strings.Contains(body.Error.Message, want) {
		t.Fatalf("error %d %s %q, want %d %s containing %q", e.StatusCode, e.Type(), body.Error.Message, status, typ, want)
	}
}

// anStream runs a streamed request, accumulates it with the SDK and
// returns the message and the event types in order.
func anStream(t *testing.T, client anthropic.Client, p anthropic.MessageNewParams) (anthropic.Message, []string) {
	t.Helper()
	stream := client.Messages.NewStreaming(context.Background(), p)
	var msg anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.Type, err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return msg, types
}

// blockTypes lists the content's block types.
func blockTypes(content []anthropic.ContentBlockUnion) string {
	var s []string
	for _, b := range content {
		s = append(s, b.Type)
	}
	return strings.Join(s, ",")
}

// A plain message gets the bigram model's known answer; streamed, the
// SDK's accumulator builds the same message from Anthropic's event
// sequence; count_tokens counts the prompt the answer's usage reports.
func TestAnthropicMessage(t *testing.T) {
	ts := startServer(t)
	client := anClient(ts)
	ctx := context.Background()
	p := anthropic.MessageNewParams{
		Model: "bigram", MaxTokens: 20, Messages: anUser("Hi"), Temperature: anthropic.Float(0),
		System: []anthropic.TextBlockParam{{Text: "Be brief."}},
	}
	msg, err := client.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msg.ID, "msg_") || msg.Role != "assistant" || msg.Model != "bigram" || len(msg.Content) != 1 {
		t.Fatalf("message %s", msg.RawJSON())
	}
	if b := msg.Content[0]; b.Type != "text" || b.Text != testmodels.BigramAnswer {
		t.Fatalf("content %s", msg.RawJSON())
	}
	prompt := msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens
	if msg.StopReason != anthropic.StopReasonEndTurn || msg.StopSequence != "" || prompt < 5 || msg.Usage.OutputTokens != 4 {
		t.Fatalf("stop %q %q usage %s", msg.StopReason, msg.StopSequence, msg.Usage.RawJSON())
	}

	// Streamed: Anthropic's event sequence; the accumulated message is the
	// same.
	got, types := anStream(t, client, p)
	want := "message_start,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
	if seq := strings.Join(compact(types), ","); seq != want {
		t.Fatalf("events %v", types)
	}
	if got.Content[0].Text != testmodels.BigramAnswer || blockTypes(got.Content) != "text" || got.StopReason != anthropic.StopReasonEndTurn ||
		got.Usage.OutputTokens != 4 || got.Usage.InputTokens+got.Usage.CacheReadInputTokens != prompt || !strings.HasPrefix(got.ID, "msg_") {
		t.Fatalf("streamed %s", got.RawJSON())
	}
	// The second request found the prompt in the slot's cache.
	if got.Usage.CacheReadInputTokens == 0 {
		t.Errorf("no cache read reported: %s", got.Usage.RawJSON())
	}

	// count_tokens: the same prompt.
	n, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
		Model: "bigram", Messages: p.Messages,
		System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: p.System},
	})
	if err != nil || n.InputTokens != prompt {
		t.Fatalf("count_tokens %+v (%v), want %d", n, err, prompt)
	}
}

// output_config.format holds the answer to a JSON schema; a prompt
// longer than the context is refused (Anthropic neither truncates nor
// slides it).
func TestAnthropicFormatAndLongPrompt(t *testing.T) {
	ts := startServer(t)
	client := anClient(ts)
	ctx := context.Background()
	msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "bigram", MaxTokens: 1000, Messages: anUser("Hi"), Temperature: anthropic.Float(0),
		OutputConfig: anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: map[string]any{
			"type": "object", "properties": map[string]any{"unit": map[string]any{"enum": []string{"celsius", "fahrenheit"}}}, "required": []string{"unit"},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Unit string }
	if blockTypes(msg.Content) != "text" || json.Unmarshal([]byte(msg.Content[0].Text), &out) != nil || (out.Unit != "celsius" && out.Unit != "fahrenheit") {
		t.Fatalf("format: %s", msg.RawJSON())
	}
	_, err = client.Messages.New(ctx, anthropic.MessageNewParams{Model: "bigram", MaxTokens: 10, Messages: anUser(strings.Repeat("Hi ", 400))})
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "does not fit the context")
}

// compact drops repeated event types ("content_block_delta" once per
// run).
func compact(types []string) []string {
	var out []string
	for _, s := range types {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// max_tokens and stop_sequences end an answer with their stop_reason;
// stop_sequence names the sequence that matched, streamed or not.
func TestAnthropicStopReasons(t *testing.T) {
	ts := startServer(t)
	client := anClient(ts)
	ctx := context.Background()
	p := anthropic.MessageNewParams{Model: "bigram", MaxTokens: 2, Messages: anUser("Hi"), Temperature: anthropic.Float(0)}
	msg, err := client.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonMaxTokens || msg.Content[0].Text != "Hello from" || msg.Usage.OutputTokens != 2 {
		t.Fatalf("max_tokens: %s", msg.RawJSON())
	}
	p.MaxTokens = 20
	p.StopSequences = []string{"zzz", "Tad", "from"}
	for _, stream := range []bool{false, true} {
		var m anthropic.Message
		if stream {
			m, _ = anStream(t, client, p)
		} else if mp, err := client.Messages.New(ctx, p); err != nil {
			t.Fatal(err)
		} else {
			m = *mp
		}
		if m.StopReason != anthropic.StopReasonStopSequence || m.StopSequence != "from" || m.Content[0].Text != "Hello " {
			t.Fatalf("stream %v: stop_sequence: %s", stream, m.RawJSON())
		}
	}
	// A stop sequence that never comes: end_turn, stop_sequence null.
	p.StopSequences = []string{"zzz"}
	m, err := client.Messages.New(ctx, p)
	if err != nil || m.StopReason != anthropic.StopReasonEndTurn || m.JSON.StopSequence.Raw() != "null" || m.Content[0].Text != testmodels.BigramAnswer {
		t.Fatalf("unmatched stop: %v %s", err, m.RawJSON())
	}
}

func weatherToolParam() anthropic.ToolParam {
	return anthropic.ToolParam{
		Name: "get_weather", Description: anthropic.String("The weather in a city."),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}},
	}
}

// checkWeatherCall checks a tool_use block of the scripted model's call.
func checkWeatherCall(t *testing.T, b anthropic.ContentBlockUnion) {
	t.Helper()
	var in struct{ City string }
	if b.Type != "tool_use" || !strings.HasPrefix(b.ID, "toolu_") || b.Name != testmodels.ScriptTool || json.Unmarshal(b.Input, &in) != nil || in.City != "Paris" {
		t.Fatalf("tool_use %s", b.RawJSON())
	}
}

// The scripted model thinks, calls get_weather (a thinking block with
// its signature, then a tool_use block, stop_reason tool_use), gets the
// result back as a tool_result and answers; streamed, the accumulator
// sees the same blocks; a forced tool_choice calls the tool; thinking
// disabled drops the thinking.
func TestAnthropicTools(t *testing.T) {
	ts := startToolServer(t)
	client := anClient(ts)
	ctx := context.Background()
	tools := []anthropic.ToolUnionParam{{OfTool: ptr(weatherToolParam())}}
	p := anthropic.MessageNewParams{
		Model: "script", MaxTokens: 2000, Messages: anUser("What is the weather in Paris?"), Tools: tools,
		Temperature: anthropic.Float(0), Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
	}
	msg, err := client.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if blockTypes(msg.Content) != "thinking,tool_use" || msg.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("answer %s", msg.RawJSON())
	}
	if th := msg.Content[0]; th.Thinking != testmodels.ScriptThinking || th.Signature == "" {
		t.Fatalf("thinking %s", th.RawJSON())
	}
	checkWeatherCall(t, msg.Content[1])

	got, types := anStream(t, client, p)
	want := "message_start,content_block_start,content_block_delta,content_block_stop,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
	if seq := strings.Join(compact(types), ","); seq != want {
		t.Fatalf("events %v", types)
	}
	if blockTypes(got.Content) != "thinking,tool_use" || got.StopReason != anthropic.StopReasonToolUse ||
		got.Content[0].Thinking != testmodels.ScriptThinking || got.Content[0].Signature != msg.Content[0].Signature {
		t.Fatalf("streamed %s", got.RawJSON())
	}
	checkWeatherCall(t, got.Content[1])

	// The result goes back; the model answers from it.
	call := got.Content[1]
	p.Messages = append(p.Messages, got.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, "sunny, 22 °C", false)))
	final, err := client.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if blockTypes(final.Content) != "text" || final.Content[0].Text != testmodels.ScriptAnswer || final.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("final %s", final.RawJSON())
	}
	// count_tokens counts the tools and the whole conversation.
	n, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
		Model: "script", Messages: p.Messages, Thinking: p.Thinking,
		Tools: []anthropic.MessageCountTokensToolUnionParam{{OfTool: ptr(weatherToolParam())}},
	})
	if err != nil || n.InputTokens != final.Usage.InputTokens+final.Usage.CacheReadInputTokens {
		t.Fatalf("count_tokens %+v (%v), usage %s", n, err, final.Usage.RawJSON())
	}

	// A tool_result must answer an earlier tool_use.
	bad := p
	bad.Messages = append(anUser("Hi"), anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_nowhere", "x", false)))
	_, err = client.Messages.New(ctx, bad)
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "toolu_nowhere")

	// A forced tool (tool_choice tool, then any, streamed): infer's
	// grammar makes the bigram model, which never calls tools by itself,
	// write a valid call.
	unit := func(name string) anthropic.ToolUnionParam {
		return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: name, InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"unit": map[string]any{"enum": []string{"celsius", "fahrenheit"}}}, Required: []string{"unit"}}}}
	}
	forced := anthropic.MessageNewParams{
		Model: "bigram", MaxTokens: 1000, Messages: anUser("Hi"), Tools: []anthropic.ToolUnionParam{unit("get_temperature"), unit("get_humidity")},
		ToolChoice: anthropic.ToolChoiceParamOfTool("get_humidity"), Temperature: anthropic.Float(0),
	}
	checkUnit := func(m anthropic.Message, names ...string) {
		t.Helper()
		if m.StopReason != anthropic.StopReasonToolUse || len(m.Content) == 0 {
			t.Fatalf("forced %s", m.RawJSON())
		}
		for _, b := range m.Content {
			var in struct{ Unit string }
			if b.Type != "tool_use" || !contains(names, b.Name) || json.Unmarshal(b.Input, &in) != nil || (in.Unit != "celsius" && in.Unit != "fahrenheit") {
				t.Fatalf("forced %s, want a call of %v", m.RawJSON(), names)
			}
		}
	}
	msg, err = client.Messages.New(ctx, forced)
	if err != nil {
		t.Fatal(err)
	}
	checkUnit(*msg, "get_humidity")
	forced.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
	streamed, _ := anStream(t, client, forced)
	checkUnit(streamed, "get_temperature", "get_humidity")
	// Thinking with a forced tool is refused, as Anthropic does.
	forced.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	forced.MaxTokens = 2000
	_, err = client.Messages.New(ctx, forced)
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "tool_choice")

	// Thinking disabled: no thinking block, the call at once.
	p.Messages = p.Messages[:1]
	p.Thinking = anthropic.ThinkingConfigParamUnion{OfDisabled: ptr(anthropic.NewThinkingConfigDisabledParam())}
	if msg, err = client.Messages.New(ctx, p); err != nil || blockTypes(msg.Content) != "tool_use" {
		t.Fatalf("thinking disabled: %v %s", err, msg.RawJSON())
	}
	// tool_choice none: no tools shown, none parsed: the model's raw call
	// stays text.
	p.Thinking = anthropic.ThinkingConfigParamUnion{}
	p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	if msg, err = client.Messages.New(ctx, p); err != nil || blockTypes(msg.Content) != "thinking,text" || msg.Content[1].Text != testmodels.ScriptCall || msg.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("tool_choice none: %v %s", err, msg.RawJSON())
	}
	// A model without thinking refuses thinking enabled.
	_, err = client.Messages.New(ctx, anthropic.MessageNewParams{Model: "bigram", MaxTokens: 2000, Messages: anUser("Hi"), Thinking: anthropic.ThinkingConfigParamOfEnabled(1024)})
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "does not support thinking")
}

// Errors come in Anthropic's shape with Anthropic's types: a missing
// max_tokens, an image, an unknown block type or role (400
// invalid_request_error), an unknown model (404 not_found_error), a bad
// key (401 authentication_error), a wrong method (405).
func TestAnthropicErrors(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	ctx := context.Background()
	client := anClient(ts, option.WithAPIKey("k"))
	p := anthropic.MessageNewParams{Model: "stories", MaxTokens: 5, Messages: anUser("Once upon a time")}
	// x-api-key (the SDK's) and Authorization: Bearer both work.
	if msg, err := client.Messages.New(ctx, p); err != nil || msg.Usage.OutputTokens < 1 {
		t.Fatalf("x-api-key: %v", err)
	}
	bearer := anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAuthToken("k"), option.WithMaxRetries(0),
		option.WithHeader("anthropic-beta", "whatever-2025-01-01"))
	if _, err := bearer.Messages.New(ctx, p); err != nil {
		t.Fatalf("bearer: %v", err)
	}
	wrong := anClient(ts, option.WithAPIKey("wrong"))
	_, err = wrong.Messages.New(ctx, p)
	anAPIError(t, err, http.StatusUnauthorized, "authentication_error", "")

	p.Model = "nonexistent"
	_, err = client.Messages.New(ctx, p)
	anAPIError(t, err, http.StatusNotFound, "not_found_error", "nonexistent")
	_, err = client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "nonexistent", Messages: p.Messages})
	anAPIError(t, err, http.StatusNotFound, "not_found_error", "nonexistent")
	// Streamed, a refusal before the stream is a plain HTTP error too.
	stream := client.Messages.NewStreaming(ctx, p)
	for stream.Next() {
	}
	anAPIError(t, stream.Err(), http.StatusNotFound, "not_found_error", "nonexistent")

	p.Model = "stories"
	p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is this?"), anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo="))}
	_, err = client.Messages.New(ctx, p)
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", `model "stories" does not support images`)

	for _, c := range []struct{ body, want string }{
		{`{"model": "stories", "messages": [{"role": "user", "content": "Hi"}]}`, "max_tokens: Field required"},
		{`{"model": "stories", "max_tokens": 5, "messages": [{"role": "system", "content": "Hi"}]}`, "messages[0].role"},
		{`{"model": "stories", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "video", "url": "x"}]}]}`, `"video" is not supported`},
		{`{"model": "stories", "max_tokens": 5, "messages": []}`, "messages"},
		{`{"model": "stories", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "web_search_20250305", "name": "web_search"}]}`, "server tools"},
		{`{"model": "stories", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "tool_choice": {"type": "tool", "name": "nope"}}`, "tool_choice.name"},
		{`{"model": "stories", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "thinking": {"type": "enabled", "budget_tokens": 10}}`, "budget_tokens"},
		{`{"model": "stories", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "thinking": {"type": "enabled", "budget_tokens": 2048}}`, "less than max_tokens"},
		{`not json`, "JSON object"},
	} {
		code, _, body := anDo(t, ts.URL+"/v1/messages", "k", c.body)
		checkAnError(t, code, body, http.StatusBadRequest, "invalid_request_error", c.want)
	}
	code, hdr, body := anRequest(t, http.MethodGet, ts.URL+"/v1/messages", "k", "")
	checkAnError(t, code, body, http.StatusMethodNotAllowed, "invalid_request_error", "not allowed")
	if hdr.Get("Allow") != http.MethodPost {
		t.Errorf("Allow %q", hdr.Get("Allow"))
	}
	code, _, body = anDo(t, ts.URL+"/v1/messages/nowhere", "k", "{}")
	checkAnError(t, code, body, http.StatusNotFound, "not_found_error", "")
	code, _, body = anDo(t, ts.URL+"/v1/messages", "", `{}`)
	checkAnError(t, code, body, http.StatusUnauthorized, "authentication_error", "")
}

// anDo posts body with x-api-key and Anthropic's headers.
func anDo(t *testing.T, url, key, body string) (int, http.Header, []byte) {
	t.Helper()
	return anRequest(t, http.MethodPost, url, key, body)
}

func anRequest(t *testing.T, method, url, key, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	if key != "" {
		req.Header.Set("x-api-key", key)
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

// checkAnError checks an answer is an Anthropic error of the status and
// type whose message holds want.
func checkAnError(t *testing.T, code int, body []byte, status int, typ, want string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil || code != status || e.Type != "error" || e.Error.Type != typ ||
		e.Error.Message == "" || !strings.Contains(e.Error.Message, want) {
		t.Fatalf("answer %d %s, want %d %s containing %q", code, body, status, typ, want)
	}
}

// The worst values a client can send are refused with a 400 in
// Anthropic's shape before anything reaches the engine, and the server
// answers normally afterwards.
func TestAnthropicWorstValues(t *testing.T) {
	ts := startServer(t)
	msg := `"messages": [{"role": "user", "content": "Hi"}]`
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("s%d", i)
	}
	manyJSON, _ := json.Marshal(many)
	long, _ := json.Marshal([]string{strings.Repeat("x", 5000)})
	for _, c := range []struct{ fields, want string }{
		{`"max_tokens": 9223372036854775807`, "max_tokens"},
		{`"max_tokens": 9223372036854775808`, "max_tokens"},
		{`"max_tokens": 2147483648`, "max_tokens"},
		{`"max_tokens": 0`, "max_tokens"},
		{`"max_tokens": -1`, "max_tokens"},
		{`"max_tokens": -9223372036854775808`, "max_tokens"},
		{`"max_tokens": 1e400`, "max_tokens"},
		{`"max_tokens": "NaN"`, "max_tokens"},
		{`"max_tokens": 1.5`, "max_tokens"},
		{`"max_tokens": 10, "temperature": "NaN"`, "temperature"},
		{`"max_tokens": 10, "temperature": 1e400`, "temperature"},
		{`"max_tokens": 10, "temperature": 1.5`, "temperature"},
		{`"max_tokens": 10, "temperature": -0.1`, "temperature"},
		{`"max_tokens": 10, "top_p": 2`, "top_p"},
		{`"max_tokens": 10, "top_p": "Infinity"`, "top_p"},
		{`"max_tokens": 10, "top_k": 9223372036854775807`, "top_k"},
		{`"max_tokens": 10, "top_k": 4294967296`, "top_k"},
		{`"max_tokens": 10, "top_k": -1`, "top_k"},
		{`"max_tokens": 10, "stop_sequences": ` + string(manyJSON), "stop_sequences"},
		{`"max_tokens": 10, "stop_sequences": ` + string(long), "stop_sequences[0]"},
		{`"max_tokens": 10, "stop_sequences": "stop"`, "stop_sequences"},
		{`"max_tokens": 10, "thinking": {"type": "enabled", "budget_tokens": -9223372036854775808}`, "budget_tokens"},
		{`"max_tokens": 10, "thinking": {"type": "enabled", "budget_tokens": 99999999999999999999}`, "budget_tokens"},
		{`"max_tokens": 10, "thinking": {"type": "sometimes"}`, "thinking.type"},
		{`"max_tokens": 10, "tool_choice": {"type": "any"}`, "tool_choice"},
		{`"max_tokens": 10, "tools": [{"name": "f", "input_schema": {"type": 5}}]`, "input_schema"},
		{`"max_tokens": 10, "tools": [{"name": "", "input_schema": {}}]`, "tools[0].name"},
		{`"max_tokens": 10, "output_config": {"format": {"type": "json_schema", "schema": {"type": "nonsense"}}}`, "output_config"},
	} {
		for _, path := range []string{"/v1/messages"} {
			code, _, body := anDo(t, ts.URL+path, "", `{"model": "bigram", `+msg+`, `+c.fields+`}`)
			checkAnError(t, code, body, http.StatusBadRequest, "invalid_request_error", c.want)
		}
	}
	// A request with bad content in count_tokens is refused the same way.
	code, _, body := anDo(t, ts.URL+"/v1/messages/count_tokens", "", `{"model": "bigram", "messages": [{"role": "robot", "content": "Hi"}]}`)
	checkAnError(t, code, body, http.StatusBadRequest, "invalid_request_error", "role")

	// The server still answers, and the largest values in range run (the
	// SDK refuses a huge max_tokens without streaming itself: raw HTTP).
	code, _, body = anDo(t, ts.URL+"/v1/messages", "", `{"model": "bigram", `+msg+`, "max_tokens": 2147483647, "temperature": 1,
		"top_k": 2147483647, "top_p": 1, "stop_sequences": ["`+strings.Repeat("x", 4096)+`"]}`)
	var m anthropic.Message
	if code != http.StatusOK || json.Unmarshal(body, &m) != nil || m.Content[0].Text != testmodels.BigramAnswer {
		t.Fatalf("largest values: %d %s", code, body)
	}
	client := anClient(ts)
	got, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "bigram", MaxTokens: 20, Messages: anUser("Hi")})
	if err != nil || got.Content[0].Text != testmodels.BigramAnswer {
		t.Fatalf("after the worst values: %v", err)
	}
}
