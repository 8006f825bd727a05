package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// arrayBody handles prefixItems/items (or draft 4 tuples), minItems,
// maxItems and uniqueItems.
func (c *converter) arrayBody(s schema, hint string) (string, error) {
	a, err := readArray(s)
	if err != nil {
		return "", err
	}
	p, err := a.plan()
	if err != nil {
		return "", err
	}
	c.rules.prim("ws")
	if a.unique {
		return c.uniqueArray(hint, a.prefix, p.rest, a.minItems, a.maxItems)
	}
	elems, err := c.prefixElems(a, p, hint)
	if err != nil {
		return "", err
	}
	item, err := c.restItem(p, hint)
	if err != nil {
		return "", err
	}
	return writeArray(elems, item, p), nil
}

// arrayKeywords are the array keywords of a schema.
type arrayKeywords struct {
	prefix []json.RawMessage
	rest   json.RawMessage // nil: no further items
	// minItems is at least 0; maxItems is -1 when absent.
	minItems, maxItems int
	unique             bool // uniqueItems, when it can matter
}

// readArray reads the array keywords of s.
func readArray(s schema) (*arrayKeywords, error) {
	a := &arrayKeywords{}
	items, hasItems := s["items"]
	if v, ok := s["prefixItems"]; ok {
		if err := json.Unmarshal(v, &a.prefix); err != nil {
			return nil, errors.New(`"prefixItems" must be an array of schemas`)
		}
		if hasItems {
			a.rest = items
		}
	} else if hasItems && bytes.HasPrefix(bytes.TrimSpace(items), []byte("[")) {
		if err := json.Unmarshal(items, &a.prefix); err != nil {
			return nil, errors.New(`"items" must be a schema or an array of schemas`)
		}
		a.rest = s["additionalItems"]
	} else if hasItems {
		a.rest = items
	} else {
		a.rest = json.RawMessage("true")
	}
	var err error
	if a.minItems, err = intKeyword(s, "minItems"); err != nil {
		return nil, err
	}
	if a.maxItems, err = intKeyword(s, "maxItems"); err != nil {
		return nil, err
	}
	a.minItems = max(a.minItems, 0)
	a.unique = strings.TrimSpace(string(s["uniqueItems"])) == "true" && (a.maxItems < 0 || a.maxItems > 1)
	return a, nil
}

// arrayPlan is the shape arrayBody writes: k prefix items, then rmin to
// rmax (-1: unbounded) items of rest.
type arrayPlan struct {
	k, rmin, rmax int
	rest          json.RawMessage
}

// plan decides how many prefix and further items the array has.
func (a *arrayKeywords) plan() (*arrayPlan, error) {
	restAllowed := a.rest != nil && compact(a.rest) != "false"
	if a.maxItems >= 0 && a.maxItems < a.minItems {
		return nil, unsat("maxItems %d is below minItems %d", a.maxItems, a.minItems)
	}
	p := &arrayPlan{k: len(a.prefix), rmax: -1, rest: a.rest}
	if a.maxItems >= 0 && p.k > a.maxItems {
		p.k = a.maxItems
	}
	p.rmin = max(0, a.minItems-p.k)
	if a.maxItems >= 0 {
		p.rmax = a.maxItems - p.k
	}
	if !restAllowed {
		if p.rmin > 0 {
			if p.rest != nil {
				return nil, unsat("minItems %d is more than the items allowed", a.minItems)
			}
			p.rest = json.RawMessage("true") // prefixItems alone allows any further items
		} else {
			p.rmax = 0
		}
	}
	return p, nil
}

// prefixElems converts the prefix items; at one that no value satisfies
// and that minItems does not need, the array ends before it.
func (c *converter) prefixElems(a *arrayKeywords, p *arrayPlan, hint string) ([]string, error) {
	var elems []string
	for i := range p.k {
		e, err := c.try(func() (string, error) { return c.atom(a.prefix[i], fmt.Sprintf("%s-%d", hint, i), nil) })
		if isUnsat(err) && i >= a.minItems {
			// No value fits here: the array ends before.
			p.k, p.rmin, p.rmax = i, 0, 0
			break
		}
		if err != nil {
			return nil, fmt.Errorf("prefixItems[%d]: %w", i, err)
		}
		elems = append(elems, e)
	}
	return elems, nil
}

// restItem converts the schema of the further items, when any may
// appear; when none can (no value satisfies it) and none is needed, it
// allows none.
func (c *converter) restItem(p *arrayPlan, hint string) (string, error) {
	if p.rmax == 0 {
		return "", nil
	}
	item, err := c.try(func() (string, error) { return c.atom(p.rest, hint+"-item", nil) })
	switch {
	case isUnsat(err) && p.rmin == 0:
		p.rmax = 0
	case err != nil:
		return "", fmt.Errorf("items: %w", err)
	}
	return item, nil
}

// writeArray writes the array of the prefix elements, then the further
// items.
func writeArray(elems []string, item string, p *arrayPlan) string {
	more := "( " + sep + " " + item + " )"
	switch {
	case p.k == 0 && p.rmax == 0:
		return `"[" ws "]"`
	case p.k == 0 && p.rmin == 0:
		return seq(`"[" ws (`, item, repeat(more, 0, dec(p.rmax)), `ws )? "]"`)
	case p.k == 0:
		return seq(`"[" ws`, item, repeat(more, p.rmin-1, dec(p.rmax)), `ws "]"`)
	}
	parts := []string{`"[" ws`, elems[0]}
	for _, e := range elems[1:] {
		parts = append(parts, sep, e)
	}
	if p.rmax != 0 {
		parts = append(parts, repeat(more, p.rmin, p.rmax))
	}
	parts = append(parts, `ws "]"`)
	return seq(parts...)
}

// uniqueArray handles uniqueItems for items drawn from a finite list
// (enum, const or boolean): the list's values appear in order, each at
// most once.
func (c *converter) uniqueArray(hint string, prefix []json.RawMessage, rest json.RawMessage, minItems, maxItems int) (string, error) {
	errUnique := errors.New(`"uniqueItems" is only supported for items that are an enum, a const or boolean, with minItems <= 1 and no maxItems below the number of values`)
	if len(prefix) > 0 || rest == nil {
		return "", errUnique
	}
	s, err := decode(rest)
	if err != nil {
		return "", err
	}
	var vals []json.RawMessage
	if v, ok := s["const"]; ok {
		vals = []json.RawMessage{v}
	} else if v, ok := s["enum"]; ok {
		if vals, err = c.enumValues(v); err != nil {
			return "", err
		}
		types, err := typesOf(s)
		if err != nil {
			return "", err
		}
		vals = slices.DeleteFunc(vals, func(v json.RawMessage) bool {
			return len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) })
		})
	} else if t, _ := typesOf(s); slices.Equal(t, []string{"boolean"}) {
		vals = []json.RawMessage{json.RawMessage("true"), json.RawMessage("false")}
	} else {
		return "", errUnique
	}
	var items []string
	seen := map[string]bool{}
	for _, v := range vals {
		if l := literal(compact(v)); !seen[l] {
			seen[l] = true
			items = append(items, l)
		}
	}
	if minItems > 1 || maxItems >= 0 && maxItems < len(items) || len(items) == 0 {
		return "", errUnique
	}
	list := c.subsequence(hint+"-unique", items, "", 0)
	if minItems == 1 {
		return `"[" ws ` + list + ` ws "]"`, nil
	}
	return `"[" ws ( ` + list + ` ws )? "]"`, nil
}
