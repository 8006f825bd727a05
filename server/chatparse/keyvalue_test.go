package chatparse

import (
	"encoding/json"
	"strings"
	"testing"
)

// Key-value arguments are typed by the function's parameters, as
// llama-server types them: a property that allows only strings keeps
// its text ("18", "true", "null", "[1]"); others are JSON where their
// text is JSON, else a string; without the schemas, JSON wherever it is
// JSON. DSML's string attribute says it outright.
func TestKeyValueArgumentsTyped(t *testing.T) {
	params := map[string]json.RawMessage{"f": json.RawMessage(`{"type": "object", "properties": {
		"s": {"type": "string"}, "e": {"$ref": "#/$defs/e"}, "n": {"type": "integer"}, "b": {"type": "boolean"},
		"m": {"type": ["string", "number"]}, "o": {"type": "object"}}, "$defs": {"e": {"enum": ["null", "[1]"]}}}`)}
	const typed = `{"s":"18","e":"null","n":18,"b":true,"m":7,"o":{"a":1}}`
	const untyped = `{"s":18,"e":null,"n":18,"b":true,"m":7,"o":{"a":1}}`
	kv := [][2]string{{"s", "18"}, {"e", "null"}, {"n", "18"}, {"b", "true"}, {"m", "7"}, {"o", `{"a": 1}`}}
	write := func(each func(k, v string) string) string {
		var b strings.Builder
		for _, p := range kv {
			b.WriteString(each(p[0], p[1]))
		}
		return b.String()
	}
	for _, tc := range []struct {
		name string
		o    Options
		text string
	}{
		{"qwen3-coder", Options{Format: Hermes, XMLCalls: true}, "<tool_call>\n<function=f>\n" + write(func(k, v string) string { return "<parameter=" + k + ">\n" + v + "\n</parameter>\n" }) + "</function>\n</tool_call>"},
		{"seed", Options{Format: Seed}, "<seed:tool_call>\n<function=f>\n" + write(func(k, v string) string { return "<parameter=" + k + ">" + v + "</parameter>\n" }) + "</function>\n</seed:tool_call>"},
		{"glm", Options{Format: Hermes, XMLCalls: true, ArgKeyCalls: true}, "<tool_call>f\n" + write(func(k, v string) string { return "<arg_key>" + k + "</arg_key>\n<arg_value>" + v + "</arg_value>\n" }) + "</tool_call>"},
		{"minimax-m2", Options{Format: MiniMax}, "<minimax:tool_call>\n<invoke name=\"f\">\n" + write(func(k, v string) string { return `<parameter name="` + k + `">` + v + "</parameter>\n" }) + "</invoke>\n</minimax:tool_call>"},
		{"hy3", Options{Format: Hy3}, "<tool_calls:opensource>\n<tool_call:opensource>f<tool_sep:opensource>\n" + write(func(k, v string) string {
			return "<arg_key:opensource>" + k + "</arg_key:opensource>\n<arg_value:opensource>" + v + "</arg_value:opensource>\n"
		}) + "</tool_call:opensource>\n</tool_calls:opensource>"},
		{"minicpm5", Options{Format: MiniCPM5}, `<function name="f">` + write(func(k, v string) string { return `<param name="` + k + `">` + v + "</param>" }) + "</function>"},
		{"minimax-m3", Options{Format: MiniMaxM3}, m3CallBegin + "\n" + m3NS + `<invoke name="f">` + write(func(k, v string) string { return m3NS + "<" + k + ">" + v + m3NS + "</" + k + ">" }) + m3NS + "</invoke>\n" + m3CallEnd},
	} {
		for _, withSchemas := range []bool{true, false} {
			o := tc.o
			o.Tools = []string{"f"}
			want := untyped
			if withSchemas {
				o.Parameters, want = params, typed
			}
			d, warn := Parse(o, tc.text)
			if len(d.ToolCalls) != 1 || len(warn) > 0 || string(d.ToolCalls[0].Arguments) != want {
				t.Errorf("%s, schemas %v: %q parsed as %+v %v, want %s", tc.name, withSchemas, tc.text, d, warn, want)
			}
		}
	}
	// DSML: the attribute decides, the schema does not.
	o := Options{Format: DSML, Tools: []string{"f"}, Parameters: params}
	text := dsmlCallsBegin + "\n<" + dsml + `invoke name="f">` + "\n<" + dsml + `parameter name="s" string="false">18</` + dsml + "parameter>\n<" + dsml + `parameter name="n" string="true">18</` + dsml + "parameter>\n</" + dsml + "invoke>\n" + dsmlCallsEnd
	if d, warn := Parse(o, text); len(d.ToolCalls) != 1 || string(d.ToolCalls[0].Arguments) != `{"s":18,"n":"18"}` || len(warn) > 0 {
		t.Errorf("DSML parsed as %+v %v", d, warn)
	}
}

