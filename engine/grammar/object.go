package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// members reads a JSON object's members in document order.
func members(v json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, nil, err
		}
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
		}
		vals[k] = val
	}
	return keys, vals, nil
}

// jsonString encodes s as a JSON string, without HTML escaping.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

const sep = `ws "," ws`

// objectBody handles properties, required, additionalProperties,
// minProperties and maxProperties.
func (c *converter) objectBody(s schema, hint string) (string, error) {
	var names []string
	props := map[string]json.RawMessage{}
	if v, ok := s["properties"]; ok {
		var err error
		if names, props, err = members(v); err != nil {
			return "", errors.New(`"properties" must be an object`)
		}
	}
	var required []string
	if v, ok := s["required"]; ok {
		if err := json.Unmarshal(v, &required); err != nil {
			return "", errors.New(`"required" must be an array of strings`)
		}
	}
	minProps, err := intKeyword(s, "minProperties")
	if err != nil {
		return "", err
	}
	maxProps, err := intKeyword(s, "maxProperties")
	if err != nil {
		return "", err
	}
	addl, hasAddl := s["additionalProperties"]
	if !hasAddl {
		addl, hasAddl = s["unevaluatedProperties"]
	}
	_, hasProps := s["properties"]
	_, hasReq := s["required"]
	_, hasNames := s["propertyNames"]
	if !hasAddl && !hasProps && !hasReq && minProps <= 0 && maxProps < 0 && !hasNames {
		return c.rules.prim("object"), nil // any object
	}
	extras := hasAddl && compact(addl) != "false" || !hasAddl && !hasProps && !hasReq
	if hasNames && extras {
		return "", errors.New(`"propertyNames" with additional properties allowed is not supported`)
	}
	extraSchema := json.RawMessage("true")
	if hasAddl && compact(addl) != "false" {
		extraSchema = addl
	}
	// Required members: declared ones in declaration order, then the
	// others in the order of "required".
	var req, opt []string
	for _, n := range names {
		if slices.Contains(required, n) {
			req = append(req, n)
		} else {
			opt = append(opt, n)
		}
	}
	for _, n := range required {
		if _, ok := props[n]; !ok && !slices.Contains(req, n) {
			if !extras && hasAddl {
				return "", unsat("required property %q is not allowed by additionalProperties", n)
			}
			props[n] = extraSchema
			req = append(req, n)
		}
	}
	kv := func(name string) (string, error) {
		h := hint + "-" + name
		a, err := c.atom(props[name], h, nil)
		if err != nil {
			return "", fmt.Errorf("property %q: %w", name, err)
		}
		return literal(jsonString(name)) + " ws \":\" ws " + a, nil
	}
	// Optional properties that no value satisfies cannot appear.
	optKV := map[string]string{}
	var possible []string
	for _, n := range opt {
		m, err := c.try(func() (string, error) { return kv(n) })
		if isUnsat(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		optKV[n] = m
		possible = append(possible, n)
	}
	declared := append(slices.Clone(names), req...)
	opt = possible
	// minProperties: make optional properties required, in order.
	for minProps > len(req) && len(opt) > 0 {
		req, opt = append(req, opt[0]), opt[1:]
	}
	if maxProps >= 0 && minProps > maxProps {
		return "", unsat("maxProperties %d is below minProperties %d", maxProps, minProps)
	}
	minExtras := max(0, minProps-len(req))
	if minExtras > 0 && !extras {
		return "", unsat("minProperties %d is more than the properties allowed", minProps)
	}
	maxExtras := -1
	if !extras {
		maxExtras = 0
	}
	if maxProps >= 0 {
		if len(req)+len(opt) > maxProps {
			return "", fmt.Errorf("maxProperties %d is below the number of declared properties (%d) and is not supported", maxProps, len(req)+len(opt))
		}
		if extras {
			maxExtras = maxProps - len(req) - len(opt)
		}
	}
	c.rules.prim("ws")
	var extraKV string
	if maxExtras != 0 {
		a, err := c.try(func() (string, error) { return c.atom(extraSchema, hint+"-additional", nil) })
		switch {
		case isUnsat(err) && minExtras == 0:
			maxExtras = 0
		case err != nil:
			return "", fmt.Errorf("additionalProperties: %w", err)
		default:
			extraKV = c.rules.add(hint+"-additional-kv", c.keyNotIn(hint+"-additional-key", declared)+` ws ":" ws `+a)
		}
	}
	if len(req) > 0 {
		parts := []string{`"{" ws`}
		for i, n := range req {
			m, err := kv(n)
			if err != nil {
				return "", err
			}
			if i > 0 {
				parts = append(parts, sep)
			}
			parts = append(parts, m)
		}
		for _, n := range opt {
			parts = append(parts, "( "+sep+" "+c.rules.add(hint+"-"+n+"-kv", optKV[n])+" )?")
		}
		if maxExtras != 0 {
			parts = append(parts, repeat("( "+sep+" "+extraKV+" )", minExtras, maxExtras))
		}
		parts = append(parts, `ws "}"`)
		return seq(parts...), nil
	}
	var items []string
	for _, n := range opt {
		items = append(items, c.rules.add(hint+"-"+n+"-kv", optKV[n]))
	}
	if len(items) == 0 && maxExtras == 0 {
		return `"{" ws "}"`, nil
	}
	if minExtras > 0 {
		// No declared property is left to promote: extras only.
		return seq(`"{" ws`, extraKV, repeat("( "+sep+" "+extraKV+" )", minExtras-1, dec(maxExtras)), `ws "}"`), nil
	}
	list := c.subsequence(hint, items, extraKV, maxExtras)
	return `"{" ws ( ` + list + ` ws )? "}"`, nil
}

// dec decrements a count, keeping -1 (unbounded) as it is.
func dec(n int) int {
	if n < 0 {
		return -1
	}
	return n - 1
}

// subsequence returns an expression for a non-empty comma-separated list
// made of items in their order, each at most once (any subset), followed
// by up to maxExtra (-1: any number of) extra elements; with no items
// chosen, the list is extras only.
func (c *converter) subsequence(hint string, items []string, extra string, maxExtra int) string {
	tail := ""
	if maxExtra != 0 {
		tail = repeat("( "+sep+" "+extra+" )", 0, maxExtra)
	}
	// rest[i]: the optional items from i on, then the extras.
	rest := make([]string, len(items)+1)
	rest[len(items)] = tail
	for i := len(items) - 1; i >= 1; i-- {
		rest[i] = c.rules.add(fmt.Sprintf("%s-rest-%d", hint, i), seq("( "+sep+" "+items[i]+" )?", rest[i+1]))
	}
	var alts []string
	for i, it := range items {
		alts = append(alts, seq(it, rest[i+1]))
	}
	if maxExtra != 0 {
		alts = append(alts, seq(extra, repeat("( "+sep+" "+extra+" )", 0, dec(maxExtra))))
	}
	return group(alts)
}

// keyNotIn returns a rule for JSON strings (quotes included) other than
// the given names as jsonString writes them.
func (c *converter) keyNotIn(hint string, names []string) string {
	if len(names) == 0 {
		return c.rules.prim("string")
	}
	type node struct {
		end      bool
		children map[string]*node
		order    []string
	}
	root := &node{children: map[string]*node{}}
	for _, n := range names {
		cur := root
		for _, u := range jsonUnits(jsonString(n)) {
			next, ok := cur.children[u]
			if !ok {
				next = &node{children: map[string]*node{}}
				cur.children[u] = next
				cur.order = append(cur.order, u)
			}
			cur = next
		}
		cur.end = true
	}
	char := c.rules.prim("char")
	var walk func(n *node, depth int) string
	walk = func(n *node, depth int) string {
		var alts []string
		if !n.end {
			alts = append(alts, `"\""`)
		}
		// A first character that leaves the trie: anything may follow.
		exclude := `"\\\x00-\x1F\x7F`
		var escapes []string
		for _, u := range n.order {
			if len(u) == 1 || u[0] != '\\' {
				exclude += classChar([]rune(u)[0])
			} else if u[1] != 'u' {
				escapes = append(escapes, u[1:])
			}
		}
		alts = append(alts, "[^"+exclude+"] "+char+`* "\""`)
		// The first character that differs must not be another spelling
		// of a name's character: no \u escapes and no "\/" there (a
		// valid subset), so differing spellings mean differing keys.
		var keep []string
		for _, e := range []string{`"`, `\`, "b", "f", "n", "r", "t"} {
			if !slices.Contains(escapes, e) {
				keep = append(keep, literal(e))
			}
		}
		if len(keep) > 0 {
			alts = append(alts, `"\\" `+group(keep)+" "+char+`* "\""`)
		}
		for _, u := range n.order {
			alts = append(alts, literal(u)+" "+walk(n.children[u], depth+1))
		}
		return c.rules.add(fmt.Sprintf("%s-%d", hint, depth), strings.Join(alts, " | "))
	}
	return c.rules.add(hint, `"\"" `+walk(root, 0))
}

// jsonUnits splits the inside of a JSON string literal into characters:
// single runes or escape sequences.
func jsonUnits(quoted string) []string {
	s := quoted[1 : len(quoted)-1]
	var out []string
	for i := 0; i < len(s); {
		if s[i] == '\\' {
			n := 2
			if s[i+1] == 'u' {
				n = 6
			}
			out = append(out, s[i:i+n])
			i += n
			continue
		}
		r := []rune(s[i:])[0]
		out = append(out, string(r))
		i += len(string(r))
	}
	return out
}
