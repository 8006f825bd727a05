package dialect

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTrim(t *testing.T) {
	if got := Trim("short"); got != "short" {
		t.Errorf("%q", got)
	}
	long := strings.Repeat("é", 40) // 80 bytes: byte 64 starts a character
	if got := Trim(long); !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > 64+len("…") {
		t.Errorf("%q", got)
	}
	odd := "x" + strings.Repeat("é", 40) // byte 64 is inside one
	if got := Trim(odd); !utf8.ValidString(got) || len(got) > 64+len("…") {
		t.Errorf("%q", got)
	}
}

// FormatGrammar's faults name the field the client sent, for both
// OpenAI doors (chat's response_format, Responses' text.format).
func TestFormatGrammar(t *testing.T) {
	for _, c := range []struct {
		f        OutputFormat
		optional bool
		param    string // "" : accepted
		grammar  bool
	}{
		{OutputFormat{Type: "text"}, false, "", false},
		{OutputFormat{Type: "json_object"}, false, "", true},
		{OutputFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`)}, false, "", true},
		{OutputFormat{Type: "json_schema"}, true, "", true},
		{OutputFormat{Type: "json_schema"}, false, "f.schema", false},
		{OutputFormat{Type: "json_schema", Schema: json.RawMessage(`[1]`)}, false, "f.schema", false},
		{OutputFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"nonsense"}`), Name: strings.Repeat("n", 500)}, false, "f.schema", false},
		{OutputFormat{}, false, "f.type", false},
		{OutputFormat{Type: strings.Repeat("x", 1000)}, false, "f.type", false},
	} {
		g, err := FormatGrammar("f", "f.schema", c.f, c.optional)
		if c.param == "" {
			if err != nil || (g != "") != c.grammar {
				t.Errorf("%+v: %q, %v", c.f.Type, g, err)
			}
			continue
		}
		e, ok := err.(*Error)
		if !ok || e.Param != c.param || e.Status != 400 || len(e.Message) > 400 {
			t.Errorf("%.20q: %#v, want a 400 naming %s", c.f.Type, err, c.param)
		}
	}
	if _, err := ToolParameters("p", json.RawMessage(`"x"`)); err == nil {
		t.Error("a string as parameters")
	}
	if ps, err := ToolParameters("p", json.RawMessage(` null `)); err != nil || ps != nil {
		t.Errorf("null parameters: %s, %v", ps, err)
	}
	if err := CheckToolName("n", "a b"); err == nil {
		t.Error("a name with a space")
	}
}
