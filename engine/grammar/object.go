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
	o, err := readObject(s)
	if err != nil {
		return "", err
	}
	if o.anyObject() {
		return c.rules.prim("object"), nil // any object
	}
	p, err := o.plan()
	if err != nil {
		return "", err
	}
	if err := c.possibleOptional(p, hint); err != nil {
		return "", err
	}
	if err := p.count(o.minProps, o.maxProps); err != nil {
		return "", err
	}
	c.rules.prim("ws")
	if err := c.extraMember(p, hint); err != nil {
		return "", err
	}
	if len(p.req) > 0 {
		return c.writeRequired(p, hint)
	}
	return c.writeOptional(p, hint), nil
}

// objectKeywords are the object keywords of a schema.
type objectKeywords struct {
	names    []string                   // "properties", in document order
	props    map[string]json.RawMessage // their schemas
	required []string
	// minProps and maxProps are -1 when absent.
	minProps, maxProps int
	addl               json.RawMessage // additionalProperties, else unevaluatedProperties
	hasAddl, hasProps  bool
	hasReq, hasNames   bool
}

// readObject reads the object keywords of s.
func readObject(s schema) (*objectKeywords, error) {
	o := &objectKeywords{props: map[string]json.RawMessage{}}
	if v, ok := s["properties"]; ok {
		var err error
		if o.names, o.props, err = members(v); err != nil {
			return nil, errors.New(`"properties" must be an object`)
		}
	}
	if v, ok := s["required"]; ok {
		if err := json.Unmarshal(v, &o.required); err != nil {
			return nil, errors.New(`"required" must be an array of strings`)
		}
	}
	var err error
	if o.minProps, err = intKeyword(s, "minProperties"); err != nil {
		return nil, err
	}
	if o.maxProps, err = intKeyword(s, "maxProperties"); err != nil {
		return nil, err
	}
	o.addl, o.hasAddl = s["additionalProperties"]
	if !o.hasAddl {
		o.addl, o.hasAddl = s["unevaluatedProperties"]
	}
	_, o.hasProps = s["properties"]
	_, o.hasReq = s["required"]
	_, o.hasNames = s["propertyNames"]
	return o, nil
}

// anyObject tells whether no keyword constrains the object.
func (o *objectKeywords) anyObject() bool {
	return !o.hasAddl && !o.hasProps && !o.hasReq && o.minProps <= 0 && o.maxProps < 0 && !o.hasNames
}

// objectPlan is the shape objectBody writes: required members, then
// optional ones, each in order, then extra (undeclared) members.
type objectPlan struct {
	props    map[string]json.RawMessage // member → schema, required extras included
	req, opt []string
	optKV    map[string]string // optional member → its key-value expression
	declared []string          // names an extra member may not have
	// extras: undeclared members are allowed, of extraSchema.
	extras      bool
	extraSchema json.RawMessage
	// minExtras..maxExtras (-1: unbounded) extra members, each extraKV.
	minExtras, maxExtras int
	extraKV              string
}

// plan decides which members are required and whether extra ones are
// allowed.
func (o *objectKeywords) plan() (*objectPlan, error) {
	p := &objectPlan{props: o.props, extraSchema: json.RawMessage("true")}
	p.extras = o.hasAddl && compact(o.addl) != "false" || !o.hasAddl && !o.hasProps && !o.hasReq
	if o.hasNames && p.extras {
		return nil, errors.New(`"propertyNames" with additional properties allowed is not supported`)
	}
	if o.hasAddl && compact(o.addl) != "false" {
		p.extraSchema = o.addl
	}
	// Required members: declared ones in declaration order, then the
	// others in the order of "required".
	for _, n := range o.names {
		if slices.Contains(o.required, n) {
			p.req = append(p.req, n)
		} else {
			p.opt = append(p.opt, n)
		}
	}
	for _, n := range o.required {
		if _, ok := p.props[n]; !ok && !slices.Contains(p.req, n) {
			if !p.extras && o.hasAddl {
				return nil, unsat("required property %q is not allowed by additionalProperties", n)
			}
			p.props[n] = p.extraSchema
			p.req = append(p.req, n)
		}
	}
	p.declared = append(slices.Clone(o.names), p.req...)
	return p, nil
}

