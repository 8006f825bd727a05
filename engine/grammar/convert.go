package grammar

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// unsatError reports a schema that no value satisfies.
type unsatError struct{ msg string }

func (e *unsatError) Error() string { return e.msg }

func unsat(format string, args ...any) error {
	return &unsatError{fmt.Sprintf(format, args...)}
}

func isUnsat(err error) bool {
	var u *unsatError
	return errors.As(err, &u)
}

// try runs f; if f finds its schema unsatisfiable, the rules and
// references it made are taken back, so that the caller can leave that
// part out.
func (c *converter) try(f func() (string, error)) (string, error) {
	r := c.rules
	nRules, nRefs := len(r.names), len(c.refOrder)
	out, err := f()
	if isUnsat(err) {
		for _, name := range r.names[nRules:] {
			if r.byBody[r.body[name]] == name {
				delete(r.byBody, r.body[name])
			}
			r.size -= ruleBytes(name, r.body[name])
			delete(r.body, name)
		}
		r.names = r.names[:nRules]
		for _, ptr := range c.refOrder[nRefs:] {
			delete(c.refs, ptr)
		}
		c.refOrder = c.refOrder[:nRefs]
	}
	return out, err
}

// schema is one JSON Schema object, keyword → raw value.
type schema map[string]json.RawMessage

// annotations are keywords that never constrain a value.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true, "$comment": true,
	"$defs": true, "definitions": true, "$vocabulary": true, "title": true, "description": true,
	"default": true, "examples": true, "example": true, "readOnly": true, "writeOnly": true,
	"deprecated": true, "contentEncoding": true, "contentMediaType": true, "contentSchema": true,
	"discriminator": true, "externalDocs": true, "xml": true,
}

// Keywords that tell a schema's kind when it has no "type".
var (
	objectKeys = []string{"properties", "additionalProperties", "unevaluatedProperties", "required",
		"minProperties", "maxProperties", "patternProperties", "propertyNames"}
	arrayKeys  = []string{"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains"}
	stringKeys = []string{"minLength", "maxLength", "pattern"}
	numberKeys = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)

// knownFormats are the string formats with a grammar of their own.
var knownFormats = map[string]bool{"date": true, "date-time": true, "time": true, "uuid": true}

type converter struct {
	doc   json.RawMessage   // the whole schema, for $ref
	rules *rules            //
	refs  map[string]string // $ref pointer → rule name
	// refOrder lists the keys of refs in the order added, for rollback.
	refOrder []string
	depth    int // schemaBody nesting
	alts     int // enum values and anyOf/oneOf branches converted (MaxAlternatives)
}

func newConverter(doc json.RawMessage) *converter {
	return &converter{doc: doc, rules: newRules(), refs: map[string]string{}}
}

// ref returns the rule for a $ref target, converting it on first use.
// left lists the references entered since the last terminal: meeting one
// of them again is a cycle that consumes no input (left recursion).
func (c *converter) ref(ptr string, left []string) (string, error) {
	if name, ok := c.refs[ptr]; ok {
		if slices.Contains(left, ptr) {
			return "", fmt.Errorf("$ref %q: circular reference that consumes no input", ptr)
		}
		return name, nil
	}
	target, err := c.resolve(ptr)
	if err != nil {
		return "", err
	}
	hint := "root"
	if i := strings.LastIndexByte(ptr, '/'); i >= 0 {
		hint = ptr[i+1:]
	}
	name := c.rules.fresh(hint)
	c.refs[ptr] = name
	c.refOrder = append(c.refOrder, ptr)
	body, err := c.body(target, name, append(slices.Clip(left), ptr))
	if err != nil {
		return "", err
	}
	c.rules.define(name, body)
	return name, nil
}

