package grammar

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// enumOf is a string enum of n values.
func enumOf(n int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf(`"v%d"`, i)
	}
	return `{"type":"string","enum":[` + strings.Join(vals, ",") + `]}`
}

// enumSchema is an object whose one property is a string enum of n values.
func enumSchema(n int) string {
	return `{"type":"object","properties":{"x":` + enumOf(n) + `},"required":["x"]}`
}

// anyOfSchema is an anyOf of n string constants.
func anyOfSchema(key string, n int) string {
	br := make([]string, n)
	for i := range br {
		br[i] = fmt.Sprintf(`{"const":"c%d"}`, i)
	}
	return `{"` + key + `":[` + strings.Join(br, ",") + `]}`
}

// wantLimit checks that err is a LimitError for what, with the message
// naming the limit (and the value when it is known).
func wantLimit(t *testing.T, err error, what string, value, limit int) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("want a LimitError for %s, got %v", what, err)
	}
	msg := err.Error()
	if le.What != what || le.Max != limit || !strings.Contains(msg, fmt.Sprintf("at most %d are allowed", limit)) {
		t.Fatalf("error %q (%+v): want %s limited to %d", msg, le, what, limit)
	}
	if value > 0 && (le.Value != value || !strings.Contains(msg, fmt.Sprint(value))) {
		t.Fatalf("error %q does not name the value %d", msg, value)
	}
}

// Enums and anyOf/oneOf lists up to their caps convert; one more is
// refused with the value and the limit named.
func TestLimitsEnumAndBranches(t *testing.T) {
	if _, err := FromSchema([]byte(enumSchema(MaxEnumValues))); err != nil {
		t.Fatalf("largest enum: %v", err)
	}
	_, err := FromSchema([]byte(enumSchema(MaxEnumValues + 1)))
	wantLimit(t, err, "enum", MaxEnumValues+1, MaxEnumValues)
	if !strings.Contains(err.Error(), "enum has 1025 values; at most 1024 are allowed") {
		t.Fatalf("message %q", err)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if _, err := FromSchema([]byte(anyOfSchema(key, MaxBranches))); err != nil {
			t.Fatalf("largest %s: %v", key, err)
		}
		_, err := FromSchema([]byte(anyOfSchema(key, MaxBranches+1)))
		wantLimit(t, err, key, MaxBranches+1, MaxBranches)
	}
	// So is an alternation in a pattern: 60,000 words in a 540 KB
	// pattern were 60,000 open alternatives, as many as an enum.
	// Random words, so that the parser cannot factor out prefixes.
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 2*MaxBranches)
	for i := range words {
		w := make([]byte, 8)
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		words[i] = string(w)
	}
	_, err = FromSchema([]byte(`{"type":"string","pattern":"^(` + strings.Join(words, "|") + `)$"}`))
	wantLimit(t, err, "pattern alternation", 0, MaxBranches)
	_, err = FromSchema([]byte(`{"type":"string","pattern":"a(` + strings.Join(words, "|") + `)"}`))
	wantLimit(t, err, "pattern alternation", 0, MaxBranches)
	if _, err := FromSchema([]byte(`{"type":"string","pattern":"^(` + strings.Join(words[:MaxBranches], "|") + `)$"}`)); err != nil {
		t.Fatalf("%d words: %v", MaxBranches, err)
	}
	// The enum of uniqueItems arrays and the enums allOf intersects are
	// capped too.
	_, err = FromSchema([]byte(`{"type":"array","uniqueItems":true,"items":` + enumOf(MaxEnumValues+1) + `}`))
	wantLimit(t, err, "enum", MaxEnumValues+1, MaxEnumValues)
	_, err = FromSchema([]byte(`{"allOf":[` + enumOf(MaxEnumValues+1) + `,{"enum":["v1","v2"]}]}`))
	wantLimit(t, err, "enum", MaxEnumValues+1, MaxEnumValues)
}

// The enum values and branches of a whole schema are bounded together:
// many lists, each within its own cap, add up.
func TestLimitsAlternativesInAll(t *testing.T) {
	props := func(n int) string {
		var p []string
		for i := 0; i < n; i++ {
			p = append(p, fmt.Sprintf(`"p%d":%s`, i, enumOf(MaxEnumValues)))
		}
		return `{"type":"object","properties":{` + strings.Join(p, ",") + `}}`
	}
	if _, err := FromSchema([]byte(props(MaxAlternatives / MaxEnumValues))); err != nil {
		t.Fatalf("%d full enums: %v", MaxAlternatives/MaxEnumValues, err)
	}
	_, err := FromSchema([]byte(props(MaxAlternatives/MaxEnumValues + 1)))
	wantLimit(t, err, "schema", 0, MaxAlternatives)
}

