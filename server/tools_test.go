package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// startToolServer serves the scripted tool-calling model as "script" (its
// Qwen3 template renders tools into a long system prompt: the context is
// larger than startServer's) and the bigram model as "bigram".
func startToolServer(t *testing.T) *testServer {
	t.Helper()
	return serveConfig(t, Config{ModelsDir: testModels(t, "script", "bigram"), Sched: testSched(2, 2048)})
}

const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
	"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`

func ollamaWeatherTool(t *testing.T) ollamaapi.Tool {
	var tool ollamaapi.Tool
	if err := json.Unmarshal([]byte(weatherTool), &tool); err != nil {
		t.Fatal(err)
	}
	return tool
}

// The Ollama client gets a structured tool call with the thinking apart,
// sends the result back and gets the final answer; streamed, no markup
// reaches the content.
func TestOllamaToolCalling(t *testing.T) {
	ts := startToolServer(t)
	ctx := context.Background()
	msgs := []ollamaapi.Message{{Role: "user", Content: "What is the weather in Paris?"}}
	for _, stream := range []bool{false, true} {
		var content, thinking strings.Builder
		var calls []ollamaapi.ToolCall
		err := ts.Client.Chat(ctx, &ollamaapi.ChatRequest{
			Model: "script", Messages: msgs, Tools: []ollamaapi.Tool{ollamaWeatherTool(t)}, Stream: ptr(stream), Options: greedyOpts(40),
		}, func(r ollamaapi.ChatResponse) error {
			if strings.Contains(r.Message.Content, "<") {
				t.Errorf("markup in content chunk %q", r.Message.Content)
			}
			content.WriteString(r.Message.Content)
			thinking.WriteString(r.Message.Thinking)
			calls = append(calls, r.Message.ToolCalls...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if content.String() != "" || thinking.String() != testmodels.ScriptThinking || len(calls) != 1 {
			t.Fatalf("stream %v: content %q thinking %q calls %+v", stream, content.String(), thinking.String(), calls)
		}
		c := calls[0].Function
		var args bytes.Buffer
		if err := json.Compact(&args, c.Arguments); err != nil {
			t.Fatalf("arguments %s: %v", c.Arguments, err)
		}
		if c.Name != testmodels.ScriptTool || args.String() != `{"city":"Paris"}` && args.String() != testmodels.ScriptArguments {
			t.Fatalf("call %s(%s)", c.Name, args.String())
		}
		var m map[string]any
		if json.Unmarshal(c.Arguments, &m); m["city"] != "Paris" {
			t.Fatalf("arguments %s", args.String())
		}
		if stream {
			// The tool result goes back; the model answers from it.
			msgs = append(msgs,
				ollamaapi.Message{Role: "assistant", Thinking: thinking.String(), ToolCalls: calls},
				ollamaapi.Message{Role: "tool", Content: "sunny, 22 °C", ToolName: c.Name})
		}
	}
	var final ollamaapi.ChatResponse
	err := ts.Client.Chat(ctx, &ollamaapi.ChatRequest{
		Model: "script", Messages: msgs, Tools: []ollamaapi.Tool{ollamaWeatherTool(t)}, Stream: ptr(false), Options: greedyOpts(40),
	}, func(r ollamaapi.ChatResponse) error { final = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if final.Message.Content != testmodels.ScriptAnswer || len(final.Message.ToolCalls) != 0 || final.DoneReason != "stop" {
		t.Fatalf("final answer %+v", final.Message)
	}

	// think false: the template switches thinking off; the call comes at
	// once and no thinking is returned.
	var got ollamaapi.ChatResponse
	err = ts.Client.Chat(ctx, &ollamaapi.ChatRequest{
		Model: "script", Messages: msgs[:1], Tools: []ollamaapi.Tool{ollamaWeatherTool(t)}, Stream: ptr(false), Options: greedyOpts(40),
		Think: json.RawMessage("false"),
	}, func(r ollamaapi.ChatResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got.Message.Thinking != "" || got.Message.Content != "" || len(got.Message.ToolCalls) != 1 {
		t.Fatalf("think false: %+v", got.Message)
	}
	// Without tools the call is not parsed: it stays text.
	err = ts.Client.Chat(ctx, &ollamaapi.ChatRequest{Model: "script", Messages: msgs[:1], Stream: ptr(false), Options: greedyOpts(40)},
		func(r ollamaapi.ChatResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got.Message.Content != testmodels.ScriptCall || got.Message.Thinking != testmodels.ScriptThinking || len(got.Message.ToolCalls) != 0 {
		t.Fatalf("no tools: %+v", got.Message)
	}
	// /api/generate splits thinking off too.
	var gen ollamaapi.GenerateResponse
	err = ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "script", Prompt: "Hi", Stream: ptr(true), Options: greedyOpts(40)},
		func(r ollamaapi.GenerateResponse) error {
			gen.Response += r.Response
			gen.Thinking += r.Thinking
			return nil
		})
	if err != nil || gen.Response != testmodels.ScriptCall || gen.Thinking != testmodels.ScriptThinking {
		t.Fatalf("generate: %q thinking %q (%v)", gen.Response, gen.Thinking, err)
	}
	// /api/show lists what the template implies.
	show, err := ts.Client.Show(ctx, &ollamaapi.ShowRequest{Model: "script"})
	if err != nil {
		t.Fatal(err)
	}
	if caps := fmt.Sprint(show.Capabilities); caps != "[completion tools thinking]" {
		t.Fatalf("capabilities %s", caps)
	}
	// A model without thinking refuses think: true, as Ollama does.
	err = ts.Client.Chat(ctx, &ollamaapi.ChatRequest{Model: "bigram", Messages: msgs[:1], Stream: ptr(false), Think: json.RawMessage("true")},
		func(ollamaapi.ChatResponse) error { return nil })
	var se client.StatusError
	if !asStatus(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.Message, "does not support thinking") {
		t.Fatalf("think on a model without thinking: %v", err)
	}
}

// The official OpenAI SDK: a structured call with an id and finish_reason
// "tool_calls", the result sent back as a tool message, the final answer;
// streamed through the SDK's accumulator too.
func TestOpenAIToolCalling(t *testing.T) {
	ts := startToolServer(t)
	client := oaClient(ts)
	ctx := context.Background()
	var params shared.FunctionParameters
	json.Unmarshal([]byte(`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`), &params)
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Description: openai.String("The weather in a city."), Parameters: params,
	})}
	msgs := user("What is the weather in Paris?")
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "script", Messages: msgs, Tools: tools, Temperature: openai.Float(0), MaxTokens: openai.Int(40),
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Content != "" || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("answer %+v", ch)
	}
	if r := ch.Message.JSON.ExtraFields["reasoning_content"].Raw(); r != `"`+testmodels.ScriptThinking+`"` {
		t.Fatalf("reasoning_content %s", r)
	}
	call := ch.Message.ToolCalls[0]
	var args struct{ City string }
	if call.ID == "" || call.Function.Name != "get_weather" || json.Unmarshal([]byte(call.Function.Arguments), &args) != nil || args.City != "Paris" {
		t.Fatalf("call %+v", call)
	}

	// Streamed: the accumulator sees the same call.
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "script", Messages: msgs, Tools: tools, Temperature: openai.Float(0), MaxTokens: openai.Int(40),
	})
	acc := openai.ChatCompletionAccumulator{}
	var finished []openai.FinishedChatCompletionToolCall
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
		for _, c := range chunk.Choices {
			if strings.Contains(c.Delta.Content, "<") {
				t.Errorf("markup in content delta %q", c.Delta.Content)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	sc := acc.Choices[0]
	if sc.FinishReason != "tool_calls" || len(sc.Message.ToolCalls) != 1 || sc.Message.ToolCalls[0].Function.Name != "get_weather" ||
		sc.Message.ToolCalls[0].Function.Arguments != call.Function.Arguments || sc.Message.Content != "" {
		t.Fatalf("streamed: %+v", sc)
	}
	if len(finished) != 1 || finished[0].Name != "get_weather" {
		t.Fatalf("finished tool calls %+v", finished)
	}

	// The result goes back; the answer comes.
	msgs = append(msgs, ch.Message.ToParam(), openai.ToolMessage("sunny, 22 °C", call.ID))
	resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "script", Messages: msgs, Tools: tools, Temperature: openai.Float(0), MaxTokens: openai.Int(40),
	})
	if err != nil {
		t.Fatal(err)
	}
	if ch := resp.Choices[0]; ch.FinishReason != "stop" || ch.Message.Content != testmodels.ScriptAnswer || len(ch.Message.ToolCalls) != 0 {
		t.Fatalf("final answer %+v", ch)
	}

	// tool_choice none: no tools shown, nothing parsed.
	resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "script", Messages: msgs[:1], Tools: tools, Temperature: openai.Float(0), MaxTokens: openai.Int(40),
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ch := resp.Choices[0]; ch.FinishReason != "stop" || ch.Message.Content != testmodels.ScriptCall || len(ch.Message.ToolCalls) != 0 {
		t.Fatalf("tool_choice none: %+v", ch)
	}

	// reasoning_effort none switches thinking off.
	resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "script", Messages: msgs[:1], Tools: tools, Temperature: openai.Float(0), MaxTokens: openai.Int(40),
		ReasoningEffort: "none",
	})
	if err != nil {
		t.Fatal(err)
	}
	if ch := resp.Choices[0]; len(ch.Message.ToolCalls) != 1 || ch.Message.JSON.ExtraFields["reasoning_content"].Valid() {
		t.Fatalf("reasoning_effort none: %+v", ch)
	}
}

