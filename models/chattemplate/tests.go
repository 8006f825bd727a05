package chattemplate

import (
	"fmt"
	"strings"
)

// runTest is `v is name(args)`.
func runTest(name string, v any, args []any) (bool, error) {
	a0 := func() any {
		if len(args) > 0 {
			return args[0]
		}
		return undefined{hint: "test argument missing"}
	}
	_, isUndef := v.(undefined)
	switch name {
	case "defined":
		return !isUndef, nil
	case "undefined":
		return isUndef, nil
	case "none":
		return v == nil, nil
	case "boolean":
		_, ok := v.(bool)
		return ok, nil
	case "true":
		return v == true, nil
	case "false":
		return v == false, nil
	case "integer":
		_, ok := v.(int64)
		return ok, nil
	case "float":
		_, ok := v.(float64)
		return ok, nil
	case "number":
		return isNumber(v), nil
	case "string":
		_, ok := v.(string)
		return ok, nil
	case "mapping":
		_, ok := v.(*dict)
		return ok, nil
	case "iterable":
		switch v.(type) {
		case string, *list, *dict:
			return true, nil
		}
		return isUndef, nil
	case "sequence":
		switch v.(type) {
		case string, *list, *dict:
			return true, nil
		}
		return isUndef, nil
	case "callable":
		switch v.(type) {
		case *callable:
			return true, nil
		}
		return false, nil
	case "odd", "even", "divisibleby":
		n, ok := asInt(v)
		if !ok {
			return false, fmt.Errorf("test %s needs an integer, not %s", name, typeName(v))
		}
		switch name {
		case "odd":
			return n%2 != 0, nil
		case "even":
			return n%2 == 0, nil
		}
		d, ok := asInt(a0())
		if !ok || d == 0 {
			return false, fmt.Errorf("divisibleby needs a non-zero integer")
		}
		return n%d == 0, nil
	case "lower":
		s := toStr(v)
		return s == strings.ToLower(s), nil
	case "upper":
		s := toStr(v)
		return s == strings.ToUpper(s), nil
	case "eq", "equalto", "==":
		return equal(v, a0()), nil
	case "ne", "!=":
		return !equal(v, a0()), nil
	case "sameas":
		return v == a0() || v == nil && a0() == nil, nil
	case "in":
		return contains(a0(), v)
	case "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=":
		op := map[string]string{"lt": "<", "lessthan": "<", "le": "<=", "gt": ">", "greaterthan": ">", "ge": ">="}[name]
		if op == "" {
			op = name
		}
		return compareOp(op, v, a0())
	}
	return false, fmt.Errorf("no test named '%s'", name)
}
