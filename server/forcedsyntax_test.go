package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// Gemma 4's calls are its own syntax (<|tool_call>call:NAME{key:<|"|>…<|"|>}
// <tool_call|>, control tokens around it), LFM2's Python calls
// (<|tool_call_start|>[NAME(key="…", …)]<|tool_call_end|>): tool_choice
// "required" or the named function makes the scripted model, which would call
// get_weather for Paris, call with the properties the schema requires
// (an integer in its range it would not write), and "auto" leaves it its own
// call, held to the schema's property names from its call token on.
func TestForcedToolCallOwnSyntax(t *testing.T) {
	testkit.Full(t, "scripted models in the real server")
	for _, f := range []struct {
		template string
		script   func(string) testmodels.FamilyScript
	}{
		{"google-gemma-4-31B-it.jinja", testmodels.Gemma4},
		{"LFM2.5-8B-A1B.jinja", testmodels.LFM25},
	} {
		t.Run(f.template, func(t *testing.T) { forcedOwnSyntax(t, f.template, f.script) })
	}
}

func forcedOwnSyntax(t *testing.T, template string, script func(string) testmodels.FamilyScript) {
	ts, _ := startFamilyServer(t, script(familyTemplate(t, template)))
	req := func(params, choice string) string {
		return `{"model": "family", "temperature": 0, "max_tokens": 300, "tool_choice": ` + choice + `,
			"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": ` + params + `}},
				{"type": "function", "function": {"name": "get_time"}}],
			"messages": [{"role": "user", "content": "What is the weather in Paris?"}]}`
	}
	// (The script writes city Paris, then unit and note: the grammar
	// takes its Paris, refuses unit, and holds it to days 3.)
	const forced = `{"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}, "days": {"type": "integer", "minimum": 3, "maximum": 3}}, "required": ["city", "days"]}`
	for _, choice := range []string{`"required"`, `{"type": "function", "function": {"name": "get_weather"}}`} {
		for _, stream := range []bool{false, true} {
			got, err := openAIChat(t, ts.URL, req(forced, choice), stream)
			if err != nil {
				t.Fatal(err)
			}
			var args any
			if len(got.Calls) == 1 {
				json.Unmarshal([]byte(got.Calls[0].Args), &args)
			}
			if len(got.Calls) != 1 || got.Calls[0].Name != "get_weather" || !reflect.DeepEqual(args, map[string]any{"city": "Paris", "days": float64(3)}) || strings.TrimSpace(got.Content) != "" {
				t.Fatalf("tool_choice %s, stream=%v: %s, want one call get_weather {\"city\": \"Paris\", \"days\": 3}", choice, stream, got)
			}
		}
	}
	// auto: the model's own call (its script's arguments fit this schema).
	const free = `{"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "object"}, "note": {"type": "string"}}, "required": ["city"]}`
	for _, stream := range []bool{false, true} {
		got, err := openAIChat(t, ts.URL, req(free, `"auto"`), stream)
		if err != nil {
			t.Fatal(err)
		}
		var args, want any
		json.Unmarshal([]byte(testmodels.FamilyArguments), &want)
		if len(got.Calls) == 1 {
			json.Unmarshal([]byte(got.Calls[0].Args), &args)
		}
		if len(got.Calls) != 1 || got.Calls[0].Name != "get_weather" || !reflect.DeepEqual(args, want) {
			t.Fatalf("tool_choice auto, stream=%v: %s, want the script's call", stream, got)
		}
	}
}
