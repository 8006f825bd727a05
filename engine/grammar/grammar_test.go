package grammar

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema compiles a schema with the reference validator (formats
// asserted).
func compileSchema(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("reference validator: %v", err)
	}
	return sch
}

// validate checks a document against a compiled schema.
func validate(sch *jsonschema.Schema, doc string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return sch.Validate(v)
}

func TestFromFormat(t *testing.T) {
	for _, in := range []string{``, ` `, `null`, `""`} {
		g, err := FromFormat(json.RawMessage(in))
		if g != "" || err != nil {
			t.Errorf("%q: %q, %v; want no grammar", in, g, err)
		}
	}
	g, err := FromFormat(json.RawMessage(` "json" `))
	if err != nil {
		t.Fatal(err)
	}
	if g != JSONObject() || !strings.HasPrefix(g, "root ::= object\n") {
		t.Fatalf("json grammar:\n%s", g)
	}
	pg := mustParse(t, g)
	for _, r := range []string{"value", "object", "array", "string", "char", "number", "integer", "boolean", "null", "ws"} {
		if _, ok := pg.rules[r]; !ok {
			t.Errorf("json grammar lacks %q", r)
		}
	}
	for doc, want := range map[string]bool{
		`{}`: true, `{"a":[1,-2.5e3,"x",{"b":null}],"c":true}`: true, "{\n  \"a\": 1\n}": true,
		`[]`: false, `"x"`: false, `1`: false, `{"a":1,}`: false, `{"a":01}`: false, ` {}`: false,
	} {
		if pg.accepts(doc) != want {
			t.Errorf("json grammar on %s: got %v", doc, !want)
		}
	}

	g, err = FromFormat(json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`))
	if err != nil || !mustParse(t, g).accepts(`{"a":1}`) {
		t.Fatalf("schema format: %v\n%s", err, g)
	}

	for in, want := range map[string]string{
		`"xml"`:            `invalid format "xml"`,
		`"JSON"`:           `invalid format "JSON"`,
		`42`:               "invalid format 42",
		`[1]`:              "invalid format [1]",
		`true`:             "invalid format true",
		`{`:                "not valid JSON",
		`"json`:            "invalid format",
		`{"type":"strin"}`: `unknown type "strin"`,
	} {
		g, err := FromFormat(json.RawMessage(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q, %v; want an error with %q", in, g, err, want)
		}
	}
}

func TestSchemaCases(t *testing.T) {
	for _, tc := range schemaCases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := FromSchema([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(g, "root ::= ") {
				t.Fatalf("grammar does not start with root:\n%s", g)
			}
			pg := mustParse(t, g)
			for _, r := range tc.rules {
				if _, ok := pg.rules[r]; !ok {
					t.Errorf("no rule %q in\n%s", r, g)
				}
			}
			var sch *jsonschema.Schema
			if !tc.noValidator {
				sch = compileSchema(t, tc.schema)
			}
			for _, doc := range tc.accept {
				if !pg.accepts(doc) {
					t.Errorf("rejects %s\n%s", truncate(doc, 200), g)
				}
				if sch != nil {
					if err := validate(sch, doc); err != nil {
						t.Errorf("test document %s is not valid: %v", truncate(doc, 200), err)
					}
				}
			}
			for _, doc := range tc.reject {
				if pg.accepts(doc) {
					t.Errorf("accepts %s\n%s", truncate(doc, 200), g)
				}
			}
		})
	}
}

// TestGrammarSoundness draws random documents from each grammar and
// checks that every one is valid JSON satisfying the schema.
func TestGrammarSoundness(t *testing.T) {
	for _, tc := range schemaCases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := FromSchema([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			pg := mustParse(t, g)
			var sch *jsonschema.Schema
			if !tc.noValidator {
				sch = compileSchema(t, tc.schema)
			}
			r := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			n := 0
			for tries := 0; n < 150 && tries < 2000; tries++ {
				doc, ok := pg.generate(r)
				if !ok {
					continue
				}
				n++
				if !json.Valid([]byte(doc)) {
					t.Fatalf("generated invalid JSON %q from\n%s", doc, g)
				}
				if sch != nil {
					if err := validate(sch, doc); err != nil {
						t.Fatalf("generated %s, not valid against the schema: %v\n%s", truncate(doc, 300), err, g)
					}
				}
				if len(doc) < 3000 && !pg.accepts(doc) {
					t.Fatalf("matcher disagrees with the generator on %q", doc)
				}
			}
			if n < 100 {
				t.Fatalf("only %d documents generated", n)
			}
		})
	}
}

