package chattemplate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/chattemplate"
)

// Where llama.cpp's Jinja engine (llama-server's) renders what jinja2
// refuses, and real templates rely on it (issue 35's differential): a
// string joined with None or an undefined value (firefunction v2's
// `functions`), a list grown and consumed in place (Kimi K2's queue of
// tool call ids), and an attribute of an undefined value (Command R+'s
// tool signatures).
func TestLlamaServerLeniency(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{{ "a" + none + "b" }}`, "ab"},
		{`{{ "a" + nothing }}`, "a"},
		{`{{ nothing + "b" }}`, "b"},
		{`{{ "a" ~ none }}`, "a"},
		{`{% set x = "s" + "\n" + functions %}[{{ x }}]`, "[s\n]"},
		{`{% set q = namespace(ids=[]) %}{% set _ = q.ids.append("a") %}{% set _ = q.ids.append("b") %}{{ q.ids.pop(0) }}{{ q.ids }}`, "a['b']"},
		{`{% set l = [1, 2, 3] %}{{ l.pop() }}{{ l.pop(-2) }}{{ l }}`, "31[2]"},
		{`{{ [1].append(2) }}`, "None"},
		// An attribute or item of an undefined value is undefined (jinja2
		// raises): Command R+'s json_to_python_type of an object
		// parameter without additionalProperties.
		{`{{ undefined_thing.attr }}|{{ messages[0].content }}|{{ x.y[0].z is defined }}`, "||False"},
		{`{%- macro t(s) %}{% if s.type == "object" %}Dict[str, {{ t(s.additionalProperties) }}]{% else %}Any{% endif %}{% endmacro -%}{{ t({"type": "object"}) }}`, "Dict[str, Any]"},
	} {
		got, err := chattemplate.Render(c.src, chattemplate.Input{})
		if err != nil || got != c.want {
			t.Errorf("Render(%q) = %q, %v; want %q", c.src, got, err, c.want)
		}
	}
	// Still errors: numbers and None, pop of an empty list or past its end.
	for _, src := range []string{`{{ 1 + none }}`, `{{ [].pop() }}`, `{{ [1].pop(3) }}`, `{{ [1].pop("a") }}`} {
		if _, err := chattemplate.Render(src, chattemplate.Input{}); err == nil {
			t.Errorf("Render(%q) succeeded, want an error", src)
		}
	}
	// A list grown without end stops at the limits; one holding itself
	// prints cut short ("[...]") and is no JSON.
	src := `{% set l = [] %}{% for i in range(100000000) %}{% set _ = l.append(i) %}{% endfor %}`
	if _, err := chattemplate.Render(src, chattemplate.Input{}); !errors.Is(err, chattemplate.ErrLimit) {
		t.Errorf("Render(%.60q) = %v, want a limit error", src, err)
	}
	if got, err := chattemplate.Render(`{% set l = [] %}{% set _ = l.append(l) %}{{ l }}`, chattemplate.Input{}); err != nil || len(got) > 1000 || !strings.Contains(got, "[...]") {
		t.Errorf("a list holding itself: %.80q, %v; want its repr cut short with [...]", got, err)
	}
	if _, err := chattemplate.Render(`{% set l = [] %}{% set _ = l.append(l) %}{{ l | tojson }}`, chattemplate.Input{}); err == nil {
		t.Errorf("tojson of a list holding itself succeeded")
	}
}

// StringArguments: tool call arguments as their JSON text.
func TestStringArguments(t *testing.T) {
	in := chattemplate.Input{Messages: []chattemplate.Message{{Role: "assistant", ToolCalls: []chattemplate.ToolCall{{Name: "f", Arguments: []byte(` {"b": 1, "a": "x"} `)}}}}}
	src := `{% for c in messages[0].tool_calls %}{{ c.function.arguments is string }} {{ c.function.arguments }}{% endfor %}`
	if got, err := chattemplate.Render(src, in); err != nil || got != `False {'b': 1, 'a': 'x'}` {
		t.Errorf("object arguments: %q, %v", got, err)
	}
	in.StringArguments = true
	if got, err := chattemplate.Render(src, in); err != nil || got != `True {"b": 1, "a": "x"}` {
		t.Errorf("string arguments: %q, %v", got, err)
	}
}

// The older Gemma 4 templates read a tool's result from the assistant
// turn that called it: the results after a turn with calls, and the
// answer after them, are folded into that turn (tool_responses, the
// call's function by order, the result as JSON where it is JSON), as
// llama-server does; the newer template gets the messages as they are.
func TestGemma4ToolResponses(t *testing.T) {
	src := `{#- '<|tool_call>call:' -#}{% for m in messages %}[{{ m.role }}` +
		`{% if m.tool_calls %} calls={{ m.tool_calls | length }}{% endif %}` +
		`{% for r in m.tool_responses or [] %} {{ r.name }}:{{ r.response is mapping }}:{{ r.response.sky or r.response }}{% endfor %}` +
		`{% if m.content is defined %} content={{ m.content }}{% endif %}` +
		`{% if m.reasoning_content %} thought={{ m.reasoning_content }}{% endif %}]{% endfor %}`
	in := chattemplate.Input{Messages: []chattemplate.Message{
		{Role: "user", Content: "Weather and time?"},
		{Role: "assistant", Thinking: "Two calls.", ToolCalls: []chattemplate.ToolCall{{ID: "a", Name: "get_weather", Arguments: []byte(`{}`)}, {ID: "b", Name: "get_time", Arguments: []byte(`{}`)}}},
		{Role: "tool", ToolCallID: "a", Content: `{"sky": "sunny"}`},
		{Role: "tool", ToolCallID: "b", Content: "14:05"},
		{Role: "assistant", Content: "Sunny, 14:05."},
		{Role: "user", Content: "Thanks"},
	}}
	want := "[user content=Weather and time?][assistant calls=2 get_weather:True:sunny get_time:False:14:05 content=Sunny, 14:05. thought=Two calls.][user content=Thanks]"
	if got, err := chattemplate.Render(src, in); err != nil || got != want {
		t.Errorf("older Gemma 4 template:\n got %q, %v\nwant %q", got, err, want)
	}
	newer := strings.Replace(src, "{#- '<|tool_call>call:' -#}", "{#- '<|tool_call>call:' -#}{#- OpenAI Chat Completions: -#}", 1)
	if got, err := chattemplate.Render(newer, in); err != nil || !strings.Contains(got, "[tool content=14:05]") {
		t.Errorf("newer Gemma 4 template: %q, %v; want the tool messages as sent", got, err)
	}
}