// resolve follows a JSON pointer fragment ("#", "#/$defs/a") in the document.
func (c *converter) resolve(ptr string) (json.RawMessage, error) {
	if !strings.HasPrefix(ptr, "#") {
		return nil, fmt.Errorf("$ref %q: only references within the schema (\"#/…\") are supported", ptr)
	}
	frag, err := url.PathUnescape(ptr[1:])
	if err != nil {
		return nil, fmt.Errorf("$ref %q: %v", ptr, err)
	}
	cur := c.doc
	if frag == "" {
		return cur, nil
	}
	if frag[0] != '/' {
		return nil, fmt.Errorf("$ref %q: anchors are not supported, only JSON pointers", ptr)
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var obj map[string]json.RawMessage
		var arr []json.RawMessage
		switch {
		case json.Unmarshal(cur, &obj) == nil && obj != nil:
			v, ok := obj[tok]
			if !ok {
				return nil, fmt.Errorf("$ref %q: %q not found", ptr, tok)
			}
			cur = v
		case json.Unmarshal(cur, &arr) == nil && arr != nil:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(arr) {
				return nil, fmt.Errorf("$ref %q: no element %q", ptr, tok)
			}
			cur = arr[i]
		default:
			return nil, fmt.Errorf("$ref %q: %q not found", ptr, tok)
		}
	}
	return cur, nil
}

// atom returns a rule name for raw: a primitive, a shared rule with the
// same body, or a new rule named after hint.
func (c *converter) atom(raw json.RawMessage, hint string, left []string) (string, error) {
	body, err := c.body(raw, hint, left)
	if err != nil {
		return "", err
	}
	if isIdent(body) {
		return body, nil
	}
	return c.rules.add(hint, body), nil
}

