package chattemplate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Template values are Go values of these types, mirroring Python's:
//
//	nil       None
//	bool      bool
//	int64     int
//	float64   float
//	string    str
//	*list     list (and tuple)
//	*dict     dict, with its keys in insertion order (and namespace())
//	*callable a function, method, macro or filter bound to its object
//	undefined jinja2's Undefined
//	*loopInfo the `loop` variable of a for loop

// undefined is jinja2's default Undefined: it prints as "", is false,
// iterates as empty and has length 0; anything else done with it is an
// error carrying hint.
type undefined struct{ hint string }

type list struct{ items []any }

type dict struct {
	keys      []any
	m         map[any]any
	namespace bool // a namespace(): the one kind of object `set x.y =` may change
}

type callable struct {
	name string
	fn   func(e *evaluator, args []any, kw *kwargs) (any, error)
}

func newDict() *dict { return &dict{m: map[any]any{}} }

func (d *dict) set(k, v any) {
	k = dictKey(k)
	if _, ok := d.m[k]; !ok {
		d.keys = append(d.keys, k)
	}
	d.m[k] = v
}

func (d *dict) get(k any) (any, bool) {
	v, ok := d.m[dictKey(k)]
	return v, ok
}

// dictKey makes keys that are equal in Python equal in Go.
func dictKey(k any) any {
	switch x := k.(type) {
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x)
		}
	}
	return k
}

func newList(items ...any) *list { return &list{items: items} }

// kwargs are keyword arguments in call order.
type kwargs struct {
	names []string
	vals  []any
}

func (k *kwargs) get(name string) (any, bool) {
	if k == nil {
		return nil, false
	}
	for i, n := range k.names {
		if n == name {
			return k.vals[i], true
		}
	}
	return nil, false
}

func (k *kwargs) len() int {
	if k == nil {
		return 0
	}
	return len(k.names)
}

// truthy is Python's bool(v).
func truthy(v any) bool {
	switch x := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case *list:
		return len(x.items) > 0
	case *dict:
		return len(x.keys) > 0
	}
	return true
}

// toStr is Python's str(v) as jinja2 prints it.
func toStr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case undefined:
		return ""
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatFloat(x)
	case string:
		return x
	}
	return repr(v)
}

// maxRepr bounds the text repr builds, which a namespace that holds
// itself could make endless.
const maxRepr = 16 << 20

// repr is Python's repr(v).
func repr(v any) string {
	var b strings.Builder
	reprTo(&b, v, 0)
	return b.String()
}

func reprTo(b *strings.Builder, v any, depth int) {
	if depth > 100 || b.Len() > maxRepr {
		b.WriteString("...")
		return
	}
	switch x := v.(type) {
	case string:
		b.WriteString(reprString(x))
	case undefined:
		b.WriteString("Undefined")
	case *list:
		b.WriteByte('[')
		for i, it := range x.items {
			if i > 0 {
				b.WriteString(", ")
			}
			reprTo(b, it, depth+1)
		}
		b.WriteByte(']')
	case *dict:
		if x.namespace {
			b.WriteString("<Namespace {")
		} else {
			b.WriteByte('{')
		}
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			reprTo(b, k, depth+1)
			b.WriteString(": ")
			reprTo(b, x.m[k], depth+1)
		}
		b.WriteByte('}')
		if x.namespace {
			b.WriteByte('>')
		}
	case *callable:
		b.WriteString("<function " + x.name + ">")
	case *loopInfo:
		b.WriteString("<LoopContext>")
	default:
		b.WriteString(toStr(v))
	}
}

func reprString(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteByte(q)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// formatFloat is Python's repr(float): the shortest digits that read
// back the same, in fixed notation for exponents -4..15.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expStr)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if exp < -4 || exp >= 16 {
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		out += fmt.Sprintf("e%s%02d", sign, exp)
	} else if exp < 0 {
		out = "0." + strings.Repeat("0", -exp-1) + digits
	} else if len(digits) <= exp+1 {
		out = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	} else {
		out = digits[:exp+1] + "." + digits[exp+1:]
	}
	if neg {
		out = "-" + out
	}
	return out
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case undefined:
		return "Undefined"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case *list:
		return "list"
	case *dict:
		return "dict"
	case *callable:
		return "function"
	case *loopInfo:
		return "LoopContext"
	}
	return fmt.Sprintf("%T", v)
}

