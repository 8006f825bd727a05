package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/jobs"
)

// respModels holds the scripted tool-calling model as "script" and the
// bigram model as "bigram".
func respModels(t *testing.T) string {
	t.Helper()
	return testModels(t, "script", "bigram")
}

// startRespServer serves modelsDir with the job store jc describes (a
// directory reopened by a second server after the first stops, or
// PostgreSQL), finished jobs and stored responses kept an hour.
func startRespServer(t *testing.T, modelsDir string, jc jobs.Config, a *auth.Auth) *testServer {
	t.Helper()
	jc.Retention = time.Hour
	return serveConfig(t, Config{ModelsDir: modelsDir, Sched: testSched(2, 2048), Auth: a, Jobs: testJobs(t, jc), JobWorkers: 1, ResponsesTTL: time.Hour})
}

func respClient(url, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func text(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

func items(xs ...responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfInputItemList: xs}
}

func callOutput(callID, out string) responses.ResponseInputItemUnionParam {
	it := responses.ResponseInputItemParamOfFunctionCallOutput(out)
	it.OfFunctionCallOutput.CallID = openai.String(callID)
	return it
}

func weatherParams() responses.ToolUnionParam {
	return responses.ToolParamOfFunction("get_weather", map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
	}, false)
}

// respAPIError checks an SDK error's status, param and type.
func respAPIError(t *testing.T, err error, status int, param, contains string) {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an API error", err)
	}
	if e.StatusCode != status || e.Param != param || e.Type == "" || !strings.Contains(e.Message, contains) {
		t.Fatalf("error %d param %q type %q (%s), want %d %q containing %q", e.StatusCode, e.Param, e.Type, e.Message, status, param, contains)
	}
}