// decode parses a schema: true is the empty schema, false an error.
func decode(raw json.RawMessage) (schema, error) {
	raw = bytes.TrimSpace(raw)
	switch string(raw) {
	case "true":
		return schema{}, nil
	case "false":
		return nil, unsat("schema false matches no value")
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil || s == nil {
		return nil, fmt.Errorf("a schema must be an object or a boolean, not %s", truncate(string(raw), 40))
	}
	return s, nil
}

// body returns the GBNF alternatives matching the values of a schema.
func (c *converter) body(raw json.RawMessage, hint string, left []string) (string, error) {
	s, err := decode(raw)
	if err != nil {
		return "", err
	}
	return c.schemaBody(s, hint, left)
}

// merged returns the rule for a schema made by merging (allOf, $ref with
// siblings, anyOf branches with siblings). Like $ref targets, merged
// schemas are converted once: a recursive $ref inlined by a merge comes
// back as the same merged schema, which then refers to its rule.
func (c *converter) merged(s schema, hint string, left []string) (string, error) {
	key := "merged:" + string(raw(s))
	if name, ok := c.refs[key]; ok {
		if slices.Contains(left, key) {
			return "", errors.New("circular reference that consumes no input")
		}
		return name, nil
	}
	name := c.rules.fresh(hint)
	c.refs[key] = name
	c.refOrder = append(c.refOrder, key)
	body, err := c.schemaBody(s, name, append(slices.Clip(left), key))
	if err != nil {
		return "", err
	}
	c.rules.define(name, body)
	return name, nil
}

// maxNesting bounds the nesting of schemas being converted, a guard
// against merges that keep growing.
const maxNesting = 500

func (c *converter) schemaBody(s schema, hint string, left []string) (string, error) {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxNesting {
		return "", errors.New("schema nested too deeply (a recursive allOf or anyOf?)")
	}
	if err := c.checkGrammarSize(); err != nil {
		return "", err
	}
	if err := checkUnsupported(s); err != nil {
		return "", err
	}
	if r, ok := s["$ref"]; ok {
		var ptr string
		if err := json.Unmarshal(r, &ptr); err != nil {
			return "", fmt.Errorf("$ref must be a string")
		}
		if len(constraints(s, "$ref")) == 0 {
			return c.ref(ptr, left)
		}
		// Sibling keywords apply too: merge them with the target.
		merged, err := c.mergeAll([]json.RawMessage{raw(s)})
		if err != nil {
			return "", err
		}
		return c.merged(merged, hint, left)
	}
	if _, ok := s["allOf"]; ok {
		merged, err := c.mergeAll([]json.RawMessage{raw(s)})
		if err != nil {
			return "", err
		}
		return c.merged(merged, hint, left)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if _, ok := s[key]; ok {
			return c.anyOf(s, key, hint, left)
		}
	}
	if v, ok := s["const"]; ok {
		return literal(compact(v)), nil
	}
	types, err := typesOf(s)
	if err != nil {
		return "", err
	}
	if v, ok := s["enum"]; ok {
		return c.enumBody(v, types, hint)
	}
	if len(types) == 0 {
		return c.rules.prim("value"), nil
	}
	var alts []string
	for _, t := range types {
		b, err := c.typeBody(t, s, hint)
		if err != nil {
			return "", err
		}
		if len(types) > 1 && !isIdent(b) {
			b = c.rules.add(hint+"-"+t, b)
		}
		alts = append(alts, b)
	}
	return strings.Join(alts, " | "), nil
}

// raw encodes a schema back to JSON.
func raw(s schema) json.RawMessage {
	b, err := json.Marshal(map[string]json.RawMessage(s))
	if err != nil {
		panic(err) // values came from valid JSON
	}
	return b
}

// constraints returns the keywords of s other than annotations and except.
func constraints(s schema, except ...string) []string {
	var keys []string
	for k := range s {
		if !annotations[k] && !slices.Contains(except, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// checkUnsupported rejects keywords whose constraint the grammar cannot
// express and which, ignored, could let invalid output through.
func checkUnsupported(s schema) error {
	for _, k := range []string{"not", "dependentRequired", "dependentSchemas", "dependencies",
		"contains", "$dynamicRef", "$recursiveRef"} {
		if _, ok := s[k]; ok {
			return fmt.Errorf("keyword %q is not supported", k)
		}
	}
	if _, ok := s["if"]; ok {
		_, then := s["then"]
		_, els := s["else"]
		if then || els {
			return errors.New(`keyword "if" (with then/else) is not supported`)
		}
	}
	if v, ok := s["patternProperties"]; ok && compact(v) != "{}" {
		return errors.New(`keyword "patternProperties" is not supported`)
	}
	return nil
}

// anyOf converts anyOf/oneOf: one alternative per branch, each merged
// with the sibling keywords.
func (c *converter) anyOf(s schema, key, hint string, left []string) (string, error) {
	var branches []json.RawMessage
	if err := json.Unmarshal(s[key], &branches); err != nil || len(branches) == 0 {
		return "", fmt.Errorf("%s must be a non-empty array of schemas", key)
	}
	if err := c.countBranches(key, len(branches)); err != nil {
		return "", err
	}
	rest := schema{}
	for k, v := range s {
		if k != key && !annotations[k] {
			rest[k] = v
		}
	}
	if len(rest) == 0 {
		// A list of constants is an enum: written as one.
		texts, ok, err := c.constBranches(branches)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		if ok {
			return c.alternatives(hint, texts), nil
		}
	}
	var alts []string
	seen := map[string]bool{}
	var firstErr error
	for i, b := range branches {
		h := fmt.Sprintf("%s-%d", hint, i)
		a, err := c.try(func() (string, error) {
			if len(rest) == 0 {
				return c.atom(b, h, left)
			}
			m, err := c.mergeAll([]json.RawMessage{raw(rest), b})
			if err != nil {
				return "", err
			}
			return c.merged(m, h, left)
		})
		if isUnsat(err) {
			// A branch no value satisfies (say, from multiplying out
			// anyOf lists in allOf) adds nothing.
			firstErr = cmp.Or(firstErr, fmt.Errorf("%s[%d]: %w", key, i, err))
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		if !seen[a] {
			seen[a] = true
			alts = append(alts, a)
		}
	}
	if len(alts) == 0 {
		return "", firstErr
	}
	return strings.Join(alts, " | "), nil
}

// typesOf lists the types a schema allows: its "type" (plus null when
// nullable), or the kinds its keywords imply, or none for any value.
func typesOf(s schema) ([]string, error) {
	var types []string
	if v, ok := s["type"]; ok {
		var one string
		if json.Unmarshal(v, &one) == nil {
			types = []string{one}
		} else if err := json.Unmarshal(v, &types); err != nil {
			return nil, errors.New(`"type" must be a string or an array of strings`)
		}
		if len(types) == 0 {
			return nil, unsat(`"type" is an empty array: no value matches`)
		}
		for _, t := range types {
			switch t {
			case "string", "number", "integer", "boolean", "null", "object", "array":
			default:
				return nil, fmt.Errorf("unknown type %q", t)
			}
		}
	} else {
		has := func(keys []string) bool {
			return slices.ContainsFunc(keys, func(k string) bool { _, ok := s[k]; return ok })
		}
		if has(objectKeys) {
			types = append(types, "object")
		}
		if has(arrayKeys) {
			types = append(types, "array")
		}
		var format string
		json.Unmarshal(s["format"], &format)
		if has(stringKeys) || knownFormats[format] {
			types = append(types, "string")
		}
		if has(numberKeys) {
			types = append(types, "number")
		}
	}
	var nullable bool
	json.Unmarshal(s["nullable"], &nullable)
	if nullable && len(types) > 0 && !slices.Contains(types, "null") {
		types = append(types, "null")
	}
	return slices.Compact(types), nil
}

// enumBody lists the enum values allowed by the types (all when none),
// each once (as a trie when there are many: see alternatives).
func (c *converter) enumBody(v json.RawMessage, types []string, hint string) (string, error) {
	vals, err := c.enumValues(v)
	if err != nil {
		return "", err
	}
	var texts []string
	seen := map[string]bool{}
	for _, val := range vals {
		if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return hasType(val, t) }) {
			continue
		}
		if t := compact(val); !seen[t] {
			seen[t] = true
			texts = append(texts, t)
		}
	}
	if len(texts) == 0 {
		return "", unsat(`"enum" has no value of the schema's type`)
	}
	return c.alternatives(hint, texts), nil
}

// enumValues decodes an enum's values, refusing more than MaxEnumValues
// and counting them against MaxAlternatives.
func (c *converter) enumValues(v json.RawMessage) ([]json.RawMessage, error) {
	var vals []json.RawMessage
	if err := json.Unmarshal(v, &vals); err != nil {
		return nil, errors.New(`"enum" must be an array`)
	}
	if len(vals) > MaxEnumValues {
		return nil, &LimitError{What: "enum", Unit: "values", Value: len(vals), Max: MaxEnumValues}
	}
	return vals, c.countAlternatives(len(vals))
}

// hasType reports whether a JSON value is of a JSON Schema type.
func hasType(v json.RawMessage, t string) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case 'n':
		return t == "null"
	case 't', 'f':
		return t == "boolean"
	case '"':
		return t == "string"
	case '{':
		return t == "object"
	case '[':
		return t == "array"
	}
	if t == "number" {
		return true
	}
	if t == "integer" {
		f, err := strconv.ParseFloat(string(v), 64)
		return err == nil && f == math.Trunc(f)
	}
	return false
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}

func (c *converter) typeBody(t string, s schema, hint string) (string, error) {
	switch t {
	case "null":
		return c.rules.prim("null"), nil
	case "boolean":
		return c.rules.prim("boolean"), nil
	case "string":
		return c.stringBody(s)
	case "integer", "number":
		return c.numberBody(s, t == "integer")
	case "object":
		return c.objectBody(s, hint)
	case "array":
		return c.arrayBody(s, hint)
	}
	return "", fmt.Errorf("unknown type %q", t)
}

// intKeyword reads a non-negative integer keyword; -1 when absent.
func intKeyword(s schema, key string) (int, error) {
	v, ok := s[key]
	if !ok {
		return -1, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || f < 0 || f != math.Trunc(f) {
		return 0, fmt.Errorf("%q must be a non-negative integer", key)
	}
	return int(min(f, math.MaxInt32)), nil
}

func (c *converter) stringBody(s schema) (string, error) {
	minLen, err := intKeyword(s, "minLength")
	if err != nil {
		return "", err
	}
	maxLen, err := intKeyword(s, "maxLength")
	if err != nil {
		return "", err
	}
	if minLen < 0 {
		minLen = 0
	}
	if maxLen >= 0 && maxLen < minLen {
		return "", unsat("maxLength %d is below minLength %d", maxLen, minLen)
	}
	if v, ok := s["pattern"]; ok {
		var p string
		if err := json.Unmarshal(v, &p); err != nil {
			return "", errors.New(`"pattern" must be a string`)
		}
		if _, ok := s["minLength"]; ok {
			return "", errors.New(`"pattern" together with "minLength" is not supported`)
		}
		if _, ok := s["maxLength"]; ok {
			return "", errors.New(`"pattern" together with "maxLength" is not supported`)
		}
		expr, err := c.pattern(p)
		if err != nil {
			return "", fmt.Errorf("pattern %q: %w", truncate(p, 80), err)
		}
		return `"\"" ` + expr + ` "\""`, nil
	}
	var format string
	json.Unmarshal(s["format"], &format)
	if knownFormats[format] {
		return `"\"" ` + c.rules.prim(format) + ` "\""`, nil
	}
	if minLen == 0 && maxLen < 0 {
		return c.rules.prim("string"), nil
	}
	return `"\"" ` + repeat(c.rules.prim("char"), minLen, maxLen) + ` "\""`, nil
}

// numberBody handles integer and number with their bounds and multipleOf.
func (c *converter) numberBody(s schema, integer bool) (string, error) {
	digits := maxDigits // fraction digits
	if integer {
		digits = 0
	}
	if v, ok := s["multipleOf"]; ok {
		m, ok := new(big.Rat).SetString(strings.TrimSpace(string(v)))
		if !ok || m.Sign() <= 0 {
			return "", errors.New(`"multipleOf" must be a positive number`)
		}
		// 10^-k: at most k fraction digits. 1/n on integers: no constraint.
		k := -1
		for i := 0; i <= maxDigits; i++ {
			if m.Cmp(new(big.Rat).SetFrac(big.NewInt(1), pow10Big(i))) == 0 {
				k = i
				break
			}
		}
		switch {
		case integer && m.Num().Cmp(big.NewInt(1)) == 0:
		case !integer && k >= 0:
			digits = k
		default:
			return "", fmt.Errorf(`"multipleOf" %s is not supported (only powers of ten up to 1)`, m.RatString())
		}
	}
	lo, hi, err := bounds(s, digits)
	if err != nil {
		return "", err
	}
	if lo == nil && hi == nil {
		switch {
		case integer:
			return c.rules.prim("integer"), nil
		case digits == maxDigits:
			return c.rules.prim("number"), nil
		}
	}
	expr, ok := numberRange(lo, hi, digits)
	if !ok {
		return "", unsat("no number within minimum and maximum")
	}
	return expr, nil
}

func pow10Big(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// bounds reads minimum, maximum, exclusiveMinimum and exclusiveMaximum
// (numbers, or draft-4 booleans) as the inclusive bounds on values scaled
// by 10^digits, rounded inwards; nil when absent.
func bounds(s schema, digits int) (lo, hi *big.Int, err error) {
	scale := new(big.Rat).SetInt(pow10Big(digits))
	num := func(key string) (*big.Rat, error) {
		v, ok := s[key]
		if !ok {
			return nil, nil
		}
		t := strings.TrimSpace(string(v))
		if t == "true" || t == "false" {
			return nil, nil
		}
		r, ok := new(big.Rat).SetString(t)
		if !ok || strings.HasPrefix(t, "\"") {
			return nil, fmt.Errorf("%q must be a number", key)
		}
		return r.Mul(r, scale), nil
	}
	flag := func(key string) bool { return strings.TrimSpace(string(s[key])) == "true" }
	ceil := func(r *big.Rat) *big.Int {
		q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // floor for positive denominators
		if m.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		return q
	}
	floor := func(r *big.Rat) *big.Int {
		q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
		return q
	}
	one := big.NewInt(1)
	tighter := func(cur, v *big.Int, lower bool) *big.Int {
		if cur == nil || lower && v.Cmp(cur) > 0 || !lower && v.Cmp(cur) < 0 {
			return v
		}
		return cur
	}
	if r, err := num("minimum"); err != nil {
		return nil, nil, err
	} else if r != nil {
		if flag("exclusiveMinimum") {
			lo = new(big.Int).Add(floor(r), one)
		} else {
			lo = ceil(r)
		}
	}
	if r, err := num("exclusiveMinimum"); err != nil {
		return nil, nil, err
	} else if r != nil {
		lo = tighter(lo, new(big.Int).Add(floor(r), one), true)
	}
	if r, err := num("maximum"); err != nil {
		return nil, nil, err
	} else if r != nil {
		if flag("exclusiveMaximum") {
			hi = new(big.Int).Sub(ceil(r), one)
		} else {
			hi = floor(r)
		}
	}
	if r, err := num("exclusiveMaximum"); err != nil {
		return nil, nil, err
	} else if r != nil {
		hi = tighter(hi, new(big.Int).Sub(ceil(r), one), false)
	}
	return lo, hi, nil
}
