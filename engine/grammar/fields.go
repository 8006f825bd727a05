package grammar

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Fields is how a Branch writes an object value as key-value fields in a
// model's own markup instead of JSON (Qwen3-Coder's
// "<parameter=KEY>\nVALUE\n</parameter>\n", GLM's
// "<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>", MiniMax's
// `<parameter name="KEY">VALUE</parameter>`, …): each property is KeyOpen,
// its name, KeyClose, Gap, then StringOpen and a string's raw text (any
// text without Close), or JSONOpen and a JSON value valid against the
// property's schema, then Close. Sep comes before each field and before
// the branch's suffix.
//
// As llama.cpp builds these grammars: a property whose schema allows
// only strings is raw text (one of its enum or const values where it
// lists them), one whose schema allows no string a JSON value, and one
// that allows both either (where StringOpen and JSONOpen are the same
// text, the raw text alone, which takes any JSON text too). Required
// properties come in any order (up to MaxPermuted of them; beyond that in
// the schema's order), then the optional ones, each any number of times.
// A schema without properties takes any key with a raw value (none where
// additionalProperties is false).
type Fields struct {
	KeyOpen, KeyClose string
	// Gap is GBNF between KeyClose and the value's open (e.g. `"\n"?`);
	// "" for none.
	Gap string
	// StringOpen comes before a raw string value, JSONOpen before a
	// JSON value (DeepSeek's DSML: ` string="true">` and ` string="false">`).
	StringOpen, JSONOpen string
	// JSONOpens, when set, replaces JSONOpen with an open for each JSON
	// type a value may have ("number" for integers too, "boolean",
	// "null", "object", "array"): Kimi K3's type="number" attribute. A
	// property that allows several such types takes each, its open
	// before a value of that type.
	JSONOpens map[string]string
	// Close ends a value; it must be valid UTF-8 and not empty.
	Close string
	// Sep is GBNF before each field and before the suffix (e.g. `"\n"?`);
	// "" for none.
	Sep string
}

// MaxPermuted bounds the required properties a Fields branch takes in
// any order (as llama.cpp's permute): their subsets are 2^n rules.
const MaxPermuted = 6

// typeSet is a set of JSON types, one bit each.
type typeSet uint8

const (
	tString typeSet = 1 << iota
	tNumber
	tBoolean
	tNull
	tObject
	tArray
	tAny = tString | tNumber | tBoolean | tNull | tObject | tArray
)

var typeBits = map[string]typeSet{
	"string": tString, "number": tNumber, "integer": tNumber, "boolean": tBoolean,
	"null": tNull, "object": tObject, "array": tArray,
}