// streamed reads a streamed response: its events' types in order, the
// text deltas joined, and the final response.
func streamed(t *testing.T, client openai.Client, params responses.ResponseNewParams) ([]string, string, string, responses.Response) {
	t.Helper()
	stream := client.Responses.NewStreaming(context.Background(), params)
	var types []string
	var deltas, thinking strings.Builder
	var final responses.Response
	seq := int64(-1)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber <= seq {
			t.Fatalf("sequence_number %d after %d", ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.reasoning_text.delta":
			thinking.WriteString(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return types, deltas.String(), thinking.String(), final
}

// Plain text, streamed and not (the same), stored, read back, listed,
// continued with previous_response_id, deleted; incomplete at
// max_output_tokens; a JSON schema holds the output.
func TestResponsesText(t *testing.T) {
	ts := startRespServer(t, respModels(t), jobs.Config{Dir: t.TempDir()}, nil)
	client := respClient(ts.URL, "unused")
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model: "bigram", Input: text("Hi"), Temperature: openai.Float(0), MaxOutputTokens: openai.Int(40),
		Metadata: shared.Metadata{"k": "v"}, Instructions: openai.String("Be brief."),
	}
	resp, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.ID, "resp_") || resp.Status != "completed" || resp.OutputText() != testmodels.BigramAnswer ||
		resp.Metadata["k"] != "v" || resp.Instructions.OfString != "Be brief." || resp.Model != "bigram" || resp.JSON.ExtraFields["store"].Raw() != "true" {
		t.Fatalf("response %+v", resp)
	}
	u := resp.Usage
	if u.InputTokens <= 0 || u.OutputTokens <= 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Fatalf("usage %+v", u)
	}
	if len(resp.Output) != 1 || resp.Output[0].Type != "message" || resp.Output[0].Role != "assistant" || !strings.HasPrefix(resp.Output[0].ID, "msg_") {
		t.Fatalf("output %+v", resp.Output)
	}

	// Streamed: the same text, the events in order, numbered.
	types, deltas, _, final := streamed(t, client, params)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	if fmt.Sprint(types[:4]) != fmt.Sprint(want) {
		t.Fatalf("first events %v", types)
	}
	tail := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if fmt.Sprint(types[len(types)-4:]) != fmt.Sprint(tail) {
		t.Fatalf("last events %v", types)
	}
	for _, ty := range types[4 : len(types)-4] {
		if ty != "response.output_text.delta" {
			t.Fatalf("events %v", types)
		}
	}
	if deltas != resp.OutputText() || final.OutputText() != resp.OutputText() || final.Status != "completed" || final.Usage.OutputTokens != u.OutputTokens {
		t.Fatalf("streamed %q, final %+v", deltas, final)
	}

	// The wire: named events, each with its type and number.
	code, hdr, raw := do(t, "POST", ts.URL+"/v1/responses", "", `{"model":"bigram","input":"Hi","stream":true,"store":false,"temperature":0}`)
	if code != http.StatusOK || hdr.Get("Content-Type") != "text/event-stream" ||
		!strings.HasPrefix(string(raw), "event: response.created\ndata: {") || !strings.Contains(string(raw), `"sequence_number":0`) ||
		!strings.Contains(string(raw), "event: response.output_text.delta\ndata: {") || !strings.HasSuffix(string(raw), "\n\n") {
		t.Fatalf("raw stream %d %s", code, raw)
	}

	// Stored: read back, its input listed.
	got, err := client.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != resp.ID || got.OutputText() != resp.OutputText() || got.Status != "completed" {
		t.Fatalf("get %+v", got)
	}
	page, err := client.Responses.InputItems.List(ctx, resp.ID, responses.InputItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].Type != "message" || page.Data[0].Role != "user" || firstText(page.Data[0].RawJSON()) != "Hi" {
		t.Fatalf("input items %+v", page.Data)
	}

	// Continued: the conversation so far comes first; its input items
	// are its own.
	next, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "bigram", Input: text("Hi again"), PreviousResponseID: openai.String(resp.ID), Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if next.OutputText() != testmodels.BigramAnswer || next.PreviousResponseID != resp.ID || next.Usage.InputTokens <= u.InputTokens {
		t.Fatalf("continued %+v (input tokens %d, first %d)", next, next.Usage.InputTokens, u.InputTokens)
	}
	page, err = client.Responses.InputItems.List(ctx, next.ID, responses.InputItemListParams{})
	if err != nil || len(page.Data) != 1 || firstText(page.Data[0].RawJSON()) != "Hi again" {
		t.Fatalf("continued input items %+v (%v)", page, err)
	}

	// Deleted: gone, and no longer continued.
	if err := client.Responses.Delete(ctx, resp.ID); err != nil {
		t.Fatal(err)
	}
	_, err = client.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	respAPIError(t, err, http.StatusNotFound, "", "not found")
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), PreviousResponseID: openai.String(resp.ID)})
	respAPIError(t, err, http.StatusBadRequest, "previous_response_id", "Previous response with id")
	if e := (*openai.Error)(nil); !errors.As(err, &e) || e.Code != "previous_response_not_found" {
		t.Fatalf("code of an unknown previous response: %v", err)
	}
	err = client.Responses.Delete(ctx, resp.ID)
	respAPIError(t, err, http.StatusNotFound, "", "not found")

	// store false: not kept.
	nostore, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Store: openai.Bool(false), Temperature: openai.Float(0)})
	if err != nil || nostore.JSON.ExtraFields["store"].Raw() != "false" || nostore.OutputText() != testmodels.BigramAnswer {
		t.Fatalf("store false: %+v (%v)", nostore, err)
	}
	_, err = client.Responses.Get(ctx, nostore.ID, responses.ResponseGetParams{})
	respAPIError(t, err, http.StatusNotFound, "", "not found")

	// Cut short: incomplete, streamed too.
	short := responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Temperature: openai.Float(0), MaxOutputTokens: openai.Int(2)}
	inc, err := client.Responses.New(ctx, short)
	if err != nil || inc.Status != "incomplete" || inc.IncompleteDetails.Reason != "max_output_tokens" || inc.Usage.OutputTokens != 2 ||
		!strings.HasPrefix(testmodels.BigramAnswer, inc.OutputText()) || inc.OutputText() == "" {
		t.Fatalf("incomplete %+v (%v)", inc, err)
	}
	types, deltas, _, final = streamed(t, client, short)
	if types[len(types)-1] != "response.incomplete" || final.Status != "incomplete" || deltas != inc.OutputText() {
		t.Fatalf("streamed incomplete %v %q", types, deltas)
	}

	// json_schema: the output is held to the schema.
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []string{"ok"},
		"additionalProperties": false}
	js, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "bigram", Input: text("Hi"), Temperature: openai.Float(0), MaxOutputTokens: openai.Int(200),
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("answer", schema)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		OK *bool `json:"ok"`
	}
	if err := json.Unmarshal([]byte(js.OutputText()), &v); err != nil || v.OK == nil || js.Text.Format.Type != "json_schema" {
		t.Fatalf("json_schema output %q (%v)", js.OutputText(), err)
	}
}