// tool_choice "required" and a named function constrain the output with
// a grammar: the bigram model, which never calls tools by itself, writes
// a valid call of the forced function.
func TestOpenAIForcedToolCall(t *testing.T) {
	ts := startToolServer(t)
	client := oaClient(ts)
	ctx := context.Background()
	tool := func(name string) openai.ChatCompletionToolUnionParam {
		var params shared.FunctionParameters
		json.Unmarshal([]byte(`{"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["unit"]}`), &params)
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name, Parameters: params})
	}
	tools := []openai.ChatCompletionToolUnionParam{tool("get_temperature"), tool("get_humidity")}
	for _, c := range []struct {
		choice openai.ChatCompletionToolChoiceOptionUnionParam
		names  []string
	}{
		{openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}, []string{"get_temperature", "get_humidity"}},
		{openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_humidity"}}}, []string{"get_humidity"}},
	} {
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "bigram", Messages: user("Hi"), Tools: tools, ToolChoice: c.choice, Temperature: openai.Float(0), MaxTokens: openai.Int(1000),
		})
		if err != nil {
			t.Fatal(err)
		}
		ch := resp.Choices[0]
		if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) == 0 {
			t.Fatalf("forced call: %+v", ch)
		}
		for _, call := range ch.Message.ToolCalls {
			var args struct{ Unit string }
			json.Unmarshal([]byte(call.Function.Arguments), &args)
			if !contains(c.names, call.Function.Name) || (args.Unit != "celsius" && args.Unit != "fahrenheit") {
				t.Fatalf("forced call %s(%s), want one of %v", call.Function.Name, call.Function.Arguments, c.names)
			}
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Bad tools are 400s in each dialect's shape; a template that fails to
// render is a 500 naming the model and the template's error.
func TestToolAndTemplateErrors(t *testing.T) {
	ts := startToolServer(t)
	ctx := context.Background()
	var params shared.FunctionParameters
	json.Unmarshal([]byte(`{"type": "object", "properties": {"city": {"type": 5}}}`), &params)
	oa := oaClient(ts)
	_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "script", Messages: user("Hi"),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "f", Parameters: params})},
	})
	asAPIError(t, err, http.StatusBadRequest, "", "tools[0].function.parameters")

	var tool ollamaapi.Tool
	json.Unmarshal([]byte(`{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "required": "city"}}}`), &tool)
	err = ts.Client.Chat(ctx, &ollamaapi.ChatRequest{Model: "script", Messages: []ollamaapi.Message{{Role: "user", Content: "Hi"}}, Tools: []ollamaapi.Tool{tool}},
		func(ollamaapi.ChatResponse) error { return nil })
	var se client.StatusError
	if !asStatus(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.Message, "tools[0]") {
		t.Fatalf("invalid tool schema: %v", err)
	}

	// A GGUF whose Jinja template raises (here on any user message
	// holding "Hi"; a template refusing a system role gets it folded into
	// the first turn, as llama-server does): 400 with the model and the
	// template's message, as llama-server answers.
	kvs, tensors := testmodels.Bigram()
	for i := range kvs {
		if kvs[i].Key == "tokenizer.chat_template" {
			kvs[i].Value = `{% for m in messages %}{% if 'Hi' in m.content %}{{ raise_exception('Greetings not supported') }}{% endif %}{{ m.content }}{% endfor %}`
		}
	}
	path := filepath.Join(t.TempDir(), "raises.gguf")
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	srv := New(Config{ModelsDir: dir, Sched: sched.Config{Parallel: 1, NumCtx: 256, KeepAlive: time.Minute, Threads: 1}})
	ts2 := serveForTest(t, srv)
	err = ts2.Client.Chat(ctx, &ollamaapi.ChatRequest{Model: "raises", Stream: ptr(false),
		Messages: []ollamaapi.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "Hi"}}}, func(ollamaapi.ChatResponse) error { return nil })
	if !asStatus(err, &se) || se.StatusCode != http.StatusBadRequest ||
		!strings.Contains(se.Message, `"raises"`) || !strings.Contains(se.Message, "Greetings not supported") {
		t.Fatalf("raising template: %v", err)
	}
}