// valueTypes is the set of types a schema's values may have: from its
// type (or the kinds its keywords imply), const, enum, the branches of
// anyOf/oneOf (all of allOf) and the target of $ref; every type where
// it says nothing.
func (c *converter) valueTypes(raw json.RawMessage, depth int) typeSet {
	if depth > 32 {
		return tAny
	}
	s, err := decode(raw)
	if err != nil {
		return tAny
	}
	set := tAny
	if v, ok := s["const"]; ok {
		set &= valueType(v)
	}
	if v, ok := s["enum"]; ok {
		var vals []json.RawMessage
		if json.Unmarshal(v, &vals) == nil {
			var e typeSet
			for _, x := range vals {
				e |= valueType(x)
			}
			set &= e
		}
	}
	if types, err := typesOf(s); err == nil && len(types) > 0 {
		var t typeSet
		for _, x := range types {
			t |= typeBits[x]
		}
		set &= t
	}
	if r, ok := s["$ref"]; ok {
		var ptr string
		if json.Unmarshal(r, &ptr) == nil {
			if target, err := c.resolve(ptr); err == nil {
				set &= c.valueTypes(target, depth+1)
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		var branches []json.RawMessage
		if json.Unmarshal(s[key], &branches) == nil && len(branches) > 0 {
			var u typeSet
			for _, b := range branches {
				u |= c.valueTypes(b, depth+1)
			}
			set &= u
		}
	}
	var all []json.RawMessage
	if json.Unmarshal(s["allOf"], &all) == nil {
		for _, b := range all {
			set &= c.valueTypes(b, depth+1)
		}
	}
	return set
}

// valueType is the type of a JSON value.
func valueType(v json.RawMessage) typeSet {
	for t, bit := range typeBits {
		if t != "integer" && hasType(v, t) {
			return bit
		}
	}
	return 0
}

// StringProperties are the properties of an object schema (a tool's
// parameters) whose schema allows only strings: what a call's key-value
// markup writes as raw text, to be read back as a string whatever it
// looks like ("18" stays "18"). Local references ("#/$defs/…") are
// followed; a schema that is not an object with properties has none.
func StringProperties(schema []byte) map[string]bool {
	c := newConverter(schema)
	keys, props := objectProperties(c, schema)
	out := map[string]bool{}
	for _, k := range keys {
		if c.valueTypes(props[k], 0) == tString {
			out[k] = true
		}
	}
	return out
}

// objectProperties are the properties of an object schema in the
// schema's order (following a top-level $ref); none where it has none.
func objectProperties(c *converter, raw json.RawMessage) ([]string, map[string]json.RawMessage) {
	s, err := decode(raw)
	if err != nil {
		return nil, nil
	}
	if r, ok := s["$ref"]; ok && len(s) == 1 {
		var ptr string
		if json.Unmarshal(r, &ptr) == nil {
			if target, err := c.resolve(ptr); err == nil {
				if s, err = decode(target); err != nil {
					return nil, nil
				}
			}
		}
	}
	p, ok := s["properties"]
	if !ok {
		return nil, nil
	}
	keys, props, err := members(p)
	if err != nil {
		return nil, nil
	}
	return keys, props
}

// fieldsValue is GBNF for the object of schema raw written as f's
// fields, before the branch's suffix.
func (c *converter) fieldsValue(f *Fields, raw json.RawMessage) (string, error) {
	if f.Close == "" || !utf8.ValidString(f.Close) || f.KeyClose == "" || !utf8.ValidString(f.KeyClose) {
		return "", fmt.Errorf("fields: a close that is empty or not UTF-8")
	}
	sep := func(item string) string {
		if f.Sep == "" {
			return item
		}
		return "(" + f.Sep + ") " + item
	}
	seq := func(items ...string) string {
		var out []string
		for _, it := range items {
			if it != "" && it != `""` {
				out = append(out, it)
			}
		}
		return strings.Join(out, " ")
	}
	gap := ""
	if f.Gap != "" {
		gap = "(" + f.Gap + ")"
	}
	end := ""
	if f.Sep != "" {
		end = "(" + f.Sep + ")"
	}
	keys, props := objectProperties(c, raw)
	if len(keys) == 0 {
		s, _ := decode(raw)
		if v, ok := s["additionalProperties"]; ok && string(v) == "false" {
			return seq(end), nil
		}
		// Any key (without the first character of its close, which the
		// parsers cut it at), any raw value.
		k, _ := utf8.DecodeRuneInString(f.KeyClose)
		key := fmt.Sprintf("[^%s]+", classChar(k))
		item := seq(literal(f.KeyOpen), key, literal(f.KeyClose), gap, literal(f.StringOpen), c.until(f.Close), literal(f.Close))
		return seq(c.rules.add("field-any", sep(item))+"*", end), nil
	}
	var req []string
	if s, err := decode(raw); err == nil {
		json.Unmarshal(s["required"], &req)
	}
	var required, optional []string
	for j, k := range keys {
		types := c.valueTypes(props[k], 0)
		if types == 0 {
			types = tAny
		}
		head := seq(literal(f.KeyOpen+k+f.KeyClose), gap)
		var alts []string
		if types&tString != 0 {
			alts = append(alts, seq(literal(f.StringOpen), c.rawString(props[k], f.Close, types)))
		}
		switch {
		case types&^tString != 0 && f.JSONOpens != nil:
			typed, err := c.typedValues(f.JSONOpens, props[k], types&^tString)
			if err != nil {
				return "", fmt.Errorf("property %q: %w", k, err)
			}
			alts = append(alts, typed...)
		case types&^tString != 0 && (types == types&^tString || f.StringOpen != f.JSONOpen):
			v, err := c.atom(props[k], "field-value", nil)
			if err != nil {
				return "", fmt.Errorf("property %q: %w", k, err)
			}
			alts = append(alts, seq(literal(f.JSONOpen), v))
		}
		value := alts[0]
		if len(alts) > 1 {
			value = "(" + strings.Join(alts, " | ") + ")"
		}
		rule := c.rules.add(fmt.Sprintf("field-%d", j), sep(seq(head, value, literal(f.Close))))
		if slices.Contains(req, k) {
			required = append(required, rule)
		} else {
			optional = append(optional, rule)
		}
		if err := c.checkGrammarSize(); err != nil {
			return "", err
		}
	}
	parts := []string{c.permute(required)}
	if len(optional) > 0 {
		parts = append(parts, "("+strings.Join(optional, " | ")+")*")
	}
	parts = append(parts, end)
	return seq(parts...), nil
}

// jsonTypes are the JSON types of Fields.JSONOpens, with their bits.
var jsonTypes = []struct {
	name string
	bit  typeSet
}{{"number", tNumber}, {"boolean", tBoolean}, {"null", tNull}, {"object", tObject}, {"array", tArray}}

// typedValues is GBNF for a value of schema raw of each of types (no
// string), after the type's open in opens: the schema itself where it
// allows one type, else the schema with its type narrowed to that one
// (allOf), so that each value is still valid against the whole.
func (c *converter) typedValues(opens map[string]string, raw json.RawMessage, types typeSet) ([]string, error) {
	var alts []string
	for _, t := range jsonTypes {
		if types&t.bit == 0 {
			continue
		}
		open, ok := opens[t.name]
		if !ok {
			return nil, fmt.Errorf("fields: no open for a %s value", t.name)
		}
		schema := raw
		if types != t.bit {
			schema = json.RawMessage(fmt.Sprintf(`{"allOf": [%s, {"type": %q}]}`, raw, t.name))
		}
		v, err := c.atom(schema, "field-value", nil)
		if err != nil {
			return nil, err
		}
		alts = append(alts, literal(open)+" "+v)
	}
	return alts, nil
}

// permute is GBNF for items in any order, each once (a rule per subset,
// as llama.cpp's permute), or in order when there are more than
// MaxPermuted of them.
func (c *converter) permute(items []string) string {
	if len(items) <= 1 || len(items) > MaxPermuted {
		return strings.Join(items, " ")
	}
	memo := map[uint32]string{}
	var rest func(mask uint32) string
	rest = func(mask uint32) string {
		if name, ok := memo[mask]; ok {
			return name
		}
		var alts []string
		for i, it := range items {
			bit := uint32(1) << i
			if mask&bit == 0 {
				continue
			}
			if r := mask &^ bit; r != 0 {
				alts = append(alts, it+" "+rest(r))
			} else {
				alts = append(alts, it)
			}
		}
		if len(alts) == 1 {
			memo[mask] = alts[0]
			return alts[0]
		}
		name := c.rules.add("fields", strings.Join(alts, " | "))
		memo[mask] = name
		return name
	}
	return rest(uint32(1)<<len(items) - 1)
}

// rawString is GBNF for a string property's raw text before close: one
// of its values where the schema lists them (only strings, none holding
// close), else any text without close.
func (c *converter) rawString(raw json.RawMessage, close string, types typeSet) string {
	if types == tString {
		if vals, ok := c.stringValues(raw, 0); ok {
			var texts []string
			for _, v := range vals {
				if !overlaps(v, close) {
					texts = append(texts, literal(v))
				}
			}
			if len(texts) > 0 && c.countAlternatives(len(texts)) == nil {
				return "(" + strings.Join(dedup(texts), " | ") + ")"
			}
		}
	}
	return c.until(close)
}

// overlaps tells whether v followed by close holds close before its end.
func overlaps(v, close string) bool {
	return strings.Index(v+close, close) != len(v)
}

// stringValues are the values a schema lists (const, enum, through a
// $ref), when it lists them and they are all strings.
func (c *converter) stringValues(raw json.RawMessage, depth int) ([]string, bool) {
	s, err := decode(raw)
	if err != nil || depth > 32 {
		return nil, false
	}
	var vals []json.RawMessage
	if v, ok := s["const"]; ok {
		vals = []json.RawMessage{v}
	} else if v, ok := s["enum"]; ok {
		if json.Unmarshal(v, &vals) != nil {
			return nil, false
		}
	} else if r, ok := s["$ref"]; ok {
		var ptr string
		if json.Unmarshal(r, &ptr) != nil {
			return nil, false
		}
		target, err := c.resolve(ptr)
		if err != nil {
			return nil, false
		}
		return c.stringValues(target, depth+1)
	} else {
		return nil, false
	}
	var out []string
	for _, v := range vals {
		var str string
		if json.Unmarshal(v, &str) != nil {
			return nil, false
		}
		out = append(out, str)
	}
	return out, len(out) > 0
}

// until is a rule for any text (possibly empty) that, followed by close,
// holds close only at its end: the raw text of a value in markup. It is a
// rule per state of a matcher of close (its longest prefix just read):
// each character leads to the next state, none to the full close, and
// the text may end in the states from which close first matches at its
// own end.
func (c *converter) until(close string) string {
	key := "until:" + close
	if name, ok := c.refs[key]; ok {
		return name
	}
	rs := []rune(close)
	n := len(rs)
	// next(i, r): the state after reading r in state i.
	next := func(i int, r rune) int {
		s := append(slices.Clone(rs[:i]), r)
		for k := min(len(s), n); k > 0; k-- {
			if slices.Equal(s[len(s)-k:], rs[:k]) {
				return k
			}
		}
		return 0
	}
	alphabet := slices.Compact(slices.Sorted(slices.Values(rs)))
	names := make([]string, n)
	for i := range names {
		names[i] = c.rules.fresh("until")
	}
	c.refs[key] = names[0]
	c.refOrder = append(c.refOrder, key)
	for i := range n {
		var alts []string
		var excl strings.Builder
		for _, r := range alphabet {
			j := next(i, r)
			if j == 0 {
				continue
			}
			excl.WriteString(classChar(r))
			if j < n {
				alts = append(alts, literal(string(r))+" "+names[j])
			}
		}
		alts = append([]string{fmt.Sprintf("[^%s] %s", excl.String(), names[0])}, alts...)
		// May the text end here: does close, read from state i, first
		// match at its end?
		j, ok := i, true
		for k, r := range rs {
			if j = next(j, r); j == n && k < n-1 {
				ok = false
				break
			}
		}
		body := strings.Join(alts, " | ")
		if ok {
			body = "| " + body // the empty alternative first, as ws's
		}
		c.rules.define(names[i], body)
	}
	return names[0]
}
