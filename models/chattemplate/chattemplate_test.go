package chattemplate_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/tadpole-llm/tadpole/models/chattemplate"
)

func render(t *testing.T, src string, in chattemplate.Input) string {
	t.Helper()
	out, err := chattemplate.Render(src, in)
	if err != nil {
		t.Fatalf("render %q: %v", src, err)
	}
	return out
}

func TestRaiseException(t *testing.T) {
	_, err := chattemplate.Render(`{% if messages|length == 0 %}{{ raise_exception("No messages, " ~ 'please!') }}{% endif %}`, chattemplate.Input{})
	var ex *chattemplate.Exception
	if !errors.As(err, &ex) || ex.Message != "No messages, please!" {
		t.Fatalf("got %v, want the template's exception", err)
	}
	if !strings.Contains(err.Error(), "No messages, please!") {
		t.Fatalf("error %q does not carry the message", err)
	}
}

func TestStrftimeNow(t *testing.T) {
	now := func() time.Time { return time.Date(2024, 7, 6, 15, 4, 5, 0, time.UTC) }
	got := render(t, `{{ strftime_now("%d %b %Y") }}|{{ strftime_now("%B %-d, %Y %H:%M:%S %A %j %p %%") }}`, chattemplate.Input{Now: now})
	if want := "06 Jul 2024|July 6, 2024 15:04:05 Saturday 188 PM %"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, src := range []string{
		`{% if x %}never closed`,
		`{{ 1 + }}`,
		`{% endfor %}`,
		`{% unknowntag %}`,
		`{{ "unterminated }}`,
		`{# comment`,
		`{% for in x %}{% endfor %}`,
	} {
		_, err := chattemplate.Parse(src)
		var se *chattemplate.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a SyntaxError", src, err)
		}
	}
}

func TestRuntimeErrors(t *testing.T) {
	for _, src := range []string{
		`{{ "a" + 1 }}`,
		`{{ 1 // 0 }}`,
		`{{ [1]|tojson(indent="x")|int + none }}`,
		`{% set x = 1 %}{% set x.y = 2 %}`,
		`{{ [].extend([1]) }}`,
	} {
		if _, err := chattemplate.Render(src, chattemplate.Input{}); err == nil {
			t.Errorf("Render(%q) succeeded, want an error", src)
		}
	}
}

// Hostile templates end with an error, quickly, instead of hanging or
// crashing the server.
func TestHostileTemplates(t *testing.T) {
	testkit.Full(t, "template bombs run to their budgets")
	for _, src := range []string{
		`{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}`,
		`{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`,
		`{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}`,
		`{% set l = range(1000)|list %}{% for a in l %}{% for b in l %}{% for c in l %}{% endfor %}{% endfor %}{% endfor %}`,
		`{{ "x" * 1000000000000 }}`,
		`{{ range(10000000000) }}`,
		`{% set ns = namespace(s="ab") %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}`,
		`{% for i in range(2000000) %}{{ "0123456789" }}{% endfor %}`,
		`{% set ns = namespace() %}{% set ns.a = ns %}{% set ns.b = ns %}{{ ns }}`,
	} {
		_, err := chattemplate.Render(src, chattemplate.Input{})
		var le *chattemplate.LimitError
		if !errors.Is(err, chattemplate.ErrLimit) || !errors.As(err, &le) {
			t.Errorf("Render(%.60q) = %v, want a LimitError", src, err)
			continue
		}
		// Bounded by the work done, not by time (a busy machine is
		// slow, not wrong): at most one step, one string and one write
		// past the limits (2 million steps, 256 MiB built, 16 MiB out).
		if le.Steps > 2_000_001 || le.Built > 256<<20+16<<20 || le.Output > 16<<20+16<<20 {
			t.Errorf("Render(%.60q) stopped after %d steps, %d bytes built, %d bytes out", src, le.Steps, le.Built, le.Output)
		}
	}
	cyclic := `{% set ns = namespace() %}{% set ns.a = ns %}{% set ns.b = ns %}{{ ns|tojson }}`
	if _, err := chattemplate.Render(cyclic, chattemplate.Input{}); err == nil || !strings.Contains(err.Error(), "circular") {
		t.Errorf("Render(%q) = %v, want a circular reference error", cyclic, err)
	}
	deep := "{{ " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000) + " }}"
	if _, err := chattemplate.Parse(deep); err == nil {
		t.Error("deeply nested expression parsed")
	}
}