// equal is Python's ==.
func equal(a, b any) bool { return equalDepth(a, b, 0) }

func equalDepth(a, b any, depth int) bool {
	if depth > 100 {
		return false
	}
	if isNumber(a) && isNumber(b) {
		af, bf := toFloat(a), toFloat(b)
		ai, aInt := asInt(a)
		bi, bInt := asInt(b)
		if aInt && bInt {
			return ai == bi
		}
		return af == bf
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case undefined:
		_, ok := b.(undefined)
		return ok
	case string:
		y, ok := b.(string)
		return ok && x == y
	case *list:
		y, ok := b.(*list)
		if !ok || len(x.items) != len(y.items) {
			return false
		}
		for i := range x.items {
			if !equalDepth(x.items[i], y.items[i], depth+1) {
				return false
			}
		}
		return true
	case *dict:
		y, ok := b.(*dict)
		if !ok || len(x.keys) != len(y.keys) {
			return false
		}
		for _, k := range x.keys {
			yv, ok := y.m[k]
			if !ok || !equalDepth(x.m[k], yv, depth+1) {
				return false
			}
		}
		return true
	}
	return a == b
}

func isNumber(v any) bool {
	switch v.(type) {
	case bool, int64, float64:
		return true
	}
	return false
}

// asInt reports v as an int64 when it is a bool or an int.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

// compare is Python's ordering of a and b (-1, 0, 1) for numbers,
// strings and lists; other pairs are an error, as in Python.
func compare(a, b any) (int, error) {
	if isNumber(a) && isNumber(b) {
		if ai, ok := asInt(a); ok {
			if bi, ok := asInt(b); ok {
				return cmp3(ai < bi, ai > bi), nil
			}
		}
		af, bf := toFloat(a), toFloat(b)
		return cmp3(af < bf, af > bf), nil
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), nil
		}
	case *list:
		if y, ok := b.(*list); ok {
			for i := 0; i < len(x.items) && i < len(y.items); i++ {
				c, err := compare(x.items[i], y.items[i])
				if err != nil || c != 0 {
					return c, err
				}
			}
			return cmp3(len(x.items) < len(y.items), len(x.items) > len(y.items)), nil
		}
	}
	if u, ok := a.(undefined); ok {
		return 0, u.err()
	}
	if u, ok := b.(undefined); ok {
		return 0, u.err()
	}
	return 0, fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(a), typeName(b))
}

func cmp3(lt, gt bool) int {
	switch {
	case lt:
		return -1
	case gt:
		return 1
	}
	return 0
}

func (u undefined) err() error {
	if u.hint == "" {
		return fmt.Errorf("undefined value")
	}
	return fmt.Errorf("%s", u.hint)
}

// iterate returns the items a for loop over v visits: a list's items, a
// dict's keys, a string's characters; undefined and None... iterate as
// nothing for undefined and fail for the rest, as in Python.
func iterate(v any) ([]any, error) {
	switch x := v.(type) {
	case *list:
		return x.items, nil
	case *dict:
		return x.keys, nil
	case string:
		out := make([]any, 0, len(x))
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	case undefined:
		return nil, nil
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// length is Python's len(v).
func length(v any) (int, error) {
	switch x := v.(type) {
	case string:
		return len([]rune(x)), nil
	case *list:
		return len(x.items), nil
	case *dict:
		return len(x.keys), nil
	case undefined:
		return 0, nil
	}
	return 0, fmt.Errorf("object of type '%s' has no len()", typeName(v))
}

// sortValues sorts items in Python's order; it reports the first
// comparison error.
func sortValues(items []any, key func(any) any, reverse bool) error {
	var err error
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if key != nil {
			a, b = key(a), key(b)
		}
		c, e := compare(a, b)
		if e != nil && err == nil {
			err = e
		}
		if reverse {
			return c > 0
		}
		return c < 0
	})
	return err
}
