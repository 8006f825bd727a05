package server

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// The scripted gpt-oss model (llama.cpp's openai-gpt-oss-120b.jinja, the
// harmony tokens) through the four dialects, streamed and not: the
// reasoning, the content and the call (arguments compared as JSON) of
// both turns of the same conversation come out exactly the same way in
// each dialect's own fields (issue 35).
func TestGptOssFourDialects(t *testing.T) {
	ts, _ := startFamilyServer(t, testmodels.GptOss(familyTemplate(t, "openai-gpt-oss-120b.jinja")))
	dialects := []struct {
		name string
		ask  func(t *testing.T, base string, turn int, stream bool) (familyAnswer, error)
	}{
		{"ollama /api/chat", ollamaFamilyChat},
		{"openai chat", func(t *testing.T, base string, turn int, stream bool) (familyAnswer, error) {
			return openAIChat(t, base, openAIFamilyRequests("family")[turn], stream)
		}},
		{"responses", responsesFamily},
		{"anthropic", anthropicFamily},
	}
	var table []string
	for _, d := range dialects {
		for turn := range 2 {
			for _, stream := range []bool{false, true} {
				name := fmt.Sprintf("%s/turn%d/stream=%v", d.name, turn+1, stream)
				t.Run(name, func(t *testing.T) {
					got, err := d.ask(t, ts.URL, turn, stream)
					if err != nil {
						t.Fatal(err)
					}
					table = append(table, fmt.Sprintf("%-42s | %s", name, got))
					if diff := familyTurns[turn].diff(got); diff != "" {
						t.Error(diff)
					}
				})
			}
		}
	}
	t.Logf("gpt-oss through the four dialects (dialect/turn/stream | reasoning | content | calls):\n%s", strings.Join(table, "\n"))
}

// ollamaFamilyChat asks /api/chat, thinking on.
func ollamaFamilyChat(t *testing.T, base string, turn int, stream bool) (familyAnswer, error) {
	t.Helper()
	tools := `[{"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city", "parameters": ` + weatherSchema + `}}]`
	reasoning, _ := json.Marshal(testmodels.FamilyReasoning)
	result, _ := json.Marshal(familyToolResult)
	msgs := `{"role": "user", "content": "What is the weather in Paris?"}`
	if turn == 1 {
		msgs += `, {"role": "assistant", "content": "", "thinking": ` + string(reasoning) + `, "tool_calls": [{"function": {"name": "get_weather", "arguments": ` + testmodels.FamilyArguments + `}}]}` +
			`, {"role": "tool", "tool_name": "get_weather", "content": ` + string(result) + `}`
	}
	body := fmt.Sprintf(`{"model": "family", "think": true, "stream": %v, "options": {"temperature": 0, "num_predict": 200}, "tools": %s, "messages": [%s]}`, stream, tools, msgs)
	code, raw, lines := postFamily(t, base+"/api/chat", body)
	if code != 200 {
		return familyAnswer{}, fmt.Errorf("%d %.400s", code, raw)
	}
	if !stream {
		lines = [][]byte{raw}
	}
	var a familyAnswer
	for _, l := range lines {
		var r struct {
			Message struct {
				Content, Thinking string
				ToolCalls         []struct {
					Function struct {
						Name      string
						Arguments json.RawMessage
					}
				} `json:"tool_calls"`
			}
			Error string
		}
		if err := json.Unmarshal(l, &r); err != nil || r.Error != "" {
			return a, fmt.Errorf("line %s: %v", l, err)
		}
		a.Content += r.Message.Content
		a.Reasoning += r.Message.Thinking
		for _, c := range r.Message.ToolCalls {
			a.Calls = append(a.Calls, familyCall{c.Function.Name, string(c.Function.Arguments)})
		}
	}
	return a, nil
}