// The key-value formats' grammars are well-formed and in the family's
// markup, forced (thinking first or not) and lazy.
func TestKeyValueGrammars(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: []byte(`{"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}`)},
		{Name: "get_time"},
	}
	for _, tc := range []struct {
		o          Options
		forced     string // the root starts with it
		lazy, want string // the lazy grammar's root, a literal it holds
	}{
		{Options{Format: Hermes, XMLCalls: true}, `root ::= ("<tool_call>\n<function=get_weather>\n" `, `root ::= <[7]> tadpole-call ([ \n]{0,2} <[7]> tadpole-call)* [ \n]{0,2}`, `"<parameter=city>\n"`},
		{Options{Format: Hermes, XMLCalls: true, ArgKeyCalls: true}, `root ::= ("<tool_call>get_weather" `, `root ::= <[7]> tadpole-call ([ \n]{0,2} <[7]> tadpole-call)*`, `"<arg_key>city</arg_key>"`},
		{Options{Format: Seed}, `root ::= ("<seed:tool_call>\n<function=get_weather>" `, `root ::= <[7]> tadpole-call`, `"<parameter=city>"`},
		{Options{Format: MiniMax}, `root ::= ("<minimax:tool_call>\n<invoke name=\"get_weather\">" `, `"</minimax:tool_call>"`, `"<parameter name=\"city\">"`},
		{Options{Format: DSML}, `root ::= ("<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">" `, `"</｜DSML｜function_calls>"`, `"true\">"`},
		{Options{Format: DSML, DSMLToolCalls: true}, `root ::= ("<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">" `, `"</｜DSML｜tool_calls>"`, `"false\">"`},
		{Options{Format: Hy3}, `root ::= ("<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>" `, `"</tool_calls:opensource>"`, `"<arg_key:opensource>city</arg_key:opensource>"`},
		{Options{Format: MiniCPM5}, `root ::= ("<function name=\"get_weather\">" `, `root ::= <[7]> tadpole-call`, `"<param name=\"city\">"`},
	} {
		g, err := Grammar(tc.o, tools, "")
		if err != nil {
			t.Fatalf("%+v: %v", tc.o, err)
		}
		gbnfRules(t, g)
		if !strings.HasPrefix(g, tc.forced) || !strings.Contains(g, "get_time") || !strings.Contains(g, tc.want) {
			t.Errorf("%+v forced:\n%s", tc.o, g)
		}
		th := tc.o
		th.Thinking = true
		if g, err = Grammar(th, tools, "get_time"); err != nil || !strings.HasPrefix(g, "root ::= [ \\n]{0,2} tadpole-thinking? ") || strings.Contains(g, "get_weather") {
			t.Errorf("%+v named, thinking (%v):\n%s", tc.o, err, g)
		}
		gbnfRules(t, g)
		g, err = LazyGrammar(tc.o, tools, "<[7]>")
		if err != nil {
			t.Fatalf("%+v lazy: %v", tc.o, err)
		}
		gbnfRules(t, strings.ReplaceAll(g, "<[7]>", `"x"`))
		if !strings.Contains(g, tc.lazy) || !strings.Contains(g, tc.want) {
			t.Errorf("%+v lazy:\n%s", tc.o, g)
		}
	}
	// A schema the converter cannot hold names its function.
	_, err := Grammar(Options{Format: MiniMax}, []Tool{{Name: "bad", Parameters: []byte(`{"type": "object", "properties": {"x": {"type": "integer", "not": {}}}}`)}}, "")
	if err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("unsupported keyword: %v", err)
	}
}
