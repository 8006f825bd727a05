package chattemplate

import (
	"fmt"
	"strings"
)

func compareOp(op string, l, r any) (bool, error) {
	switch op {
	case "==":
		return equal(l, r), nil
	case "!=":
		return !equal(l, r), nil
	case "in", "notin":
		ok, err := contains(r, l)
		return ok == (op == "in"), err
	}
	c, err := compare(l, r)
	if err != nil {
		return false, err
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

// contains is Python's `item in container`.
func contains(container, item any) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(c, s), nil
	case *list:
		for _, it := range c.items {
			if equal(it, item) {
				return true, nil
			}
		}
		return false, nil
	case *dict:
		_, ok := c.get(item)
		return ok, nil
	case undefined:
		return false, nil
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", typeName(container))
}

// getAttr is jinja2's obj.name: an attribute (a method) first, then an
// item.
func getAttr(obj any, name string) (any, error) {
	switch o := obj.(type) {
	case undefined:
		// llama.cpp's Jinja engine (llama-server's): an attribute of an
		// undefined value is undefined, where jinja2 raises. Command R+'s
		// template reads json_spec.additionalProperties.type of an object
		// parameter without additionalProperties.
		return o, nil
	case *dict:
		if !o.namespace {
			if m := dictMethod(o, name); m != nil {
				return m, nil
			}
		}
		if v, ok := o.get(name); ok {
			return v, nil
		}
		return undefined{hint: fmt.Sprintf("'dict object' has no attribute '%s'", name)}, nil
	case string:
		if m := strMethod(o, name); m != nil {
			return m, nil
		}
	case *list:
		if m := listMethod(o, name); m != nil {
			return m, nil
		}
	case *loopInfo:
		return o.attr(name), nil
	}
	return undefined{hint: fmt.Sprintf("'%s object' has no attribute '%s'", typeName(obj), name)}, nil
}

// getItem is jinja2's obj[key]: an item first, then an attribute.
func getItem(obj, key any) (any, error) {
	switch o := obj.(type) {
	case undefined:
		return o, nil // as getAttr
	case *dict:
		if v, ok := o.get(key); ok {
			return v, nil
		}
	case *list, string:
		if i, ok := asInt(key); ok {
			var n int
			if l, ok := o.(*list); ok {
				n = len(l.items)
			} else {
				n = len([]rune(o.(string)))
			}
			if i < 0 {
				i += int64(n)
			}
			if i >= 0 && i < int64(n) {
				if l, ok := o.(*list); ok {
					return l.items[i], nil
				}
				return string([]rune(o.(string))[i]), nil
			}
			return undefined{hint: fmt.Sprintf("%s object has no element %d", typeName(obj), i)}, nil
		}
	}
	if name, ok := key.(string); ok {
		if _, isDict := obj.(*dict); !isDict {
			return getAttr(obj, name)
		}
		if v, err := getAttr(obj, name); err == nil {
			if _, isUndef := v.(undefined); !isUndef {
				return v, nil
			}
		}
	}
	return undefined{hint: fmt.Sprintf("'%s object' has no attribute %s", typeName(obj), repr(key))}, nil
}