// responsesFamily asks /v1/responses; streamed, the answer is put
// together from the deltas (and checked against response.completed).
func responsesFamily(t *testing.T, base string, turn int, stream bool) (familyAnswer, error) {
	t.Helper()
	tools := `[{"type": "function", "name": "get_weather", "description": "Get the weather in a city", "parameters": ` + weatherSchema + `}]`
	args, _ := json.Marshal(testmodels.FamilyArguments)
	result, _ := json.Marshal(familyToolResult)
	input := `{"role": "user", "content": "What is the weather in Paris?"}`
	if turn == 1 {
		input += `, {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": ` + string(args) + `}` +
			`, {"type": "function_call_output", "call_id": "call_1", "output": ` + string(result) + `}`
	}
	body := fmt.Sprintf(`{"model": "family", "store": false, "stream": %v, "temperature": 0, "max_output_tokens": 200, "reasoning": {"effort": "medium"}, "tools": %s, "input": [%s]}`, stream, tools, input)
	code, raw, events := postFamily(t, base+"/v1/responses", body)
	if code != 200 {
		return familyAnswer{}, fmt.Errorf("%d %.400s", code, raw)
	}
	type item struct {
		Type, Name, Arguments string
		Content               []struct{ Type, Text string }
	}
	fromItems := func(items []item) familyAnswer {
		var a familyAnswer
		for _, it := range items {
			for _, c := range it.Content {
				switch it.Type {
				case "reasoning":
					a.Reasoning += c.Text
				case "message":
					a.Content += c.Text
				}
			}
			if it.Type == "function_call" {
				a.Calls = append(a.Calls, familyCall{it.Name, it.Arguments})
			}
		}
		return a
	}
	if !stream {
		var r struct{ Output []item }
		if err := json.Unmarshal(raw, &r); err != nil {
			return familyAnswer{}, fmt.Errorf("not a response: %.400s", raw)
		}
		return fromItems(r.Output), nil
	}
	var a, completed familyAnswer
	done := false
	for _, ev := range events {
		var e struct {
			Type, Delta, Name, Arguments string
			Response                     struct{ Output []item }
		}
		if err := json.Unmarshal(ev, &e); err != nil {
			return a, fmt.Errorf("event %s: %v", ev, err)
		}
		switch e.Type {
		case "response.reasoning_text.delta":
			a.Reasoning += e.Delta
		case "response.output_text.delta":
			a.Content += e.Delta
		case "response.function_call_arguments.done":
			a.Calls = append(a.Calls, familyCall{e.Name, e.Arguments})
		case "response.completed":
			completed, done = fromItems(e.Response.Output), true
		}
	}
	if !done {
		return a, fmt.Errorf("no response.completed event")
	}
	if d := completed.diff(a); d != "" {
		return a, fmt.Errorf("the deltas and response.completed differ: %s", d)
	}
	return a, nil
}

