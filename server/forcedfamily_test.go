package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// tool_choice "required" or a named function on the families whose
// calls carry key-value parameters forces a call in the family's own
// markup (Qwen 3.5's <function=…><parameter=…>, GLM's <arg_key>,
// MiniMax M2's <invoke>, Seed-OSS's <seed:tool_call>): the scripted
// models, which would write the city Paris, call a declared function
// with the only values the schema allows, and a string property whose
// value looks like a number comes back a string, as llama-server types
// it. A schema the
// grammar cannot hold is a 400 naming the function.
func TestForcedToolCallFamilyMarkup(t *testing.T) {
	const schema = `{"type": "object", "properties": {"city": {"type": "string", "enum": ["Lyon"]}, "code": {"enum": ["18"]}}, "required": ["city", "code"], "additionalProperties": false}`
	for _, f := range []scriptedFamily{
		{template: "Qwen3.5-4B.jinja", script: testmodels.Qwen35},
		{template: "GLM-4.6.jinja", script: testmodels.GLM46},
		{template: "MiniMax-M2.jinja", script: testmodels.MiniMaxM2},
		{template: "ByteDance-Seed-OSS.jinja", script: testmodels.SeedOSS},
	} {
		t.Run(f.template, func(t *testing.T) {
			ts, _ := startFamilyServer(t, f.script(familyTemplate(t, f.template)))
			req := func(params, choice string) string {
				return `{"model": "family", "temperature": 0, "max_tokens": 300, "tool_choice": ` + choice + `,
					"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": ` + params + `}},
						{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}],
					"messages": [{"role": "user", "content": "What is the weather in Paris?"}]}`
			}
			for _, choice := range []string{`"required"`, `{"type": "function", "function": {"name": "get_weather"}}`} {
				for _, stream := range []bool{false, true} {
					if stream && choice != `"required"` {
						continue // (one grammar either way: streamed once)
					}
					got, err := openAIChat(t, ts.URL, req(schema, choice), stream)
					if err != nil {
						t.Fatal(err)
					}
					var args any
					if len(got.Calls) == 1 {
						json.Unmarshal([]byte(got.Calls[0].Args), &args)
					}
					// required: either function (the model picks); named: get_weather.
					ok := len(got.Calls) == 1 && strings.TrimSpace(got.Content) == "" &&
						(got.Calls[0].Name == "get_weather" && reflect.DeepEqual(args, map[string]any{"city": "Lyon", "code": "18"}) ||
							choice == `"required"` && got.Calls[0].Name == "get_time" && reflect.DeepEqual(args, map[string]any{}))
					if !ok {
						t.Fatalf("tool_choice %s, stream=%v: %s, want one call get_weather {\"city\": \"Lyon\", \"code\": \"18\"} (or, required, get_time {})", choice, stream, got)
					}
				}
			}
			_, err := openAIChat(t, ts.URL, req(`{"type": "object", "properties": {"x": {"type": "integer", "not": {}}}}`, `"required"`), false)
			if err == nil || !strings.HasPrefix(err.Error(), "400 ") || !strings.Contains(err.Error(), "get_weather") {
				t.Fatalf("a schema beyond the grammar: %v, want a 400 naming get_weather", err)
			}
		})
	}
}

// The own-syntax forced grammars of this round's families (Kimi K3's
// typed arguments, MiniMax M3's elements, Mistral Small 3.2's
// [CALL_ID], Command R+'s Action block) built from the worst property
// names a client can send reach llama.cpp's grammar parser through a
// running server: each request is answered, never an abort, and the
// server answers a plain request after them. (The long name is 1,000
// bytes: the tools' text must fit the scripted models' 4,096-token
// context, or the request is a 400 before any grammar is built.)
func TestForcedWorstNamesOwnSyntax(t *testing.T) {
	worst := []string{`"`, `\`, "a\nb", "\x00", "\xff\xfe", strings.Repeat("k", 1000), "]<]minimax[>[</x>", "<|close|>argument<|sep|>",
		`" type="number"<|sep|>`, "[ARGS]", "```", "]```", "</think>", "<|open|>", "{", "}"}
	props := map[string]any{}
	var required []string
	for i, k := range worst {
		props[k] = map[string]any{"type": []string{"string", "integer", "boolean", "object"}[i%4]}
		if i%2 == 0 {
			required = append(required, k)
		}
	}
	params, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []scriptedFamily{
		{template: "Kimi-K3.jinja", script: testmodels.KimiK3},
		{template: "MiniMax-M3.jinja", script: testmodels.MiniMaxM3},
		{template: "Mistral-Small-3.2-24B-Instruct-2506.jinja", script: testmodels.MistralSmall32},
		{template: "CohereForAI-c4ai-command-r-plus-tool_use.jinja", script: testmodels.CommandRPlus},
	} {
		t.Run(f.template, func(t *testing.T) {
			ts, _ := startFamilyServer(t, f.script(familyTemplate(t, f.template)))
			for _, choice := range []string{`"required"`, `"auto"`} {
				body := `{"model": "family", "temperature": 0.8, "seed": 1, "max_tokens": 24, "tool_choice": ` + choice + `,
					"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": ` + string(params) + `}}],
					"messages": [{"role": "user", "content": "What is the weather in Paris?"}]}`
				if _, err := openAIChat(t, ts.URL, body, true); err != nil {
					t.Fatalf("tool_choice %s: %v, want an answer", choice, err)
				}
			}
			plain := `{"model": "family", "max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]}`
			if _, err := openAIChat(t, ts.URL, plain, false); err != nil {
				t.Fatalf("after the worst names: %v", err)
			}
		})
	}
}
