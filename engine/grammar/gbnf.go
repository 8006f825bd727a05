package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxRepeat is llama.cpp's limit on one {m,n} repetition count
// (MAX_REPETITION_THRESHOLD in llama-grammar.cpp); larger counts are
// built from nested repetitions.
const maxRepeat = 2000

// maxDigits bounds the integral digits of generated numbers, so a model
// cannot emit digits forever (16 digits keep integers exact in a float64
// up to 9999999999999999 ≈ 2^53).
const maxDigits = 16

// primitives are the shared rules, emitted only when used. Their names are
// reserved: rules made from schema names never take them.
var primitives = map[string]string{
	// At most one space, or a newline and up to 20 spaces/tabs of
	// indentation: enough for pretty-printed JSON, never an endless run.
	"ws":      `| " " | "\n" [ \t]{0,20}`,
	"value":   `object | array | string | number | boolean | null`,
	"object":  `"{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* ws )? "}"`,
	"array":   `"[" ws ( value ( ws "," ws value )* ws )? "]"`,
	"string":  `"\"" char* "\""`,
	"char":    `[^"\\\x00-\x1F\x7F] | "\\" ( ["\\/bfnrt] | "u" hex-nonsurrogate )`,
	"number":  `integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?`,
	"integer": `"-"? ( "0" | [1-9] [0-9]{0,15} )`,
	"boolean": `"true" | "false"`,
	"null":    `"null"`,
	// \u escapes for the BMP less the surrogates: a pair of escapes would
	// count as two characters for minLength but is one code point.
	"hex-nonsurrogate": `[0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}`,
	// Formats (RFC 3339 as JSON Schema uses it). Days are checked against
	// the month, February 29 against the year.
	"date":      `[0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02" "-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ) | leap-year "-02-29"`,
	"leap-year": `[0-9]{2} ( "0" [48] | [2468] [048] | [13579] [26] ) | ( [02468] [048] | [13579] [26] ) "00"`,
	"time":      `( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`,
	"date-time": `date "T" time`,
	"uuid":      `[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}`,
}

// primitiveDeps lists the rules each primitive refers to.
var primitiveDeps = map[string][]string{
	"value":     {"object", "array", "string", "number", "boolean", "null"},
	"object":    {"ws", "string", "value"},
	"array":     {"ws", "value"},
	"string":    {"char"},
	"char":      {"hex-nonsurrogate"},
	"number":    {"integer"},
	"date-time": {"date", "time"},
	"date":      {"leap-year"},
}

// primitiveOrder fixes the order primitives are written in.
var primitiveOrder = []string{
	"value", "object", "array", "string", "char", "hex-nonsurrogate", "number", "integer",
	"boolean", "null", "date-time", "date", "leap-year", "time", "uuid", "ws",
}

// rules collects a grammar: named rules in definition order, with
// identical bodies shared.
type rules struct {
	names  []string          // defined schema rules, in order
	body   map[string]string // name → body
	taken  map[string]bool   // names used or reserved
	byBody map[string]string // body → name, for sharing
	prims  map[string]bool   // primitives used
	size   int               // bytes the defined rules take in the grammar
	// next is, per base name, the suffix fresh tries first: every
	// lower one is taken (names are never given back), so many rules
	// from one hint are named in linear time.
	next map[string]int
}

func newRules() *rules {
	r := &rules{body: map[string]string{}, taken: map[string]bool{}, byBody: map[string]string{}, prims: map[string]bool{}, next: map[string]int{}}
	for name := range primitives {
		r.taken[name] = true
	}
	return r
}

// prim marks a primitive rule (and those it uses) as used and returns its name.
func (r *rules) prim(name string) string {
	if _, ok := primitives[name]; !ok {
		panic("grammar: no primitive " + name)
	}
	if !r.prims[name] {
		r.prims[name] = true
		for _, d := range primitiveDeps[name] {
			r.prim(d)
		}
	}
	return name
}

// fresh reserves a new rule name derived from hint.
func (r *rules) fresh(hint string) string {
	base := ruleName(hint)
	name := base
	for i := max(2, r.next[base]); r.taken[name]; i++ {
		name = base + "-" + strconv.Itoa(i)
		r.next[base] = i + 1
	}
	r.taken[name] = true
	return name
}

// define sets the body of a reserved name.
func (r *rules) define(name, body string) {
	r.names = append(r.names, name)
	r.body[name] = body
	r.size += ruleBytes(name, body)
	if _, ok := r.byBody[body]; !ok {
		r.byBody[body] = name
	}
}