// anthropicFamily asks /v1/messages, thinking on; streamed, the answer
// is put together from the content blocks' deltas.
func anthropicFamily(t *testing.T, base string, turn int, stream bool) (familyAnswer, error) {
	t.Helper()
	tools := `[{"name": "get_weather", "description": "Get the weather in a city", "input_schema": ` + weatherSchema + `}]`
	result, _ := json.Marshal(familyToolResult)
	msgs := `{"role": "user", "content": "What is the weather in Paris?"}`
	if turn == 1 {
		msgs += `, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": ` + testmodels.FamilyArguments + `}]}` +
			`, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": ` + string(result) + `}]}`
	}
	body := fmt.Sprintf(`{"model": "family", "max_tokens": 2048, "stream": %v, "temperature": 0, "thinking": {"type": "enabled", "budget_tokens": 1024}, "tools": %s, "messages": [%s]}`, stream, tools, msgs)
	code, raw, events := postFamily(t, base+"/v1/messages", body)
	if code != 200 {
		return familyAnswer{}, fmt.Errorf("%d %.400s", code, raw)
	}
	type block struct {
		Type, Text, Thinking, Name string
		Input                      json.RawMessage
	}
	var a familyAnswer
	if !stream {
		var r struct{ Content []block }
		if err := json.Unmarshal(raw, &r); err != nil {
			return a, fmt.Errorf("not a message: %.400s", raw)
		}
		for _, b := range r.Content {
			switch b.Type {
			case "thinking":
				a.Reasoning += b.Thinking
			case "text":
				a.Content += b.Text
			case "tool_use":
				a.Calls = append(a.Calls, familyCall{b.Name, string(b.Input)})
			}
		}
		return a, nil
	}
	for _, ev := range events {
		var e struct {
			Type         string
			Index        int
			ContentBlock block `json:"content_block"`
			Delta        struct {
				Type, Text, Thinking string
				PartialJSON          string `json:"partial_json"`
			}
		}
		if err := json.Unmarshal(ev, &e); err != nil {
			return a, fmt.Errorf("event %s: %v", ev, err)
		}
		switch {
		case e.Type == "content_block_start" && e.ContentBlock.Type == "tool_use":
			a.Calls = append(a.Calls, familyCall{Name: e.ContentBlock.Name})
		case e.Type == "content_block_delta" && e.Delta.Type == "thinking_delta":
			a.Reasoning += e.Delta.Thinking
		case e.Type == "content_block_delta" && e.Delta.Type == "text_delta":
			a.Content += e.Delta.Text
		case e.Type == "content_block_delta" && e.Delta.Type == "input_json_delta":
			if len(a.Calls) == 0 {
				return a, fmt.Errorf("input_json_delta before a tool_use block")
			}
			a.Calls[len(a.Calls)-1].Args += e.Delta.PartialJSON
		}
	}
	return a, nil
}

