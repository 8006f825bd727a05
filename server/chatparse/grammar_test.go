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
		Hermes: `root ::= "<tool_call>\n" `, Mistral: `root ::= "[TOOL_CALLS][" `, CommandR: `root ::= "<|START_ACTION|>[" `,
		Generic: "root ::= root-2", Llama3: "root ::= root-2",
	} {
		g, err := Grammar(Options{Format: f}, tools, "")
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		if !strings.HasPrefix(g, prefix) || !strings.Contains(g, `get-weather`) && !strings.Contains(g, `\"get_weather\"`) {
			t.Errorf("%v:\n%s", f, g)
		}
	}
	// Only the named function; thinking may come first.
	g, err := Grammar(Options{Format: Hermes, Thinking: true}, tools, "get_time")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(g, "get_weather") || !strings.HasPrefix(g, "root ::= tadpole-thinking? ") {
		t.Fatalf("named, thinking:\n%s", g)
	}
	if _, err := Grammar(Options{}, tools, "nope"); err == nil {
		t.Fatal("an unknown forced function")
	}
	if _, err := Grammar(Options{}, []Tool{{Name: "f", Parameters: []byte(`{"not": {"type": "string"}}`)}}, ""); err == nil || !strings.Contains(err.Error(), `"f"`) {
		t.Fatalf("unsupported keyword: %v", err)
	}
}

// What each format's grammar writes, the parser reads as a call.
func TestGrammarOutputParses(t *testing.T) {
	for f := Generic; f <= DeepSeek; f++ { // every format
		g, err := Grammar(Options{Format: f}, []Tool{{Name: "get_time"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(g, "\n")
		var prefix, suffix string
		if i := strings.Index(first, `"`); i >= 0 && strings.HasPrefix(first[i:], `"`) && !strings.HasPrefix(first, "root ::= root") {
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
		out := prefix + `{"` + key + `": "get_time", "` + args + `": {}}` + suffix
		d, w := Parse(Options{Format: f, Tools: []string{"get_time"}}, out)
		if len(d.ToolCalls) != 1 || d.ToolCalls[0].Name != "get_time" || d.Content != "" {
			t.Errorf("%v: %q parsed as %+v %v", f, out, d, w)
		}
	}
}

func unquote(s string) string { return strings.ReplaceAll(s, `\n`, "\n") }
