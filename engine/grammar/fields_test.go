package grammar

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The raw text before a close is exactly the text that, followed by
// the close, holds it only at its end: every string over a small
// alphabet, against closes that overlap themselves.
func TestUntil(t *testing.T) {
	for _, close := range []string{"abab", "aab", "b", "aba", "\n</p>\n", "｜a｜"} {
		c := newConverter([]byte(`{}`))
		c.rules.define("root", c.until(close)+" "+literal(close))
		text := c.rules.String()
		g := mustParse(t, text)
		alphabet := []string{"a", "b", "x"}
		if strings.Contains(close, "<") {
			alphabet = []string{"\n", "<", "/", "p", ">", "x"}
		}
		if strings.Contains(close, "｜") {
			alphabet = []string{"｜", "a", "x"}
		}
		var all func(prefix string, n int)
		all = func(prefix string, n int) {
			s := prefix + close
			want := strings.Index(s, close) == len(prefix)
			if g.accepts(s) != want {
				t.Fatalf("close %q: %q accepted %v\n%s", close, s, !want, text)
			}
			if n == 0 {
				return
			}
			for _, a := range alphabet {
				all(prefix+a, n-1)
			}
		}
		depth := 6
		if len(alphabet) > 3 {
			depth = 5
		}
		all("", depth)
	}
}

func qwenFields() *Fields {
	return &Fields{KeyOpen: "<parameter=", KeyClose: ">\n", Close: "\n</parameter>\n"}
}

func fieldsGrammar(t *testing.T, f *Fields, schema string) *gGrammar {
	t.Helper()
	text, err := FromBranches(nil, []Branch{{Prefix: "<function=f>\n", Schema: json.RawMessage(schema), Fields: f, Suffix: "</function>"}})
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, text)
}

