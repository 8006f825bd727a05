package chatparse

import (
	"strings"
	"testing"
)

func TestGrammar(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: []byte(`{"type": "object", "properties": {"city": {"$ref": "#/$defs/city"}}, "required": ["city"], "$defs": {"city": {"type": "string", "maxLength": 20}}}`)},
		{Name: "get_time"},
	}
	for f, prefix := range map[Format]string{
		Hermes:   "\ntadpole-call ::= \"<tool_call>\" [ \\n]{0,2} tadpole-object [ \\n]{0,2} \"</tool_call>\"\n",
		Mistral:  "\ntadpole-call ::= \"[TOOL_CALLS]\" [ \\n]{0,2} \"[\" [ \\n]{0,2} [ ]{0,8} tadpole-object [ \\n]{0,2} \"]\"\n",
		CommandR: "\ntadpole-call ::= \"<|START_ACTION|>\" [ \\n]{0,2} \"[\" [ \\n]{0,2} [ ]{0,8} tadpole-object [ \\n]{0,2} \"]<|END_ACTION|>\"\n",
		Generic:  "root ::= root-2", Llama3: "root ::= root-2",
	} {
		g, err := Grammar(Options{Format: f}, tools, "")
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		if !strings.Contains(g, prefix) || !strings.Contains(g, `get-weather`) && !strings.Contains(g, `\"get_weather\"`) {
			t.Errorf("%v:\n%s", f, g)
		}
	}
	// Only the named function; thinking may come first.
	g, err := Grammar(Options{Format: Hermes, Thinking: true}, tools, "get_time")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(g, "get_weather") || !strings.HasPrefix(g, "root ::= [ \\n]{0,2} tadpole-thinking? ") {
		t.Fatalf("named, thinking:\n%s", g)
	}
	if _, err := Grammar(Options{}, tools, "nope"); err == nil {
		t.Fatal("an unknown forced function")
	}
	if _, err := Grammar(Options{}, []Tool{{Name: "f", Parameters: []byte(`{"not": {"type": "string"}}`)}}, ""); err == nil || !strings.Contains(err.Error(), `"f"`) {
		t.Fatalf("unsupported keyword: %v", err)
	}
}

// gbnfRules checks a grammar's text structurally: one rule per line,
// each defined once, every rule a body refers to defined, root among
// them.
func gbnfRules(t *testing.T, g string) {
	t.Helper()
	defined := map[string]bool{}
	var bodies []string
	for _, line := range strings.Split(strings.TrimSpace(g), "\n") {
		name, body, ok := strings.Cut(line, " ::= ")
		if !ok || defined[name] {
			t.Fatalf("line %q:\n%s", line, g)
		}
		defined[name] = true
		bodies = append(bodies, body)
	}
	if !defined["root"] {
		t.Fatalf("no root:\n%s", g)
	}
	for _, b := range bodies {
		for i := 0; i < len(b); i++ {
			switch c := b[i]; {
			case c == '"' || c == '[':
				end := byte('"')
				if c == '[' {
					end = ']'
				}
				for i++; i < len(b) && b[i] != end; i++ {
					if b[i] == '\\' {
						i++
					}
				}
			case c == '{':
				i += strings.IndexByte(b[i:], '}')
			case c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
				j := i
				for j < len(b) && (b[j] == '-' || b[j] >= 'a' && b[j] <= 'z' || b[j] >= 'A' && b[j] <= 'Z' || b[j] >= '0' && b[j] <= '9') {
					j++
				}
				if !defined[b[i:j]] {
					t.Fatalf("rule %q not defined:\n%s", b[i:j], g)
				}
				i = j - 1
			}
		}
	}
}

func TestGrammarRules(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: []byte(`{"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}`)},
		{Name: "get_time", Parameters: []byte(`null`)},
		{Name: "tree", Parameters: []byte(`{"type": "object", "properties": {"node": {"$ref": "#/definitions/node"}}, "definitions": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}}}}`)},
	}
	for f := Generic; f <= MiniMaxM3; f++ {
		for _, o := range []Options{{Format: f}, {Format: f, Thinking: true}, {Format: f, Thinking: true, StartInThinking: true}} {
			for _, only := range []string{"", "get_time", "tree"} {
				g, err := Grammar(o, tools, only)
				if err != nil {
					t.Fatalf("%v %q: %v", f, only, err)
				}
				gbnfRules(t, g)
			}
		}
	}
}