func TestSchemaErrors(t *testing.T) {
	for _, tc := range errorCases {
		g, err := FromSchema([]byte(tc.schema))
		if err == nil {
			t.Errorf("%s: no error; grammar\n%s", tc.schema, g)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want it to contain %q", tc.schema, err, tc.want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, tc := range schemaCases {
		first, _ := FromSchema([]byte(tc.schema))
		for range 5 {
			if g, _ := FromSchema([]byte(tc.schema)); g != first {
				t.Fatalf("%s: grammar differs between runs", tc.name)
			}
		}
	}
}

// TestIntegerRanges checks integer bounds against every integer near them.
func TestIntegerRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	type rng struct{ lo, hi *int64 }
	p := func(v int64) *int64 { return &v }
	cases := []rng{{p(0), p(0)}, {p(0), p(9)}, {p(1), p(10)}, {p(-5), p(5)}, {p(-120), p(-7)}, {p(17), p(4321)},
		{p(99), p(100)}, {p(0), nil}, {p(7), nil}, {p(-3), nil}, {nil, p(0)}, {nil, p(-11)}, {nil, p(250)},
		{p(1000), p(1000)}, {p(-1), p(0)}}
	for range 30 {
		a, b := r.Int64N(20000)-10000, r.Int64N(20000)-10000
		cases = append(cases, rng{p(min(a, b)), p(max(a, b))})
	}
	for _, c := range cases {
		s := map[string]any{"type": "integer"}
		if c.lo != nil {
			s["minimum"] = *c.lo
		}
		if c.hi != nil {
			s["maximum"] = *c.hi
		}
		raw, _ := json.Marshal(s)
		g, err := FromSchema(raw)
		if err != nil {
			t.Fatal(err)
		}
		pg := mustParse(t, g)
		var probes []int64
		for _, v := range []*int64{c.lo, c.hi} {
			if v != nil {
				for d := int64(-12); d <= 12; d++ {
					probes = append(probes, *v+d)
				}
			}
		}
		for range 200 {
			probes = append(probes, r.Int64N(40000)-20000)
		}
		probes = append(probes, 0, 1, -1, 9999999999999999, -9999999999999999)
		for _, v := range probes {
			want := (c.lo == nil || v >= *c.lo) && (c.hi == nil || v <= *c.hi)
			if got := pg.accepts(fmt.Sprint(v)); got != want {
				t.Fatalf("%s: %d accepted=%v\n%s", raw, v, got, g)
			}
		}
		for _, bad := range []string{"-0", "00", "01", "1.0", "+1", ""} {
			if pg.accepts(bad) && bad != "-0" {
				t.Fatalf("%s accepts %q", raw, bad)
			}
		}
	}
}

// TestNumberRanges checks decimal bounds against numbers near them.
func TestNumberRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cases := []string{
		`{"type":"number","minimum":0,"maximum":1}`,
		`{"type":"number","minimum":-1.5,"exclusiveMaximum":2.25}`,
		`{"type":"number","exclusiveMinimum":0.125}`,
		`{"type":"number","maximum":-0.05}`,
		`{"type":"number","minimum":3.14159,"maximum":3.1416}`,
		`{"type":"number","minimum":-10.01,"maximum":-10.001}`,
		`{"type":"number","minimum":0.1,"maximum":0.9}`,
		`{"type":"number","multipleOf":0.01,"minimum":-1,"maximum":1}`,
		`{"type":"number","multipleOf":0.1}`,
		`{"type":"number","multipleOf":1,"exclusiveMinimum":2.5,"maximum":12}`,
		`{"type":"number","minimum":1e-3,"maximum":2E1}`,
	}
	for _, schema := range cases {
		g, err := FromSchema([]byte(schema))
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		pg := mustParse(t, g)
		sch := compileSchema(t, schema)
		var probes []string
		for range 400 {
			// Numbers around the bounds and in a wide span, with 0-5 decimals.
			v := new(big.Rat).SetFrac64(r.Int64N(4_000_000)-2_000_000, 100_000)
			if r.IntN(2) == 0 {
				v.SetFrac64(r.Int64N(40_000)-20_000, 1000)
			}
			probes = append(probes, strings.TrimRight(strings.TrimRight(v.FloatString(5), "0"), "."))
		}
		probes = append(probes, "0", "-0", "0.0", "1", "1.0", "1.00001", "-1.5", "-1.50", "-1.49999", "2.25", "2.250",
			"2.2500000000000001", "0.125", "0.1250", "0.1250000000000001", "-0.05", "-0.050", "-0.0499", "3.14159", "3.1416",
			"3.14160", "3.141599999", "-10.01", "-10.001", "-10.0011", "12", "3", "2.5", "0.001", "20", "20.000001")
		for _, p := range probes {
			want := validate(sch, p) == nil
			// The grammar writes at most the digits multipleOf allows.
			if got := pg.accepts(p); got && !want {
				t.Fatalf("%s accepts %s\n%s", schema, p, g)
			} else if !got && want && !strings.Contains(schema, "multipleOf") && p != "-0" {
				t.Errorf("%s rejects valid %s", schema, p)
			}
		}
	}
}

