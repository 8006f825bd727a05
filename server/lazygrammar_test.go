package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// A call the model starts under tool_choice "auto" keeps to its
// function's schema (a lazy grammar from the family's call token, as
// llama-server's lazy grammar triggers; in the family's own markup,
// Qwen3-Coder's and GLM's key-value parameters too): the scripted models write
// {"city": "Paris", …}, which a schema allowing only "Lyon" and no other
// property refuses; what they write before the call (Qwen3's thinking,
// where a call token would be text) is untouched. "none" shows no tools
// and reads no call; a schema the script keeps gets the script's call.
func TestLazyToolGrammar(t *testing.T) {
	const lyon = `{"type": "object", "properties": {"city": {"type": "string", "enum": ["Lyon"]}}, "required": ["city"], "additionalProperties": false}`
	for _, f := range []struct {
		template  string
		script    func(string) testmodels.FamilyScript
		reasoning string
	}{
		{"Qwen-Qwen3-0.6B.jinja", testmodels.Qwen3, testmodels.FamilyReasoning},
		{"ibm-granite-granite-4.0.jinja", testmodels.Granite4, ""},
		// Key-value parameters, held in the family's own markup.
		{"Qwen3-Coder.jinja", testmodels.Qwen3Coder, ""},
		{"GLM-4.6.jinja", testmodels.GLM46, testmodels.FamilyReasoning},
	} {
		t.Run(f.template, func(t *testing.T) {
			ts, _ := startFamilyServer(t, f.script(familyTemplate(t, f.template)))
			req := func(schema, choice string) string {
				return `{"model": "family", "temperature": 0, "max_tokens": 200, "tool_choice": "` + choice + `",
					"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": ` + schema + `}}],
					"messages": [{"role": "user", "content": "What is the weather in Paris?"}]}`
			}
			for _, stream := range []bool{false, true} {
				got, err := openAIChat(t, ts.URL, req(lyon, "auto"), stream)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Calls) != 1 || got.Calls[0].Name != testmodels.FamilyTool || got.Reasoning != f.reasoning {
					t.Fatalf("stream=%v: %s, want reasoning %q and one call of %s", stream, got, f.reasoning, testmodels.FamilyTool)
				}
				var args any
				if err := json.Unmarshal([]byte(got.Calls[0].Args), &args); err != nil || !reflect.DeepEqual(args, map[string]any{"city": "Lyon"}) {
					t.Fatalf("stream=%v: arguments %s (%v), want {\"city\": \"Lyon\"}", stream, got.Calls[0].Args, err)
				}

				// The script's own arguments where the schema allows them.
				got, err = openAIChat(t, ts.URL, req(weatherSchema, "auto"), stream)
				if err != nil {
					t.Fatal(err)
				}
				var want any
				json.Unmarshal([]byte(testmodels.FamilyArguments), &want)
				args = nil
				if len(got.Calls) == 1 {
					json.Unmarshal([]byte(got.Calls[0].Args), &args)
				}
				if got.Reasoning != f.reasoning || !reflect.DeepEqual(args, want) {
					t.Fatalf("stream=%v, a schema the script keeps: %s, want the script's call", stream, got)
				}

				// none: no tools shown, no call read, no grammar.
				got, err = openAIChat(t, ts.URL, req(lyon, "none"), stream)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Calls) != 0 || strings.Contains(got.Content, "Lyon") {
					t.Fatalf("stream=%v, none: %s", stream, got)
				}
			}
		})
	}
}