// member returns the key-value expression of a declared member.
func (c *converter) member(p *objectPlan, hint, name string) (string, error) {
	h := hint + "-" + name
	a, err := c.atom(p.props[name], h, nil)
	if err != nil {
		return "", fmt.Errorf("property %q: %w", name, err)
	}
	return literal(jsonString(name)) + " ws \":\" ws " + a, nil
}

// possibleOptional converts the optional members, leaving out those
// that no value satisfies: they cannot appear.
func (c *converter) possibleOptional(p *objectPlan, hint string) error {
	p.optKV = map[string]string{}
	var possible []string
	for _, n := range p.opt {
		m, err := c.try(func() (string, error) { return c.member(p, hint, n) })
		if isUnsat(err) {
			continue
		}
		if err != nil {
			return err
		}
		p.optKV[n] = m
		possible = append(possible, n)
	}
	p.opt = possible
	return nil
}

// count applies minProperties and maxProperties: it makes optional
// members required, in order, up to minProperties, and bounds the
// number of extra members.
func (p *objectPlan) count(minProps, maxProps int) error {
	for minProps > len(p.req) && len(p.opt) > 0 {
		p.req, p.opt = append(p.req, p.opt[0]), p.opt[1:]
	}
	if maxProps >= 0 && minProps > maxProps {
		return unsat("maxProperties %d is below minProperties %d", maxProps, minProps)
	}
	p.minExtras = max(0, minProps-len(p.req))
	if p.minExtras > 0 && !p.extras {
		return unsat("minProperties %d is more than the properties allowed", minProps)
	}
	p.maxExtras = -1
	if !p.extras {
		p.maxExtras = 0
	}
	if maxProps >= 0 {
		if len(p.req)+len(p.opt) > maxProps {
			return fmt.Errorf("maxProperties %d is below the number of declared properties (%d) and is not supported", maxProps, len(p.req)+len(p.opt))
		}
		if p.extras {
			p.maxExtras = maxProps - len(p.req) - len(p.opt)
		}
	}
	return nil
}

// extraMember writes the rule of an extra member, when any may appear;
// when none can (no value satisfies their schema) and none is needed,
// it allows none.
func (c *converter) extraMember(p *objectPlan, hint string) error {
	if p.maxExtras == 0 {
		return nil
	}
	a, err := c.try(func() (string, error) { return c.atom(p.extraSchema, hint+"-additional", nil) })
	switch {
	case isUnsat(err) && p.minExtras == 0:
		p.maxExtras = 0
	case err != nil:
		return fmt.Errorf("additionalProperties: %w", err)
	default:
		p.extraKV = c.rules.add(hint+"-additional-kv", c.keyNotIn(hint+"-additional-key", p.declared)+` ws ":" ws `+a)
	}
	return nil
}

// writeRequired writes an object with required members: those in
// order, then each optional one or not, then the extras.
func (c *converter) writeRequired(p *objectPlan, hint string) (string, error) {
	parts := []string{`"{" ws`}
	for i, n := range p.req {
		m, err := c.member(p, hint, n)
		if err != nil {
			return "", err
		}
		if i > 0 {
			parts = append(parts, sep)
		}
		parts = append(parts, m)
	}
	for _, n := range p.opt {
		parts = append(parts, "( "+sep+" "+c.rules.add(hint+"-"+n+"-kv", p.optKV[n])+" )?")
	}
	if p.maxExtras != 0 {
		parts = append(parts, repeat("( "+sep+" "+p.extraKV+" )", p.minExtras, p.maxExtras))
	}
	parts = append(parts, `ws "}"`)
	return seq(parts...), nil
}

// writeOptional writes an object with no required member: any subset
// of the optional members, in order, then the extras.
func (c *converter) writeOptional(p *objectPlan, hint string) string {
	var items []string
	for _, n := range p.opt {
		items = append(items, c.rules.add(hint+"-"+n+"-kv", p.optKV[n]))
	}
	if len(items) == 0 && p.maxExtras == 0 {
		return `"{" ws "}"`
	}
	if p.minExtras > 0 {
		// No declared property is left to promote: extras only.
		return seq(`"{" ws`, p.extraKV, repeat("( "+sep+" "+p.extraKV+" )", p.minExtras-1, dec(p.maxExtras)), `ws "}"`)
	}
	list := c.subsequence(hint, items, p.extraKV, p.maxExtras)
	return `"{" ws ( ` + list + ` ws )? "}"`
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