// What each format's grammar writes, the parser reads as a call.
func TestGrammarOutputParses(t *testing.T) {
	for f := Generic; f <= MiniMaxM3; f++ { // every format of JSON calls
		if f > DeepSeek && f != NemotronV2 && f != ToolCallsTag && f != GigaChat && f != GigaChat31 && f != FireFunction {
			continue // their own tests (Hunyuan 3's and MiniCPM5's key-value calls: keyvalue_test.go; Kimi K3's and MiniMax M3's: TestForcedCallInFamilyMarkup)
		}
		if f == Functionary {
			continue // named calls (">>>NAME\n{…}"): TestForcedCallInFamilyMarkup, as Gemma 4's
		}
		g, err := Grammar(Options{Format: f}, []Tool{{Name: "get_time"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(g, "\n")
		var prefix, suffix string
		if c, ok := callMarkup[f]; ok {
			// The call as the family's models space it: markupGrammar
			// allows the newlines and indent ("[\n    {…}\n]").
			prefix, suffix = c.trigger+c.open, c.close
			if strings.HasSuffix(prefix, "[") {
				prefix, suffix = prefix+"\n    ", "\n"+suffix
			}
		} else if i := strings.Index(first, `"`); i >= 0 && strings.HasPrefix(first[i:], `"`) && !strings.HasPrefix(first, "root ::= root") {
			parts := strings.Split(first, `"`)
			prefix, suffix = unquote(parts[1]), unquote(parts[len(parts)-2])
		}
		key, args := "name", "arguments"
		switch f {
		case Llama3:
			args = "parameters"
		case CommandR, CommandRPlus:
			key, args = "tool_name", "parameters"
		}
		id := ""
		if f == CommandR {
			id = `"tool_call_id": "0", `
		}
		out := prefix + `{` + id + `"` + key + `": "get_time", "` + args + `": {}}` + suffix
		// The grammar's thinking: an optional block of any family, or
		// the end of the one the prompt opened.
		for _, c := range []struct {
			o    Options
			text string
		}{
			{Options{}, out},
			{Options{Thinking: true}, out},
			{Options{Thinking: true}, "<think>\nhmm\n</think>\n\n" + out},
			{Options{Thinking: true}, "[THINK]hmm[/THINK]" + out},
			{Options{Thinking: true, StartInThinking: true}, "hmm</think>\n" + out},
			{Options{Thinking: true, StartInThinking: true}, "<|END_THINKING|>" + out},
		} {
			c.o.Format, c.o.Tools = f, []string{"get_time"}
			d, w := Parse(c.o, c.text)
			if len(d.ToolCalls) != 1 || d.ToolCalls[0].Name != "get_time" || d.Content != "" || len(w) > 0 {
				t.Errorf("%v: %q parsed as %+v %v", f, c.text, d, w)
			}
		}
	}
}

// The lazy grammars are well formed; Command R7B's call objects start
// with the call's id, as the model writes them, and a list format's
// grammar takes parallel calls spaced as the template spaces them.
func TestLazyGrammar(t *testing.T) {
	tools := []Tool{{Name: "get_weather", Parameters: []byte(`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`)}}
	for _, f := range []Format{Hermes, CommandR, Granite} {
		g, err := LazyGrammar(Options{Format: f}, tools, "<[7]>")
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		gbnfRules(t, g)
		list := strings.Contains(g, `"," [ \n]{0,2} [ ]{0,8} tadpole-object)*`)
		if list != (f != Hermes) || strings.Contains(g, "tool_call_id") != (f == CommandR) {
			t.Errorf("%v:\n%s", f, g)
		}
		if f == CommandR {
			id, name := strings.Index(g, `tool_call_id`), strings.Index(g, `tool_name`)
			if id < 0 || name < id {
				t.Errorf("Command R7B's call object does not start with its id:\n%s", g)
			}
		}
	}
	for _, f := range []Format{NemotronV2, GigaChat, GigaChat31} {
		g, err := LazyGrammar(Options{Format: f}, tools, "<[7]>")
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		gbnfRules(t, g)
	}
	if _, err := LazyGrammar(Options{Format: Llama3}, tools, "<[7]>"); err == nil {
		t.Error("a lazy grammar for a format without a call token")
	}
}

func unquote(s string) string { return strings.ReplaceAll(s, `\n`, "\n") }

// gpt-oss's forced call: one function is a message to it (the name in
// the header, the arguments as the body); several, a bare call object in
// a commentary message. Either way the parser reads the call, and an
// analysis message may come first, as gpt-oss writes one.
func TestGrammarHarmony(t *testing.T) {
	tools := []Tool{{Name: "get_time"}, {Name: "get_weather", Parameters: []byte(`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`)}}
	o := Options{Format: Harmony, Thinking: true, Tools: []string{"get_time", "get_weather"}}
	g, err := Grammar(o, tools, "get_weather")
	if err != nil {
		t.Fatal(err)
	}
	head := `root ::= tadpole-analysis? ("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" `
	if !strings.HasPrefix(g, head) || strings.Contains(g, "get_time") || strings.Contains(g, "think") {
		t.Fatalf("named:\n%s", g)
	}
	gbnfRules(t, g)
	for _, first := range []string{"", "<|channel|>analysis<|message|>Oslo, then.<|end|><|start|>assistant"} {
		d, w := Parse(o, first+"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"+`{"city": "Oslo"}`)
		if len(d.ToolCalls) != 1 || string(d.ToolCalls[0].Arguments) != `{"city":"Oslo"}` || len(w) > 0 || first != "" && d.Thinking != "Oslo, then." {
			t.Errorf("named call after %q parsed as %+v %v", first, d, w)
		}
	}
	g, err = Grammar(o, tools, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(g, `root ::= tadpole-analysis? ("<|channel|>commentary<|message|>" `) {
		t.Fatalf("required:\n%s", g)
	}
	d, w := Parse(o, `<|channel|>commentary<|message|>{"name": "get_time", "arguments": {}}`)
	if len(d.ToolCalls) != 1 || d.ToolCalls[0].Name != "get_time" || d.Content != "" || len(w) > 0 {
		t.Errorf("required call parsed as %+v %v", d, w)
	}
}

// Templates that teach calls as key-value parameters (Qwen3-Coder's
// <parameter=…>, GLM's <arg_key>) get a lazy grammar from <tool_call>
// in that markup, not JSON.
func TestCallTriggerXMLCalls(t *testing.T) {
	tools := []Tool{{Name: "f", Parameters: []byte(`{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}`)}}
	for tmpl, want := range map[string]string{
		`<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>`: `"{"`,
		"{{- '<tool_call>' + tc.name }}{{- '<arg_key>' + k + '</arg_key>' }}":                   `"<arg_key>a</arg_key>"`,
		"<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>":        `"<parameter=a>\n"`,
	} {
		o := Options{Format: DetectFormat(tmpl), XMLCalls: XMLCalls(tmpl), ArgKeyCalls: ArgKeyCalls(tmpl)}
		if got := CallTrigger(o); got != "<tool_call>" {
			t.Errorf("%q: trigger %q", tmpl, got)
		}
		g, err := LazyGrammar(o, tools, "<[7]>")
		if err != nil || !strings.Contains(g, want) {
			t.Errorf("%q: lazy grammar without %s (%v):\n%s", tmpl, want, err, g)
		}
	}
}

// A model that starts inside its thinking block must end it with its
// template's close tag: another pair's block (Apriel's "[BEGIN FINAL
// RESPONSE]" takes any text without "[B") would let it write the
// template's close and a call the grammar never held.
func TestGrammarThinkingOwnPair(t *testing.T) {
	tools := []Tool{{Name: "f", Parameters: []byte(`{"type": "object", "properties": {"a": {"enum": ["x"]}}, "required": ["a"]}`)}}
	g, err := Grammar(Options{Format: Hermes, XMLCalls: true, Thinking: true, StartInThinking: true, ThinkingEnd: "</think>"}, tools, "")
	if err != nil {
		t.Fatal(err)
	}
	rule := g[strings.Index(g, "tadpole-thinking ::="):]
	rule, _, _ = strings.Cut(rule, "\n")
	if !strings.Contains(rule, `"</think>"`) || strings.Contains(rule, "BEGIN FINAL") || strings.Contains(rule, "[/THINK]") {
		t.Fatalf("thinking rule %s", rule)
	}
	g, _ = Grammar(Options{Format: Hermes, XMLCalls: true, Thinking: true, StartInThinking: true}, tools, "")
	if !strings.Contains(g, `"[/THINK]"`) {
		t.Fatalf("no template close: every pair\n%s", g)
	}
}