func TestToJSONKeyOrder(t *testing.T) {
	in := chattemplate.Input{
		Tools: []json.RawMessage{json.RawMessage(`{"zeta": 1, "alpha": {"b": [1, 2.5, true, null], "a": "ü\"<>\n"}, "mid": {}}`)},
		Messages: []chattemplate.Message{{Role: "assistant", ToolCalls: []chattemplate.ToolCall{{
			Name: "f", Arguments: json.RawMessage(`{"z": 1, "a": 2}`),
		}}}},
	}
	got := render(t, `{{ tools[0]|tojson }}|{% for k, v in tools[0].items() %}{{ k }},{% endfor %}|{{ messages[0].tool_calls[0].function.arguments|tojson }}|{{ tools[0].alpha|tojson(indent=2) }}`, in)
	want := `{"zeta": 1, "alpha": {"b": [1, 2.5, true, null], "a": "ü\"<>\n"}, "mid": {}}|zeta,alpha,mid,|{"z": 1, "a": 2}|{
  "b": [
    1,
    2.5,
    true,
    null
  ],
  "a": "ü\"<>\n"
}`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestMessagesAndVariables(t *testing.T) {
	in := chattemplate.Input{
		Messages: []chattemplate.Message{
			{Role: "assistant", Content: "", Thinking: "hmm", ToolCalls: []chattemplate.ToolCall{{ID: "c1", Name: "f", Arguments: json.RawMessage(`{"x": 1}`)}}},
			{Role: "tool", Content: "42", ToolCallID: "c1", ToolName: "f"},
			{Role: "user", Content: "hi"},
		},
		Vars: map[string]any{"enable_thinking": true, "reasoning_effort": "low", "messages": "ignored"},
	}
	got := render(t, `{{ messages[0] }}|{{ messages[1] }}|{{ messages[2] }}|{{ tools is defined }}|{{ enable_thinking }}|{{ reasoning_effort }}|{{ bos_token is defined }}`, in)
	want := `{'role': 'assistant', 'content': '', 'reasoning_content': 'hmm', 'thinking': 'hmm', 'tool_calls': [{'id': 'c1', 'type': 'function', 'function': {'name': 'f', 'arguments': {'x': 1}}}]}` +
		`|{'role': 'tool', 'content': '42', 'tool_call_id': 'c1', 'name': 'f'}|{'role': 'user', 'content': 'hi'}|False|True|low|True`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	in.Tools = []json.RawMessage{}
	if got := render(t, `{{ tools is defined }} {{ tools is not none }} {{ tools|length }}`, in); got != "True True 0" {
		t.Fatalf("empty tools: %q", got)
	}
	in.Tools = []json.RawMessage{json.RawMessage(`{bad`)}
	if _, err := chattemplate.Render(`x`, in); err == nil {
		t.Fatal("invalid tool JSON accepted")
	}
}

// Jinja semantics the chat templates rely on, with the results Python's
// jinja2 gives under transformers' settings.
func TestJinjaSemantics(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		// trim_blocks and lstrip_blocks, whitespace control
		{"a\n  {% if true %}\n  b\n  {% endif %}\nc", "a\n  b\nc"},
		{"a  {%- if true -%}  b  {%- endif -%}  c", "abc"},
		{"x {{- ' y ' -}} z", "x y z"},
		{"{% if true %}  x{% endif %}\n", "  x"},
		{"a\n  {{ 1 }}\n", "a\n  1"},
		{"a\n  {#- c #}\nb", "ab"},
		{"{% raw %}{{ x }}{% endraw %}", "{{ x }}"},
		// values print as Python does
		{"{{ none }} {{ true }} {{ 1.0 }} {{ 1e-5 }} {{ [1, 'a', none] }} {{ {'k': false} }} {{ undefined_name }}.", "None True 1.0 1e-05 [1, 'a', None] {'k': False} ."},
		{"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 'a' ~ 1 }}", "3 -4 1 2 3.5 1024 a1"},
		// loops and loop controls
		{"{% for x in 'abc' %}{{ loop.index0 }}{{ x }}{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}{% endfor %}", "0aF1b2cL"},
		{"{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", "0134"},
		{"{% for x in [] %}a{% else %}empty{% endfor %}", "empty"},
		{"{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.length }}{% endfor %}", "2242"},
		{"{% for k, v in {'b': 1, 'a': 2}.items() %}{{ k }}={{ v }};{% endfor %}", "b=1;a=2;"},
		{"{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}", "1"},
		{"{% set ns = namespace(x=1) %}{% for i in [1] %}{% set ns.x = 2 %}{% endfor %}{{ ns.x }}", "2"},
		// slicing
		{"{{ [1,2,3,4][1:] }} {{ [1,2,3][::-1] }} {{ 'hello'[1:-1] }} {{ 'abc'[-1] }}", "[2, 3, 4] [3, 2, 1] ell c"},
		// string methods
		{"{{ '  a b  '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'ab'.startswith('a') }}{{ 'ab'.endswith(('x', 'b')) }}|{{ 'hello world'.title() }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}",
			"a b|axx|['a', 'b', '', 'c']|['a', 'b']|TrueTrue|Hello World|bba|ABab"},
		// dict methods and tests
		{"{{ {'a': 1}.get('a') }}{{ {'a': 1}.get('b', 5) }}{{ {'a': 1}.keys()|list }}|{{ x is defined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 1 is string }}",
			"15['a']|FalseTrueTrueTrueTrueFalse"},
		// filters
		{"{{ '  x  '|trim }}|{{ [1,2]|length }}|{{ ['a','b']|join(', ') }}|{{ 'ab'|list }}|{{ [1,2,3]|first }}{{ [1,2,3]|last }}|{{ x|default('d') }}|{{ 5|string ~ '!' }}|{{ {'a': 1}|items|list }}|{{ 'x'|safe }}",
			"x|2|a, b|['a', 'b']|13|d|5!|[['a', 1]]|x"},
		{"{{ [{'r': 'u', 'n': 1}, {'r': 'a', 'n': 2}]|selectattr('r', 'equalto', 'u')|map(attribute='n')|list }}{{ [{'r': 'u'}, {'r': 'a'}]|rejectattr('r', 'eq', 'u')|list }}",
			"[1][{'r': 'a'}]"},
		{"{{ 'a\nb'|indent(2) }}|{{ 'a\nb'|indent(2, true) }}", "a\n  b|  a\n  b"},
		// macros and conditional expressions
		{"{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b='c') }}", "[1B][2c]"},
		{"{{ 'y' if 1 > 2 else 'n' }}{{ 'y' if true }}{{ 1 in [1] }}{{ 'a' not in 'bc' }}{{ not true or false and true }}", "nyTrueTrueFalse"},
		// Markup: a string added to safe text is escaped (jinja2's Markup)
		{`{{ "<b>"|safe + "<i>" }}`, "<b>&lt;i&gt;"},
	} {
		if got := render(t, c.src, chattemplate.Input{}); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.src, got, c.want)
		}
	}
}

// A panic inside the engine becomes an error; none escapes.
func TestNoPanics(t *testing.T) {
	for _, src := range []string{
		`{{ [][0] }}{{ ''[5] }}{{ {}['x'] }}{{ [1][1:0:-1] }}{{ 'abc'[::-2] }}{{ range(5)[10:] }}`,
		`{{ (1).x }}{{ none.x }}{{ none['x'] }}{{ 1.5|int }}{{ 'x'|int }}{{ none|length if false }}`,
		`{{ loop }}{{ varargs }}{% for x in [1] %}{{ loop.cycle('a','b') }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.changed(1) }}{% endfor %}`,
	} {
		if _, err := chattemplate.Render(src, chattemplate.Input{}); err != nil {
			t.Errorf("Render(%q): %v", src, err)
		}
	}
}