// Function calls with the scripted model: reasoning and a call, the
// call's output sent back (by previous_response_id and statelessly), the
// final answer; streamed; forced calls; reasoning effort none.
func TestResponsesTools(t *testing.T) {
	ts := startRespServer(t, respModels(t), jobs.Config{Dir: t.TempDir()}, nil)
	client := respClient(ts.URL, "unused")
	ctx := context.Background()
	ask := responses.ResponseNewParams{
		Model: "script", Input: text("What is the weather in Paris?"), Tools: []responses.ToolUnionParam{weatherParams()},
		Temperature: openai.Float(0), MaxOutputTokens: openai.Int(40),
	}
	resp, err := client.Responses.New(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != "completed" || len(resp.Output) != 2 || resp.OutputText() != "" {
		t.Fatalf("output %+v", resp.Output)
	}
	rs, fc := resp.Output[0].AsReasoning(), resp.Output[1].AsFunctionCall()
	if resp.Output[0].Type != "reasoning" || len(rs.Content) != 1 || rs.Content[0].Text != testmodels.ScriptThinking || !strings.HasPrefix(rs.ID, "rs_") {
		t.Fatalf("reasoning %+v", resp.Output[0])
	}
	var args struct{ City string }
	if resp.Output[1].Type != "function_call" || fc.Name != "get_weather" || fc.CallID == "" || !strings.HasPrefix(fc.ID, "fc_") ||
		json.Unmarshal([]byte(fc.Arguments), &args) != nil || args.City != "Paris" || fc.Status != "completed" {
		t.Fatalf("call %+v", fc)
	}

	// Streamed: the same reasoning and call.
	types, _, thinking, final := streamed(t, client, ask)
	joined := strings.Join(types, " ")
	for _, want := range []string{"response.reasoning_text.delta", "response.reasoning_text.done", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("no %s in %v", want, types)
		}
	}
	if thinking != testmodels.ScriptThinking || len(final.Output) != 2 || final.Output[1].AsFunctionCall().Arguments != fc.Arguments {
		t.Fatalf("streamed thinking %q output %+v", thinking, final.Output)
	}

	// The call's output goes back by previous_response_id.
	answer, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "script", PreviousResponseID: openai.String(resp.ID), Input: items(callOutput(fc.CallID, "sunny, 22 °C")),
		Tools: []responses.ToolUnionParam{weatherParams()}, Temperature: openai.Float(0), MaxOutputTokens: openai.Int(40),
	})
	if err != nil {
		t.Fatal(err)
	}
	if answer.OutputText() != testmodels.ScriptAnswer || answer.Status != "completed" {
		t.Fatalf("answer %+v", answer.Output)
	}
	// And statelessly: the whole conversation as items, the SDK's own
	// output items sent back.
	fcParam := fc.ToParam()
	rsParam := rs.ToParam()
	stateless, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "script", Store: openai.Bool(false), Tools: []responses.ToolUnionParam{weatherParams()}, Temperature: openai.Float(0), MaxOutputTokens: openai.Int(40),
		Input: items(responses.ResponseInputItemParamOfMessage("What is the weather in Paris?", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemUnionParam{OfReasoning: &rsParam},
			responses.ResponseInputItemUnionParam{OfFunctionCall: &fcParam}, callOutput(fc.CallID, "sunny, 22 °C")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if stateless.OutputText() != testmodels.ScriptAnswer {
		t.Fatalf("stateless answer %+v", stateless.Output)
	}
	// An output for a call nobody made is refused.
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "script", Input: items(responses.ResponseInputItemParamOfMessage("Hi", responses.EasyInputMessageRoleUser), callOutput("call_nobody", "x")),
	})
	respAPIError(t, err, http.StatusBadRequest, "input[1].call_id", "No tool call found")

	// reasoning effort none: thinking off, the call at once.
	off, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "script", Input: text("What is the weather in Paris?"), Tools: []responses.ToolUnionParam{weatherParams()},
		Temperature: openai.Float(0), MaxOutputTokens: openai.Int(40), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortNone},
	})
	if err != nil || len(off.Output) != 1 || off.Output[0].Type != "function_call" {
		t.Fatalf("effort none: %+v (%v)", off, err)
	}

	// tool_choice forcing a function: the bigram model, which never calls
	// tools by itself, calls it.
	humidity := responses.ToolParamOfFunction("get_humidity", map[string]any{
		"type": "object", "properties": map[string]any{"unit": map[string]any{"enum": []string{"celsius", "fahrenheit"}}}, "required": []string{"unit"},
	}, true)
	forced, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "bigram", Input: text("Hi"), Tools: []responses.ToolUnionParam{weatherParams(), humidity}, Temperature: openai.Float(0), MaxOutputTokens: openai.Int(1000),
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_humidity"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var unit struct{ Unit string }
	if len(forced.Output) == 0 || forced.Output[0].Type != "function_call" || forced.Output[0].Name != "get_humidity" ||
		json.Unmarshal([]byte(forced.Output[0].Arguments.OfString), &unit) != nil || (unit.Unit != "celsius" && unit.Unit != "fahrenheit") {
		t.Fatalf("forced %+v", forced.Output)
	}
	if forced.ToolChoice.Name != "get_humidity" || len(forced.Tools) != 2 {
		t.Fatalf("echo: tool_choice %+v tools %d", forced.ToolChoice, len(forced.Tools))
	}
}

