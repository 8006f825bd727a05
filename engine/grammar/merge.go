package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
)

// mergeAll merges schemas as allOf does, after replacing each $ref by its
// target and each allOf by its parts.
func (c *converter) mergeAll(parts []json.RawMessage) (schema, error) {
	var flat []schema
	for _, p := range parts {
		if err := c.flatten(p, nil, &flat); err != nil {
			return nil, err
		}
	}
	out := schema{}
	for _, s := range flat {
		if err := mergeInto(out, s); err != nil {
			return nil, fmt.Errorf("allOf: %w", err)
		}
	}
	return out, nil
}

// flatten appends the schemas that raw is the conjunction of: its $ref
// target's, its allOf parts', then its own other keywords.
func (c *converter) flatten(raw json.RawMessage, seen []string, out *[]schema) error {
	s, err := decode(raw)
	if err != nil {
		return err
	}
	rest := maps.Clone(s)
	if r, ok := s["$ref"]; ok {
		var ptr string
		if err := json.Unmarshal(r, &ptr); err != nil {
			return errors.New("$ref must be a string")
		}
		if slices.Contains(seen, ptr) {
			return fmt.Errorf("$ref %q: circular reference that consumes no input", ptr)
		}
		target, err := c.resolve(ptr)
		if err != nil {
			return err
		}
		if err := c.flatten(target, append(slices.Clip(seen), ptr), out); err != nil {
			return err
		}
		delete(rest, "$ref")
	}
	if a, ok := s["allOf"]; ok {
		var list []json.RawMessage
		if err := json.Unmarshal(a, &list); err != nil {
			return errors.New("allOf must be an array of schemas")
		}
		for i, p := range list {
			if err := c.flatten(p, seen, out); err != nil {
				return fmt.Errorf("allOf[%d]: %w", i, err)
			}
		}
		delete(rest, "allOf")
	}
	*out = append(*out, rest)
	return nil
}

// mergeInto adds b's constraints to a.
func mergeInto(a, b schema) error {
	keys := slices.Sorted(maps.Keys(b))
	for _, k := range keys {
		vb := b[k]
		va, ok := a[k]
		if !ok {
			a[k] = vb
			continue
		}
		if annotations[k] || compact(va) == compact(vb) {
			continue
		}
		merged, err := mergeKeyword(k, va, vb)
		if err != nil {
			return err
		}
		a[k] = merged
	}
	return nil
}

func allOf(x, y json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(map[string][]json.RawMessage{"allOf": {x, y}})
	return b
}