// allOf of anyOf lists multiplies them out: ten lists of ten would be
// 10^10 branches (a 3 KB schema that ran out of memory); the product is
// refused before it is built.
func TestLimitsAllOfProduct(t *testing.T) {
	schema := func(k int) string {
		var parts []string
		for j := 0; j < k; j++ {
			var br []string
			for i := 0; i < 10; i++ {
				br = append(br, fmt.Sprintf(`{"properties":{"p%d":{"const":%d}}}`, j, i))
			}
			parts = append(parts, `{"anyOf":[`+strings.Join(br, ",")+`]}`)
		}
		return `{"allOf":[` + strings.Join(parts, ",") + `]}`
	}
	if _, err := FromSchema([]byte(schema(3))); err != nil {
		t.Fatalf("1000 branches: %v", err)
	}
	_, err := FromSchema([]byte(schema(10)))
	wantLimit(t, err, "allOf (its anyOf lists multiplied out)", 10000, MaxBranches)
}

// A schema document over MaxSchemaBytes is refused before it is parsed,
// by FromSchema, FromFormat and FromSchemaBetween alike.
func TestLimitsSchemaBytes(t *testing.T) {
	pad := strings.Repeat(" ", MaxSchemaBytes)
	s := `{"type":"string","description":"` + pad + `"}`
	_, err := FromSchema([]byte(s))
	wantLimit(t, err, "JSON schema", len(s), MaxSchemaBytes)
	_, err = FromFormat([]byte(s))
	wantLimit(t, err, "JSON schema", len(s), MaxSchemaBytes)
	_, err = FromSchemaBetween([]byte(s), "<a>", "</a>")
	wantLimit(t, err, "JSON schema", len(s), MaxSchemaBytes)
	// Surrounding whitespace does not count.
	if _, err := FromSchema([]byte(pad + `{"type":"string"}` + pad)); err != nil {
		t.Fatal(err)
	}
}

// A schema within every list cap whose grammar outgrows MaxGrammarBytes
// is refused while it is converted: a 1000-member object referred to with
// a different sibling keyword each time is written out again for each
// reference (a 39 KB schema would make 4 MB of grammar).
func TestLimitsGrammarBytes(t *testing.T) {
	var props, req []string
	for i := 0; i < 1000; i++ {
		props = append(props, fmt.Sprintf(`"k%04d":{"type":"string"}`, i))
		req = append(req, fmt.Sprintf(`"k%04d"`, i))
	}
	big := `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `]}`
	schema := func(n int) string {
		var uses []string
		for i := 0; i < n; i++ {
			uses = append(uses, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/big","minProperties":%d}`, i, i))
		}
		return `{"$defs":{"big":` + big + `},"type":"object","properties":{` + strings.Join(uses, ",") + `}}`
	}
	if g, err := FromSchema([]byte(schema(2))); err != nil || len(g) > MaxGrammarBytes/4 {
		t.Fatalf("two uses: %d bytes of grammar, %v", len(g), err)
	}
	_, err := FromSchema([]byte(schema(100)))
	wantLimit(t, err, "grammar for this schema", 0, MaxGrammarBytes)
}

// CheckLimits finds an over-long enum or anyOf/oneOf/allOf list anywhere
// in a document, before any conversion, and passes what is within them.
func TestCheckLimits(t *testing.T) {
	if err := CheckLimits([]byte(enumSchema(MaxEnumValues))); err != nil {
		t.Fatal(err)
	}
	wantLimit(t, CheckLimits([]byte(enumSchema(MaxEnumValues+1))), "enum", MaxEnumValues+1, MaxEnumValues)
	// Behind a keyword the grammar refuses ("not"), still found.
	wantLimit(t, CheckLimits([]byte(`{"not":{"type":"null"},"properties":{"a":{"items":`+anyOfSchema("oneOf", MaxBranches+1)+`}}}`)),
		"oneOf", MaxBranches+1, MaxBranches)
	pad := strings.Repeat(" ", MaxSchemaBytes)
	s := `{"description":"` + pad + `"}`
	wantLimit(t, CheckLimits([]byte(s)), "JSON schema", len(s), MaxSchemaBytes)
	if err := CheckLimits([]byte(`{"a":`)); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
}
