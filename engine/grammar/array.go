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
	var prefix []json.RawMessage
	var rest json.RawMessage // nil: no further items
	items, hasItems := s["items"]
	if v, ok := s["prefixItems"]; ok {
		if err := json.Unmarshal(v, &prefix); err != nil {
			return "", errors.New(`"prefixItems" must be an array of schemas`)
		}
		if hasItems {
			rest = items
		}
	} else if hasItems && bytes.HasPrefix(bytes.TrimSpace(items), []byte("[")) {
		if err := json.Unmarshal(items, &prefix); err != nil {
			return "", errors.New(`"items" must be a schema or an array of schemas`)
		}
		rest = s["additionalItems"]
	} else if hasItems {
		rest = items
	} else {
		rest = json.RawMessage("true")
	}
	restAllowed := rest != nil && compact(rest) != "false"
	minItems, err := intKeyword(s, "minItems")
	if err != nil {
		return "", err
	}
	maxItems, err := intKeyword(s, "maxItems")
	if err != nil {
		return "", err
	}
	minItems = max(minItems, 0)
	if maxItems >= 0 && maxItems < minItems {
		return "", unsat("maxItems %d is below minItems %d", maxItems, minItems)
	}
	k := len(prefix)
	if maxItems >= 0 && k > maxItems {
		k = maxItems
	}
	rmin := max(0, minItems-k)
	rmax := -1
	if maxItems >= 0 {
		rmax = maxItems - k
	}
	if !restAllowed {
		if rmin > 0 {
			if rest != nil {
				return "", unsat("minItems %d is more than the items allowed", minItems)
			}
			rest = json.RawMessage("true") // prefixItems alone allows any further items
		} else {
			rmax = 0
		}
	}
	unique := strings.TrimSpace(string(s["uniqueItems"])) == "true" && (maxItems < 0 || maxItems > 1)
	c.rules.prim("ws")
	if unique {
		return c.uniqueArray(hint, prefix, rest, minItems, maxItems)
	}
	var elems []string
	for i := range k {
		a, err := c.try(func() (string, error) { return c.atom(prefix[i], fmt.Sprintf("%s-%d", hint, i), nil) })
		if isUnsat(err) && i >= minItems {
			// No value fits here: the array ends before.
			k, rmin, rmax = i, 0, 0
			break
		}
		if err != nil {
			return "", fmt.Errorf("prefixItems[%d]: %w", i, err)
		}
		elems = append(elems, a)
	}
	var item string
	if rmax != 0 {
		item, err = c.try(func() (string, error) { return c.atom(rest, hint+"-item", nil) })
		switch {
		case isUnsat(err) && rmin == 0:
			rmax = 0
		case err != nil:
			return "", fmt.Errorf("items: %w", err)
		}
	}
	more := "( " + sep + " " + item + " )"
	switch {
	case k == 0 && rmax == 0:
		return `"[" ws "]"`, nil
	case k == 0 && rmin == 0:
		return seq(`"[" ws (`, item, repeat(more, 0, dec(rmax)), `ws )? "]"`), nil
	case k == 0:
		return seq(`"[" ws`, item, repeat(more, rmin-1, dec(rmax)), `ws "]"`), nil
	}
	parts := []string{`"[" ws`, elems[0]}
	for _, e := range elems[1:] {
		parts = append(parts, sep, e)
	}
	if rmax != 0 {
		parts = append(parts, repeat(more, rmin, rmax))
	}
	parts = append(parts, `ws "]"`)
	return seq(parts...), nil
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
		if err := json.Unmarshal(v, &vals); err != nil {
			return "", errors.New(`"enum" must be an array`)
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
	for _, v := range vals {
		if l := literal(compact(v)); !slices.Contains(items, l) {
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