// Reasoning effort reaches gpt-oss's system message ("Reasoning: LEVEL")
// from every dialect's own field: OpenAI's reasoning_effort (the
// rendered prompt, through /apply-template), Ollama's think level and
// Responses' reasoning.effort (the prompt's token count, which must move
// from the default's exactly as the rendered prompts' do). Ollama's think
// "max" is refused with a 400 naming the levels on gpt-oss, whose
// template has no "max", and reaches DeepSeek V4's, which has.
func TestGptOssReasoningEffort(t *testing.T) {
	dir := t.TempDir()
	if err := testmodels.WriteFamilyScript(filepath.Join(dir, "family.gguf"), testmodels.GptOss(familyTemplate(t, "openai-gpt-oss-120b.jinja"))); err != nil {
		t.Fatal(err)
	}
	kvs, tensors := testmodels.Bigram()
	for i := range kvs {
		switch kvs[i].Key {
		case "tokenizer.chat_template":
			kvs[i].Value = familyTemplate(t, "deepseek-ai-DeepSeek-V4.jinja")
		case "llama.context_length":
			kvs[i].Value = uint32(4096)
		}
	}
	if err := gguf.WriteFile(filepath.Join(dir, "deepseek4.gguf"), kvs, tensors); err != nil {
		t.Fatal(err)
	}
	ts := serveConfig(t, Config{ModelsDir: dir, Sched: testSched(1, 4096)})
	user := `[{"role": "user", "content": "What is the weather in Paris?"}]`

	// The prompts as rendered for each level, and their token counts.
	prompt := func(effort string) (string, int) {
		t.Helper()
		field := ""
		if effort != "" {
			field = `, "reasoning_effort": "` + effort + `"`
		}
		var p struct{ Prompt string }
		if code, b := postUtil(t, ts.URL+"/apply-template", `{"model": "family", "messages": `+user+field+`}`, &p); code != 200 {
			t.Fatalf("apply-template %s: %d %s", effort, code, b)
		}
		content, _ := json.Marshal(p.Prompt)
		var toks struct{ Tokens []int }
		if code, b := postUtil(t, ts.URL+"/tokenize", `{"model": "family", "content": `+string(content)+`}`, &toks); code != 200 {
			t.Fatalf("tokenize: %d %s", code, b)
		}
		return p.Prompt, len(toks.Tokens)
	}
	counts := map[string]int{}
	for _, e := range []string{"", "low", "medium", "high"} {
		text, n := prompt(e)
		want := e
		if e == "" {
			want = "medium" // the template's default
		}
		if !strings.Contains(text, "Reasoning: "+want+"\n\n") {
			t.Errorf("reasoning_effort %q: the system message has no %q: %.400q", e, "Reasoning: "+want, text)
		}
		counts[e] = n
	}
	if counts["low"] == counts[""] {
		t.Fatalf("the low and default prompts tokenize to the same length (%d): the counts below cannot tell them apart", counts[""])
	}

	// Ollama's prompt_eval_count leaves out the tokens the prompt cache
	// held, so each level is counted on a server of its own.
	ollamaCount := func(think string) (int, int, string) {
		t.Helper()
		fresh := serveConfig(t, Config{ModelsDir: dir, Sched: testSched(1, 4096)})
		code, raw, _ := postFamily(t, fresh.URL+"/api/chat", `{"model": "family", "stream": false, "think": `+think+`, "options": {"temperature": 0, "num_predict": 1}, "messages": `+user+`}`)
		var r struct {
			PromptEvalCount int `json:"prompt_eval_count"`
			Error           string
		}
		json.Unmarshal(raw, &r)
		return code, r.PromptEvalCount, r.Error
	}
	responsesCount := func(effort string) int {
		t.Helper()
		code, raw, _ := postFamily(t, ts.URL+"/v1/responses", `{"model": "family", "store": false, "max_output_tokens": 1, "temperature": 0, "reasoning": {"effort": "`+effort+`"}, "input": "What is the weather in Paris?"}`)
		var r struct {
			Usage struct {
				InputTokens int `json:"input_tokens"`
			}
		}
		if code != 200 || json.Unmarshal(raw, &r) != nil {
			t.Fatalf("responses effort %s: %d %s", effort, code, raw)
		}
		return r.Usage.InputTokens
	}
	_, base, _ := ollamaCount("true")
	baseR := responsesCount("medium")
	var table []string
	for _, e := range []string{"low", "medium", "high"} {
		code, n, msg := ollamaCount(`"` + e + `"`)
		if code != 200 || n-base != counts[e]-counts[""] {
			t.Errorf("ollama think %q: %d %s, %d prompt tokens (think true: %d); the rendered prompts differ by %d", e, code, msg, n, base, counts[e]-counts[""])
		}
		r := responsesCount(e)
		if r-baseR != counts[e]-counts[""] {
			t.Errorf("responses reasoning.effort %q: %d input tokens (medium: %d); the rendered prompts differ by %d", e, r, baseR, counts[e]-counts[""])
		}
		table = append(table, fmt.Sprintf("%-6s | apply-template %d tokens | ollama think %d | responses %d", e, counts[e], n, r))
	}
	t.Logf("gpt-oss reasoning effort (level | rendered prompt | prompt tokens as each dialect counted them):\n%s", strings.Join(table, "\n"))

	code, _, msg := ollamaCount(`"max"`)
	if code != 400 || !strings.Contains(msg, `"max"`) || !strings.Contains(msg, `"low", "medium" or "high"`) {
		t.Errorf(`think "max" on gpt-oss: %d %q, want a 400 naming the levels`, code, msg)
	}
	// DeepSeek V4's template writes its reasoning_effort_max preamble
	// for "max" only.
	ds := func(think string) int {
		t.Helper()
		fresh := serveConfig(t, Config{ModelsDir: dir, Sched: testSched(1, 4096)})
		code, raw, _ := postFamily(t, fresh.URL+"/api/chat", `{"model": "deepseek4", "stream": false, "think": `+think+`, "options": {"temperature": 0, "num_predict": 1}, "messages": `+user+`}`)
		var r struct {
			PromptEvalCount int `json:"prompt_eval_count"`
		}
		if code != 200 || json.Unmarshal(raw, &r) != nil {
			t.Fatalf("deepseek4 think %s: %d %s", think, code, raw)
		}
		return r.PromptEvalCount
	}
	if hi, max := ds(`"high"`), ds(`"max"`); max <= hi+10 {
		t.Errorf(`DeepSeek V4, think "max": %d prompt tokens, "high": %d; want the max preamble`, max, hi)
	}
}