// Stored responses belong to their key; they survive a restart; a
// background response is a job, polled to its end.
func TestResponsesKeysRestartBackground(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"key-a", "key-b"}})
	if err != nil {
		t.Fatal(err)
	}
	modelsDir, dataDir := respModels(t), t.TempDir()
	ts := startRespServer(t, modelsDir, jobs.Config{Dir: dataDir}, a)
	ca, cb := respClient(ts.URL, "key-a"), respClient(ts.URL, "key-b")
	ctx := context.Background()
	resp, err := ca.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cb.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	respAPIError(t, err, http.StatusNotFound, "", "not found")
	_, err = cb.Responses.InputItems.List(ctx, resp.ID, responses.InputItemListParams{})
	respAPIError(t, err, http.StatusNotFound, "", "not found")
	err = cb.Responses.Delete(ctx, resp.ID)
	respAPIError(t, err, http.StatusNotFound, "", "not found")
	_, err = cb.Responses.Cancel(ctx, resp.ID)
	respAPIError(t, err, http.StatusNotFound, "", "not found")
	_, err = cb.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), PreviousResponseID: openai.String(resp.ID)})
	respAPIError(t, err, http.StatusBadRequest, "previous_response_id", "not found")
	// A synchronous response cannot be cancelled.
	_, err = ca.Responses.Cancel(ctx, resp.ID)
	respAPIError(t, err, http.StatusBadRequest, "", "Cannot cancel")

	// Background: queued at once, polled to completion.
	bg, err := ca.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Temperature: openai.Float(0), Background: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if bg.Status != "queued" || !bg.Background || len(bg.Output) != 0 {
		t.Fatalf("background %+v", bg)
	}
	done := poll(t, ca, bg.ID)
	if done.Status != "completed" || done.OutputText() != testmodels.BigramAnswer || done.Usage.OutputTokens <= 0 {
		t.Fatalf("background done %+v", done)
	}
	_, err = cb.Responses.Get(ctx, bg.ID, responses.ResponseGetParams{})
	respAPIError(t, err, http.StatusNotFound, "", "not found")
	// Cancelling a finished background response returns it as it is.
	if c, err := ca.Responses.Cancel(ctx, bg.ID); err != nil || c.Status != "completed" {
		t.Fatalf("cancel finished: %+v (%v)", c, err)
	}

	// Cancelled while queued behind a long job on the one worker: it
	// stays cancelled, and its job never runs.
	long := submitJob(t, &testServer{URL: ts.URL}, "key-a", "/api/v1/ollama",
		`{"model":"bigram","prompt":"`+testmodels.LoopPrompt+`","raw":true,"stream":false,"options":{"temperature":0,"num_predict":1900}}`)
	queued, err := ca.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Background: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := ca.Responses.Cancel(ctx, queued.ID)
	if err != nil || cancelled.Status != "cancelled" {
		t.Fatalf("cancel queued: %+v (%v)", cancelled, err)
	}
	if code, _, b := do(t, "DELETE", ts.URL+"/api/v1/jobs/"+long.ID, "key-a", ""); code != http.StatusOK {
		t.Fatalf("cancel the long job: %d %s", code, b)
	}
	// The next background response runs: the cancelled one was skipped.
	after, err := ca.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Background: openai.Bool(true), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if d := poll(t, ca, after.ID); d.Status != "completed" {
		t.Fatalf("after the cancel: %+v", d)
	}
	if got, err := ca.Responses.Get(ctx, queued.ID, responses.ResponseGetParams{}); err != nil || got.Status != "cancelled" || len(got.Output) != 0 {
		t.Fatalf("cancelled response: %+v (%v)", got, err)
	}

	// Restart: the same data directory, another server.
	ts.stop()
	ts2 := startRespServer(t, modelsDir, jobs.Config{Dir: dataDir}, a)
	ca, cb = respClient(ts2.URL, "key-a"), respClient(ts2.URL, "key-b")
	got, err := ca.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != testmodels.BigramAnswer {
		t.Fatalf("after restart: %+v (%v)", got, err)
	}
	next, err := ca.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("And now?"), PreviousResponseID: openai.String(resp.ID), Temperature: openai.Float(0)})
	if err != nil || next.OutputText() != testmodels.BigramAnswer || next.Usage.InputTokens <= resp.Usage.InputTokens {
		t.Fatalf("continued after restart: %+v (%v)", next, err)
	}
	_, err = cb.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), PreviousResponseID: openai.String(resp.ID)})
	respAPIError(t, err, http.StatusBadRequest, "previous_response_id", "not found")
	// A background response continues a stored one too.
	bg2, err := ca.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("More"), PreviousResponseID: openai.String(next.ID),
		Temperature: openai.Float(0), Background: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if d := poll(t, ca, bg2.ID); d.Status != "completed" || d.OutputText() != testmodels.BigramAnswer || d.PreviousResponseID != next.ID {
		t.Fatalf("background continued %+v", d)
	}
}

