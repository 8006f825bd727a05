package grammar

import (
	"encoding/json"
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

// Each branch's own prefix, schema and suffix, and no mixing of them;
// definitions shared by the branches.
func TestFromBranches(t *testing.T) {
	defs := map[string]map[string]json.RawMessage{"$defs": {"city": json.RawMessage(`{"type": "string", "enum": ["Paris", "Oslo"]}`)}}
	text, err := FromBranches(defs, []Branch{
		{Prefix: "<call>weather<sep>", Schema: json.RawMessage(`{"type": "object", "properties": {"city": {"$ref": "#/$defs/city"}}, "required": ["city"], "additionalProperties": false}`), Suffix: "</call>"},
		{Prefix: "<call>add<sep>", Schema: json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}`), Suffix: "</call>"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g := mustParse(t, text)
	for s, want := range map[string]bool{
		`<call>weather<sep>{"city": "Paris"}</call>`: true,
		`<call>add<sep>{"n": 4}</call>`:              true,
		`<call>weather<sep>{"n": 4}</call>`:          false,
		`<call>add<sep>{"city": "Oslo"}</call>`:      false,
		`<call>weather<sep>{"city": "Rome"}</call>`:  false,
		`<call>other<sep>{"n": 4}</call>`:            false,
		`{"city": "Paris"}`:                          false,
	} {
		if g.accepts(s) != want {
			t.Errorf("%s: accepted %v\n%s", s, !want, text)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[string]bool{}
	for range 100 {
		if s, ok := g.generate(r); ok {
			name, _, _ := strings.Cut(strings.TrimPrefix(s, "<call>"), "<sep>")
			seen[name] = true
			if !strings.HasSuffix(s, "}</call>") {
				t.Fatalf("generated %q", s)
			}
		}
	}
	if !seen["weather"] || !seen["add"] || len(seen) != 2 {
		t.Errorf("branches generated: %v", seen)
	}
	// GBNF between the prefix and the value: an index.
	text, err = FromBranches(nil, []Branch{{Prefix: "f:", Between: `[0-9]{1,2} "|"`, Schema: json.RawMessage(`{"type": "integer"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	g = mustParse(t, text)
	for s, want := range map[string]bool{"f:0|5": true, "f:12|-3": true, "f:|5": false, "f:123|5": false, "f:1 5": false} {
		if g.accepts(s) != want {
			t.Errorf("%s: accepted %v\n%s", s, !want, text)
		}
	}
	for _, bad := range []struct {
		defs     map[string]map[string]json.RawMessage
		branches []Branch
	}{
		{nil, nil},
		{map[string]map[string]json.RawMessage{"other": {}}, []Branch{{Schema: json.RawMessage(`{}`)}}},
		{nil, []Branch{{Schema: json.RawMessage(`{"not": {}}`)}}},
		{nil, []Branch{{Schema: json.RawMessage(`{"$ref": "#/$defs/missing"}`)}}},
	} {
		if g, err := FromBranches(bad.defs, bad.branches); err == nil {
			t.Errorf("%v %v: accepted\n%s", bad.defs, bad.branches, g)
		}
	}
}