// Qwen3-Coder's parameters: strings raw (an enum's values), other types
// JSON valid against their schema, mixed ones raw; the required in any
// order, the optional after them.
func TestFieldsQwen(t *testing.T) {
	g := fieldsGrammar(t, qwenFields(), `{"type": "object", "properties": {
		"city": {"type": "string"}, "n": {"type": "integer", "minimum": 1, "maximum": 9},
		"unit": {"enum": ["C", "F"]}, "tags": {"type": "array", "items": {"type": "string"}},
		"any": {}}, "required": ["city", "n"]}`)
	p := func(k, v string) string { return "<parameter=" + k + ">\n" + v + "\n</parameter>\n" }
	for s, want := range map[string]bool{
		"<function=f>\n" + p("city", "Paris") + p("n", "3") + "</function>":                             true,
		"<function=f>\n" + p("n", "3") + p("city", "18") + "</function>":                                true,
		"<function=f>\n" + p("n", "3") + p("city", "a\n</parameter") + "</function>":                    true,
		"<function=f>\n" + p("n", "3") + p("city", "") + p("unit", "F") + p("any", "x") + "</function>": true,
		"<function=f>\n" + p("city", "x") + p("n", "3") + p("tags", `["a", "b"]`) + "</function>":       true,
		"<function=f>\n" + p("city", "x") + p("n", "3") + p("tags", `"a"`) + "</function>":              false,
		"<function=f>\n" + p("city", "Paris") + "</function>":                                           false,
		"<function=f>\n" + p("city", "Paris") + p("n", "10") + "</function>":                            false,
		"<function=f>\n" + p("city", "Paris") + p("n", `"3"`) + "</function>":                           false,
		"<function=f>\n" + p("city", "Paris") + p("n", "3") + p("unit", "K") + "</function>":            false,
		"<function=f>\n" + p("city", "a\n</parameter>\nb") + p("n", "3") + "</function>":                false,
		"<function=f>\n" + p("city", "x") + p("n", "3") + p("other", "1") + "</function>":               false,
		"<function=f>\n" + p("unit", "C") + p("city", "x") + p("n", "3") + "</function>":                false,
	} {
		if g.accepts(s) != want {
			t.Errorf("%q: accepted %v", s, !want)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		s, ok := g.generate(r)
		if !ok {
			continue
		}
		if !strings.HasPrefix(s, "<function=f>\n<parameter=") || !strings.Contains(s, "<parameter=city>\n") || !strings.Contains(s, "<parameter=n>\n") {
			t.Fatalf("generated %q", s)
		}
	}
}

// Kimi K3 names a value's JSON type in its tag: each type the property
// allows has its own open, before a value of that type only (integers
// are "number"); a string is raw text.
func TestFieldsTypedOpens(t *testing.T) {
	f := &Fields{KeyOpen: "<a k=", KeyClose: " t=", StringOpen: "string>", Close: "</a>",
		JSONOpens: map[string]string{"number": "number>", "boolean": "boolean>", "null": "null>", "object": "object>", "array": "array>"}}
	g := fieldsGrammar(t, f, `{"type": "object", "properties": {
		"n": {"type": "integer", "maximum": 9}, "b": {"type": ["boolean", "null", "string"]},
		"o": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}, "required": ["n"]}`)
	a := func(k, typ, v string) string { return "<a k=" + k + " t=" + typ + ">" + v + "</a>" }
	for s, want := range map[string]bool{
		"<function=f>\n" + a("n", "number", "3") + "</function>":                                true,
		"<function=f>\n" + a("n", "number", "3.5") + "</function>":                              false,
		"<function=f>\n" + a("n", "number", "12") + "</function>":                               false,
		"<function=f>\n" + a("n", "boolean", "3") + "</function>":                               false,
		"<function=f>\n" + a("n", "string", "3") + "</function>":                                false,
		"<function=f>\n" + a("n", "number", "3") + a("b", "boolean", "true") + "</function>":    true,
		"<function=f>\n" + a("n", "number", "3") + a("b", "null", "null") + "</function>":       true,
		"<function=f>\n" + a("n", "number", "3") + a("b", "null", "true") + "</function>":       false,
		"<function=f>\n" + a("n", "number", "3") + a("b", "string", "yes") + "</function>":      true,
		"<function=f>\n" + a("n", "number", "3") + a("o", "object", `{"x": 1}`) + "</function>": true,
		"<function=f>\n" + a("n", "number", "3") + a("o", "object", `{}`) + "</function>":       false,
		"<function=f>\n" + a("n", "number", "3") + a("o", "array", `[]`) + "</function>":        false,
	} {
		if g.accepts(s) != want {
			t.Errorf("%q: accepted %v", s, !want)
		}
	}
	// A type without an open is an error, not a grammar that drops it.
	delete(f.JSONOpens, "null")
	if _, err := FromBranches(nil, []Branch{{Schema: json.RawMessage(`{"type": "object", "properties": {"z": {"type": "null"}}}`), Fields: f}}); err == nil {
		t.Fatal("no open for null: no error")
	}
}

// DeepSeek's DSML says a value's kind: a string property takes only
// string="true" and raw text, a number only string="false" and JSON, a
// property of both either.
func TestFieldsDSML(t *testing.T) {
	f := &Fields{KeyOpen: `<p name="`, KeyClose: `" string="`, StringOpen: `true">`, JSONOpen: `false">`, Close: "</p>", Sep: `"\n"?`}
	g := fieldsGrammar(t, f, `{"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "number"}, "m": {"type": ["string", "integer"]}}, "required": ["s", "n", "m"]}`)
	for s, want := range map[string]bool{
		"<function=f>\n" + `<p name="s" string="true">1</p>` + "\n" + `<p name="n" string="false">1.5</p><p name="m" string="true">x</p>` + "\n</function>": true,
		"<function=f>\n" + `<p name="m" string="false">7</p><p name="s" string="true">1</p><p name="n" string="false">2</p></function>`:                     true,
		"<function=f>\n" + `<p name="s" string="false">1</p><p name="n" string="false">1</p><p name="m" string="false">7</p></function>`:                    false,
		"<function=f>\n" + `<p name="s" string="true">1</p><p name="n" string="true">1</p><p name="m" string="false">7</p></function>`:                      false,
		"<function=f>\n" + `<p name="s" string="true">1</p><p name="n" string="false">1</p><p name="m" string="false">x</p></function>`:                     false,
	} {
		if g.accepts(s) != want {
			t.Errorf("%q: accepted %v", s, !want)
		}
	}
}

// Without properties any key takes a raw value; with additionalProperties
// false there is none. Past MaxPermuted required properties they come in
// the schema's order.
func TestFieldsAnyKeyAndOrder(t *testing.T) {
	glm := &Fields{KeyOpen: "<arg_key>", KeyClose: "</arg_key>", Gap: `"\n"?`, Close: "</arg_value>", StringOpen: "<arg_value>", JSONOpen: "<arg_value>", Sep: `"\n"?`}
	g := fieldsGrammar(t, glm, `{"type": "object"}`)
	for s, want := range map[string]bool{
		"<function=f>\n</function>": true,
		"<function=f>\n<arg_key>a b</arg_key>\n<arg_value>{x</arg_value>\n<arg_key>c</arg_key><arg_value></arg_value>\n</function>": true,
		"<function=f>\n<arg_key>a<b</arg_key><arg_value>1</arg_value></function>":                                                   false,
	} {
		if g.accepts(s) != want {
			t.Errorf("%q: accepted %v", s, !want)
		}
	}
	g = fieldsGrammar(t, glm, `{"type": "object", "additionalProperties": false}`)
	if !g.accepts("<function=f>\n</function>") || g.accepts("<function=f>\n<arg_key>a</arg_key><arg_value>1</arg_value></function>") {
		t.Error("additionalProperties false")
	}
	props := map[string]any{}
	var req []string
	for i := range MaxPermuted + 1 {
		k := fmt.Sprintf("k%d", i)
		props[k] = map[string]string{"type": "integer"}
		req = append(req, k)
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": req})
	g = fieldsGrammar(t, glm, string(schema))
	text := func(keys []string) string {
		s := "<function=f>\n"
		for _, k := range keys {
			s += "<arg_key>" + k + "</arg_key><arg_value>1</arg_value>"
		}
		return s + "</function>"
	}
	if !g.accepts(text(req)) || g.accepts(text(slices.Concat(req[1:], req[:1]))) {
		t.Error("more than MaxPermuted required properties: not in the schema's order")
	}
	g = fieldsGrammar(t, glm, strings.Replace(string(schema), `"k6"]`, `"k5"]`, 1)) // six required
	rev := slices.Clone(req[:MaxPermuted])
	slices.Reverse(rev)
	if !g.accepts(text(append(rev, "k6"))) || !g.accepts(text(req)) {
		t.Error("six required properties: not in any order")
	}
}

// Property names of any bytes are literals; a schema the converter
// refuses is an error naming the property; the limits hold.
func TestFieldsLimits(t *testing.T) {
	names := []string{`a"b`, `c\d`, "e\nf", "g\x00h", "i\xffj", strings.Repeat("k", 10000), "</parameter>", "%2F~1/"}
	props := map[string]json.RawMessage{}
	for i, n := range names {
		props[n] = json.RawMessage([]string{`{"type": "string"}`, `{"type": "integer"}`, `{"enum": ["x", "y"]}`, `{}`}[i%4])
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": slices.Sorted(maps.Keys(props))[:3]})
	text, err := FromBranches(nil, []Branch{{Prefix: "<f>", Schema: schema, Fields: qwenFields(), Suffix: "</f>"}})
	if err != nil {
		t.Fatal(err)
	}
	mustParse(t, text)
	_, err = FromBranches(nil, []Branch{{Schema: json.RawMessage(`{"properties": {"bad": {"type": "integer", "not": {}}}}`), Fields: qwenFields()}})
	if err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("unsupported keyword: %v", err)
	}
	big := map[string]any{}
	for i := range 6000 {
		big[fmt.Sprintf("p%d", i)] = map[string]any{"enum": []string{strings.Repeat("v", 300) + fmt.Sprint(i)}}
	}
	schema, _ = json.Marshal(map[string]any{"properties": big})
	if _, err := FromBranches(nil, []Branch{{Schema: schema, Fields: qwenFields()}}); err == nil {
		t.Fatal("a grammar over the limits")
	}
}

func TestStringProperties(t *testing.T) {
	got := StringProperties([]byte(`{"type": "object", "properties": {
		"s": {"type": "string"}, "e": {"enum": ["a", "b"]}, "r": {"$ref": "#/$defs/city"}, "f": {"format": "date"},
		"n": {"type": "integer"}, "m": {"type": ["string", "null"]}, "a": {}, "o": {"anyOf": [{"type": "string"}, {"const": "x"}]},
		"x": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
		"$defs": {"city": {"type": "string", "maxLength": 9}}}`))
	want := map[string]bool{"s": true, "e": true, "r": true, "f": true, "o": true}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if len(StringProperties([]byte(`{"type": "object"}`))) != 0 || len(StringProperties([]byte(`nonsense`))) != 0 {
		t.Fatal("no properties")
	}
}