// firstText is the text of an item's first content part.
func firstText(raw string) string {
	var it struct {
		Content []struct{ Text string }
	}
	json.Unmarshal([]byte(raw), &it)
	if len(it.Content) == 0 {
		return ""
	}
	return it.Content[0].Text
}

func poll(t *testing.T, c openai.Client, id string) *responses.Response {
	t.Helper()
	var r *responses.Response
	testkit.Eventually(t, time.Minute, "background response "+id+" to finish", func() bool {
		var err error
		if r, err = c.Responses.Get(context.Background(), id, responses.ResponseGetParams{}); err != nil {
			t.Fatal(err)
		}
		return r.Status != "queued" && r.Status != "in_progress"
	})
	return r
}

// Bad requests and the worst values are 400s in OpenAI's shape, nothing
// is stored for them, and the server still serves.
func TestResponsesErrors(t *testing.T) {
	ts := startRespServer(t, respModels(t), jobs.Config{Dir: t.TempDir()}, nil)
	client := respClient(ts.URL, "unused")
	ctx := context.Background()
	huge := strings.Repeat("x", 600)
	meta := shared.Metadata{}
	for i := range 17 {
		meta[fmt.Sprint("k", i)] = "v"
	}
	var manyTools []responses.ToolUnionParam
	for i := range 129 {
		manyTools = append(manyTools, responses.ToolParamOfFunction(fmt.Sprint("f", i), nil, false))
	}
	var manyItems []responses.ResponseInputItemUnionParam
	for range 10000 {
		manyItems = append(manyItems, responses.ResponseInputItemParamOfMessage("Hi", responses.EasyInputMessageRoleUser))
	}
	image := responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
		{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("data:image/png;base64,AAAA")}},
	}, responses.EasyInputMessageRoleUser)
	for _, c := range []struct {
		name     string
		p        responses.ResponseNewParams
		status   int
		param    string
		contains string
	}{
		{"no model", responses.ResponseNewParams{Input: text("Hi")}, 400, "model", "model"},
		{"unknown model", responses.ResponseNewParams{Model: "nope", Input: text("Hi")}, 404, "model", "does not exist"},
		{"no input", responses.ResponseNewParams{Model: "bigram"}, 400, "input", "input"},
		{"max_output_tokens 0", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), MaxOutputTokens: openai.Int(0)}, 400, "max_output_tokens", "max_output_tokens"},
		{"max_output_tokens negative", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), MaxOutputTokens: openai.Int(-1 << 63)}, 400, "max_output_tokens", "max_output_tokens"},
		{"max_output_tokens huge", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), MaxOutputTokens: openai.Int(1<<63 - 1)}, 400, "max_output_tokens", "max_output_tokens"},
		{"temperature", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Temperature: openai.Float(2.5)}, 400, "temperature", "temperature"},
		{"temperature negative", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Temperature: openai.Float(-1)}, 400, "temperature", "temperature"},
		{"top_p", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), TopP: openai.Float(1.5)}, 400, "top_p", "top_p"},
		{"metadata keys", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Metadata: meta}, 400, "metadata", "16"},
		{"metadata value", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Metadata: shared.Metadata{"k": huge}}, 400, "metadata", "512"},
		{"metadata key", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Metadata: shared.Metadata{huge: "v"}}, 400, "metadata", "64"},
		{"tools", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Tools: manyTools}, 400, "tools", "128"},
		// Hosted tools are left out (responses_tools_test.go); custom
		// tools are refused.
		{"custom tool", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Tools: []responses.ToolUnionParam{{OfCustom: &responses.CustomToolParam{Name: "apply_patch"}}}}, 400, "tools[0].type", "'custom' tools"},
		{"10k items", responses.ResponseNewParams{Model: "bigram", Input: items(manyItems...)}, 400, "input", "2048"},
		{"image not of its type", responses.ResponseNewParams{Model: "bigram", Input: items(image)}, 400, "input[0].content[0].image_url", "the data URL says image/png but the data is not an image"},
		{"unknown previous", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), PreviousResponseID: openai.String("resp_nope")}, 400, "previous_response_id", "Previous response with id 'resp_nope' not found."},
		{"bad schema", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Text: responses.ResponseTextConfigParam{
			Format: responses.ResponseFormatTextConfigParamOfJSONSchema("s", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "pattern": "("}}})}},
			400, "text.format.schema", "Invalid schema"},
		{"forced unknown tool", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Tools: []responses.ToolUnionParam{weatherParams()},
			ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "nope"}}}, 400, "tool_choice", "nope"},
		{"background without store", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Background: openai.Bool(true), Store: openai.Bool(false)}, 400, "background", "store"},
		{"effort without thinking", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow}}, 400, "", "does not support thinking"},
		{"effort", responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Reasoning: shared.ReasoningParam{Effort: "extreme"}}, 400, "reasoning.effort", "extreme"},
	} {
		_, err := client.Responses.New(ctx, c.p)
		if err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		t.Run(c.name, func(t *testing.T) { respAPIError(t, err, c.status, c.param, c.contains) })
	}

	// Raw bodies the SDK would not send.
	for _, c := range []struct{ body, param, contains string }{
		{`{"model":"bigram","input":"Hi","max_output_tokens":9223372036854775808}`, "max_output_tokens", "max_output_tokens"},
		{`{"model":"bigram","input":"Hi","temperature":1e309}`, "temperature", "a number"},
		{`{"model":"bigram","input":[{"type":"web_search_call","id":"x"}]}`, "input[0].type", "web_search_call"},
		{`{"model":"bigram","input":[{"role":"user","content":[{"type":"input_video","url":"x"}]}]}`, "input[0].content[0].type", "input_video"},
		{`{"model":"bigram","input":[{"role":"robot","content":"Hi"}]}`, "input[0].role", "robot"},
		{`{"model":"bigram","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"[1]"}]}`, "input[0].arguments", "JSON object"},
		{`{"model":"bigram","input":5}`, "input", "string or an array"},
		{`{"model":"bigram","input":"Hi","tool_choice":{"type":"file_search"}}`, "tool_choice", "tool_choice"},
		{`{"model":"bigram","input":"Hi","text":{"format":{"type":"yaml"}}}`, "text.format.type", "yaml"},
		{`{"model":"bigram","input":"Hi","conversation":"conv_1"}`, "conversation", "previous_response_id"},
		{`{"model":"bigram","input":"Hi","instructions":"` + strings.Repeat("y", 4<<20) + `"}`, "input", "too large"},
		{`{"model":"bigram","input":"` + strings.Repeat("y", 256<<10+1) + `"}`, "input", "too large"},
	} {
		status, _, body := do(t, "POST", ts.URL+"/v1/responses", "", c.body)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		if status != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e.Error.Type != "invalid_request_error" ||
			!strings.Contains(e.Error.Message, c.contains) || (c.param != "" && (e.Error.Param == nil || *e.Error.Param != c.param)) {
			t.Fatalf("%.80s: %d %.300s", c.body, status, body)
		}
	}
	// A stream cannot be replayed.
	if status, _, body := do(t, "GET", ts.URL+"/v1/responses/resp_x?stream=true", "", ""); status != http.StatusBadRequest || !strings.Contains(string(body), `"param":"stream"`) {
		t.Fatalf("GET stream=true: %d %s", status, body)
	}
	// Unknown ids: 404 in OpenAI's shape.
	status, _, body := do(t, "GET", ts.URL+"/v1/responses/resp_nope/input_items", "", "")
	if status != http.StatusNotFound || !strings.Contains(string(body), `"type":"invalid_request_error"`) {
		t.Fatalf("unknown id: %d %s", status, body)
	}

	// Still serving.
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), Temperature: openai.Float(0)})
	if err != nil || resp.OutputText() != testmodels.BigramAnswer {
		t.Fatalf("after the errors: %+v (%v)", resp, err)
	}
}
