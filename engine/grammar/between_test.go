package grammar

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestFromSchemaBetween(t *testing.T) {
	schema := `{"type": "object", "properties": {"name": {"const": "f"}, "arguments": {"$ref": "#/$defs/args"}},
		"required": ["name", "arguments"], "$defs": {"args": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}`
	text, err := FromSchemaBetween([]byte(schema), "<tool_call>", "</tool_call>")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `root ::= "<tool_call>" `) {
		t.Fatalf("grammar:\n%s", text)
	}
	g := mustParse(t, text)
	for s, want := range map[string]bool{
		`<tool_call>{"name": "f", "arguments": {"n": 3}}</tool_call>`: true,
		`<tool_call>{"name":"f","arguments":{"n":-12}}</tool_call>`:   true,
		`{"name": "f", "arguments": {"n": 3}}`:                        false,
		`<tool_call>{"name": "g", "arguments": {"n": 3}}</tool_call>`: false,
		`<tool_call>{"name": "f", "arguments": {}}</tool_call>`:       false,
	} {
		if g.accepts(s) != want {
			t.Errorf("%s: accepted %v", s, !want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		if s, ok := g.generate(r); ok && (!strings.HasPrefix(s, "<tool_call>{") || !strings.HasSuffix(s, "}</tool_call>")) {
			t.Fatalf("generated %q", s)
		}
	}
	// A schema that refers to itself keeps meaning the value.
	rec := `{"type": "object", "properties": {"next": {"$ref": "#"}}}`
	text, err = FromSchemaBetween([]byte(rec), "[", "]")
	if err != nil {
		t.Fatal(err)
	}
	g = mustParse(t, text)
	if !g.accepts(`[{"next": {"next": {}}}]`) || g.accepts(`[{"next": [{}]}]`) {
		t.Fatalf("recursive schema:\n%s", text)
	}
	if _, err := FromSchemaBetween([]byte(`{"not": {}}`), "a", "b"); err == nil {
		t.Fatal("unsupported keyword accepted")
	}
}