func mergeKeyword(k string, va, vb json.RawMessage) (json.RawMessage, error) {
	switch k {
	case "properties":
		ka, pa, err := members(va)
		if err != nil {
			return nil, errors.New(`"properties" must be an object`)
		}
		kb, pb, err := members(vb)
		if err != nil {
			return nil, errors.New(`"properties" must be an object`)
		}
		// Keep the order: a's properties, then b's new ones.
		var out strings.Builder
		out.WriteByte('{')
		for i, name := range append(ka, slices.DeleteFunc(kb, func(n string) bool { _, ok := pa[n]; return ok })...) {
			if i > 0 {
				out.WriteByte(',')
			}
			v, inA := pa[name]
			if w, inB := pb[name]; inA && inB && compact(v) != compact(w) {
				v = allOf(v, w)
			} else if !inA {
				v = w
			}
			out.WriteString(jsonString(name) + ":" + string(v))
		}
		out.WriteByte('}')
		return json.RawMessage(out.String()), nil
	case "required":
		var ra, rb []string
		if json.Unmarshal(va, &ra) != nil || json.Unmarshal(vb, &rb) != nil {
			return nil, errors.New(`"required" must be an array of strings`)
		}
		for _, n := range rb {
			if !slices.Contains(ra, n) {
				ra = append(ra, n)
			}
		}
		return json.Marshal(ra)
	case "type":
		ta, err := typesOf(schema{"type": va})
		if err != nil {
			return nil, err
		}
		tb, err := typesOf(schema{"type": vb})
		if err != nil {
			return nil, err
		}
		var both []string
		for _, t := range ta {
			switch {
			case slices.Contains(tb, t):
				both = append(both, t)
			case t == "integer" && slices.Contains(tb, "number"):
				both = append(both, t)
			case t == "number" && slices.Contains(tb, "integer"):
				both = append(both, "integer")
			}
		}
		if len(both) == 0 {
			return nil, unsat("types %s and %s have nothing in common", compact(va), compact(vb))
		}
		return json.Marshal(slices.Compact(both))
	case "enum":
		var ea, eb []json.RawMessage
		if json.Unmarshal(va, &ea) != nil || json.Unmarshal(vb, &eb) != nil {
			return nil, errors.New(`"enum" must be an array`)
		}
		if n := max(len(ea), len(eb)); n > MaxEnumValues {
			return nil, &LimitError{What: "enum", Unit: "values", Value: n, Max: MaxEnumValues}
		}
		inB := make(map[string]bool, len(eb))
		for _, w := range eb {
			inB[compact(w)] = true
		}
		var both []json.RawMessage
		for _, v := range ea {
			if inB[compact(v)] {
				both = append(both, v)
			}
		}
		if len(both) == 0 {
			return nil, unsat("enums have no value in common")
		}
		return json.Marshal(both)
	case "const":
		return nil, unsat("different consts %s and %s", compact(va), compact(vb))
	case "minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties":
		return extreme(va, vb, true), nil
	case "maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties":
		return extreme(va, vb, false), nil
	case "additionalProperties", "unevaluatedProperties", "items", "additionalItems":
		switch {
		case compact(va) == "false" || compact(vb) == "false":
			return json.RawMessage("false"), nil
		case compact(va) == "true" || compact(va) == "{}":
			return vb, nil
		case compact(vb) == "true" || compact(vb) == "{}":
			return va, nil
		}
		if strings.HasPrefix(compact(va), "[") || strings.HasPrefix(compact(vb), "[") {
			return nil, fmt.Errorf("two different tuple %q lists are not supported", k)
		}
		return allOf(va, vb), nil
	case "prefixItems":
		var pa, pb []json.RawMessage
		if json.Unmarshal(va, &pa) != nil || json.Unmarshal(vb, &pb) != nil {
			return nil, errors.New(`"prefixItems" must be an array`)
		}
		for i, v := range pb {
			if i < len(pa) {
				pa[i] = allOf(pa[i], v)
			} else {
				pa = append(pa, v)
			}
		}
		return json.Marshal(pa)
	case "anyOf", "oneOf":
		// (A1 | A2) & (B1 | B2) = A1&B1 | A1&B2 | A2&B1 | A2&B2
		var la, lb []json.RawMessage
		if json.Unmarshal(va, &la) != nil || json.Unmarshal(vb, &lb) != nil {
			return nil, fmt.Errorf("%s must be an array of schemas", k)
		}
		if n := len(la) * len(lb); n > MaxBranches {
			// Checked before building: the product of a few short lists
			// is enormous (ten lists of ten are 10^10 branches).
			return nil, &LimitError{What: "allOf (its " + k + " lists multiplied out)", Unit: "branches", Value: n, Max: MaxBranches}
		}
		var out []json.RawMessage
		for _, x := range la {
			for _, y := range lb {
				out = append(out, allOf(x, y))
			}
		}
		return json.Marshal(out)
	case "uniqueItems":
		return json.RawMessage("true"), nil
	case "nullable":
		return json.RawMessage("false"), nil
	case "pattern", "format", "multipleOf":
		return nil, fmt.Errorf("two different %q values (%s and %s) are not supported", k, compact(va), compact(vb))
	}
	return vb, nil
}

// extreme returns the larger (or smaller) of two numbers; booleans (the
// draft-4 exclusive flags) become true if either is.
func extreme(va, vb json.RawMessage, larger bool) json.RawMessage {
	x, okx := new(big.Rat).SetString(compact(va))
	y, oky := new(big.Rat).SetString(compact(vb))
	if !okx || !oky {
		if compact(va) == "true" || compact(vb) == "true" {
			return json.RawMessage("true")
		}
		return vb
	}
	if (x.Cmp(y) < 0) == larger {
		return vb
	}
	return va
}