func TestRuleNames(t *testing.T) {
	for in, want := range map[string]string{
		"root": "root", "first name": "first-name", "a_b": "a-b", "--x--": "x", "": "r", "ä": "r", "A9-z": "A9-z",
		strings.Repeat("ab", 50): strings.Repeat("ab", 30),
	} {
		if got := ruleName(in); got != want {
			t.Errorf("ruleName(%q) = %q, want %q", in, got, want)
		}
	}
	// Property names that sanitise alike get distinct rules.
	g, err := FromSchema([]byte(`{"type":"object","properties":{"a b":{"type":"string","maxLength":1},"a-b":{"type":"string","maxLength":2},"a_b":{"type":"string","maxLength":3}},"required":["a b","a-b","a_b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	pg := mustParse(t, g)
	for _, r := range []string{"root-a-b", "root-a-b-2", "root-a-b-3"} {
		if _, ok := pg.rules[r]; !ok {
			t.Errorf("no rule %s in\n%s", r, g)
		}
	}
	if !pg.accepts(`{"a b":"x","a-b":"xy","a_b":"xyz"}`) || pg.accepts(`{"a b":"xy","a-b":"xy","a_b":"xyz"}`) {
		t.Errorf("wrong rules for similar names\n%s", g)
	}
	// Identical subschemas share one rule.
	g, _ = FromSchema([]byte(`{"type":"object","properties":{"a":{"type":"string","maxLength":5},"b":{"type":"string","maxLength":5}},"required":["a","b"]}`))
	if strings.Count(g, `char{0,5}`) != 1 {
		t.Errorf("identical subschemas not shared:\n%s", g)
	}
}

func TestWhitespaceIsBounded(t *testing.T) {
	g, _ := FromSchema([]byte(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`))
	pg := mustParse(t, g)
	for _, ws := range []string{"", " ", "\n", "\n" + strings.Repeat(" ", 20), "\n\t\t"} {
		doc := "{" + ws + `"a"` + ws + ":" + ws + "1" + ws + "}"
		if !pg.accepts(doc) {
			t.Errorf("rejects %q", doc)
		}
	}
	for _, ws := range []string{"  ", "\n\n", "\n" + strings.Repeat(" ", 21), " \n", "\r\n", "\t"} {
		doc := "{" + ws + `"a":1}`
		if pg.accepts(doc) {
			t.Errorf("accepts %q", doc)
		}
	}
}

func TestRepeat(t *testing.T) {
	for _, tc := range []struct {
		min, max int
		want     string
	}{
		{0, -1, "x*"}, {1, -1, "x+"}, {3, -1, "x{3,}"}, {0, 0, ""}, {1, 1, "x"}, {0, 1, "x?"}, {2, 2, "x{2}"}, {2, 5, "x{2,5}"},
	} {
		if got := repeat("x", tc.min, tc.max); got != tc.want {
			t.Errorf("repeat(%d, %d) = %q, want %q", tc.min, tc.max, got, tc.want)
		}
	}
	// Large counts stay within llama.cpp's limit and count exactly.
	for _, c := range [][2]int{{0, 2500}, {0, 4001}, {2100, 2101}, {2001, -1}, {1, 3000}, {4999, 5003}} {
		g := "root ::= " + repeat(`"x"`, c[0], c[1]) + "\n"
		pg := mustParse(t, g)
		for _, n := range []int{0, 1, 999, 1000, 1001, 1999, 2000, 2001, 2099, 2100, 2101, 2102, 2500, 2501, 3000, 3001, 4000, 4001, 4002, 4998, 4999, 5000, 5003, 5004} {
			want := n >= c[0] && (c[1] < 0 || n <= c[1])
			if got := pg.accepts(strings.Repeat("x", n)); got != want {
				t.Fatalf("repeat(%d, %d) on %d: %v\n%s", c[0], c[1], n, got, g)
			}
		}
	}
}

func TestLiteralEscapes(t *testing.T) {
	s := "a\"b\\c\n\r\t\x01\x7fé😀"
	g := "root ::= " + literal(s) + "\n"
	if !regexp.MustCompile(`^root ::= "[^\n]*"\n$`).MatchString(g) {
		t.Fatalf("literal not on one line: %q", g)
	}
	if pg := mustParse(t, g); !pg.accepts(s) {
		t.Fatalf("%s does not match %q", g, s)
	}
}

// FuzzFromSchema: no input makes FromSchema panic, and every grammar it
// returns parses, within llama.cpp's repetition limit.
func FuzzFromSchema(f *testing.F) {
	for _, c := range schemaCases {
		f.Add(c.schema)
	}
	for _, c := range errorCases {
		f.Add(c.schema)
	}
	f.Add(`{"type":"string","minLength":1000000000}`)
	f.Add(`{"type":"array","maxItems":1e300}`)
	f.Fuzz(func(t *testing.T, schema string) {
		g, err := FromSchema([]byte(schema))
		if err != nil {
			return
		}
		if len(g) > 1<<20 {
			return // a huge (but valid) grammar: not worth parsing here
		}
		if _, err := parseGBNF(g); err != nil {
			t.Fatalf("%s: grammar does not parse: %v\n%s", schema, err, g)
		}
	})
}