// ruleBytes is the size of one rule's line in the grammar.
func ruleBytes(name, body string) int { return len(name) + len(" ::= ") + len(body) + 1 }

// add returns a rule with this body: an existing one with the same body,
// or a new one named after hint.
func (r *rules) add(hint, body string) string {
	if name, ok := r.byBody[body]; ok {
		return name
	}
	name := r.fresh(hint)
	r.define(name, body)
	return name
}

// String writes the grammar: the schema rules in order (root first), then
// the primitives used.
func (r *rules) String() string {
	var b strings.Builder
	if body, ok := r.body["root"]; ok {
		fmt.Fprintf(&b, "root ::= %s\n", body)
	}
	for _, name := range r.names {
		if name != "root" {
			fmt.Fprintf(&b, "%s ::= %s\n", name, r.body[name])
		}
	}
	for _, name := range primitiveOrder {
		if r.prims[name] {
			fmt.Fprintf(&b, "%s ::= %s\n", name, primitives[name])
		}
	}
	return b.String()
}

// ruleName turns s into a GBNF identifier ([a-zA-Z0-9-]+): other
// characters become '-', runs of '-' collapse, and long names are cut.
func ruleName(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		dash = false
		b.WriteRune(c)
	}
	name := strings.TrimRight(b.String(), "-")
	if len(name) > 60 {
		name = strings.TrimRight(name[:60], "-")
	}
	if name == "" {
		name = "r"
	}
	return name
}

// isIdent reports whether s is a single GBNF rule name.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Literal is s as a GBNF string literal matching exactly the bytes of s
// (for grammars written around the converter's, e.g. a model's own call
// syntax).
func Literal(s string) string { return literal(s) }

// literal quotes s as a GBNF string literal matching exactly the bytes of s.
func literal(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02X`, c)
		case c == utf8.RuneError:
			b.WriteString(`\uFFFD`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// classChar writes c for use inside a GBNF character class.
func classChar(c rune) string {
	switch {
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
		return string(c)
	case c < 0x80 && c != 0x7f && c >= 0x20 && !strings.ContainsRune(`\[]^-"`, c):
		return string(c)
	case c <= 0xff:
		return fmt.Sprintf(`\x%02X`, c)
	case c <= 0xffff:
		return fmt.Sprintf(`\u%04X`, c)
	default:
		return fmt.Sprintf(`\U%08X`, c)
	}
}

// repeat returns x repeated between min and max times (max < 0: no upper
// bound). x must be a single GBNF item (a name, literal, class or group).
// Counts beyond llama.cpp's limit are split into nested repetitions.
func repeat(x string, min, max int) string {
	if max >= 0 && max < min {
		max = min
	}
	if min > maxRepeat {
		// x{min,...} = (x{1000}){min/1000} x{min%1000,...}, nested again
		// while min/1000 is over the limit.
		const k = 1000
		head := repeat("( "+repeat(x, k, k)+" )", min/k, min/k)
		rmax := -1
		if max >= 0 {
			rmax = max - (min/k)*k
		}
		rest := repeat(x, min%k, rmax)
		if rest == "" {
			return head
		}
		return head + " " + rest
	}
	switch {
	case max < 0:
		switch min {
		case 0:
			return x + "*"
		case 1:
			return x + "+"
		}
		return fmt.Sprintf("%s{%d,}", x, min)
	case max == 0:
		return ""
	case max > maxRepeat:
		// Up to max: fewer than q*k copies (any remainder below k), or
		// exactly q*k plus at most r more.
		const k = 1000
		q, r := max/k, max%k
		block := "( " + repeat(x, k, k) + " )"
		short := repeat(x, 0, k-1)
		if q > 1 {
			short = repeat(block, 0, q-1) + " " + short
		}
		long := repeat(block, q, q)
		if r > 0 {
			long += " " + repeat(x, 0, r)
		}
		opt := "( " + short + " | " + long + " )"
		if min == 0 {
			return opt
		}
		// min <= maxRepeat here; the mandatory part shortens what may follow.
		return repeat(x, min, min) + " " + repeat(x, 0, max-min)
	case min == max:
		if min == 1 {
			return x
		}
		return fmt.Sprintf("%s{%d}", x, min)
	case min == 0 && max == 1:
		return x + "?"
	}
	return fmt.Sprintf("%s{%d,%d}", x, min, max)
}
