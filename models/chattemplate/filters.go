package chattemplate

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"unicode"
)

type filterFunc func(e *evaluator, v any, args []any, kw *kwargs) (any, error)

var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"abs":        fAbs,
		"attr":       fAttr,
		"capitalize": strFilter(pyCapitalize),
		"count":      fLength,
		"d":          fDefault,
		"default":    fDefault,
		"dictsort":   fDictsort,
		"e":          fEscape,
		"escape":     fEscape,
		"first":      fFirst,
		"float":      fFloat,
		"indent":     fIndent,
		"int":        fInt,
		"items":      fItems,
		"join":       fJoin,
		"last":       fLast,
		"length":     fLength,
		"list":       fList,
		"lower":      strFilter(strings.ToLower),
		"map":        fMap,
		"max":        fMinMax(1),
		"min":        fMinMax(-1),
		"reject":     fSelect(false, false),
		"rejectattr": fSelect(false, true),
		"replace":    fReplace,
		"reverse":    fReverse,
		"round":      fRound,
		"safe":       func(_ *evaluator, v any, _ []any, _ *kwargs) (any, error) { return v, nil },
		"select":     fSelect(true, false),
		"selectattr": fSelect(true, true),
		"sort":       fSort,
		"string":     func(_ *evaluator, v any, _ []any, _ *kwargs) (any, error) { return toStr(v), nil },
		"sum":        fSum,
		"title":      strFilter(pyTitle),
		"tojson":     fTojson,
		"trim":       fTrim,
		"unique":     fUnique,
		"upper":      strFilter(strings.ToUpper),
		"wordcount": func(_ *evaluator, v any, _ []any, _ *kwargs) (any, error) {
			return int64(len(strings.Fields(toStr(v)))), nil
		},
	}
}

func (e *evaluator) filter(f *filterExpr, v any, s *scope) (any, error) {
	fn, ok := filters[f.name]
	if !ok {
		return nil, fmt.Errorf("no filter named '%s'", f.name)
	}
	args, err := e.evalList(f.args, s)
	if err != nil {
		return nil, err
	}
	kw, err := e.evalKwargs(f.kw, f.kwv, s)
	if err != nil {
		return nil, err
	}
	if err := e.step(); err != nil {
		return nil, err
	}
	out, err := fn(e, v, args, kw)
	if err != nil {
		return nil, fmt.Errorf("filter %s: %w", f.name, err)
	}
	return out, e.chargeValue(out)
}

func strFilter(f func(string) string) filterFunc {
	return func(_ *evaluator, v any, _ []any, _ *kwargs) (any, error) { return f(toStr(v)), nil }
}

func seq(e *evaluator, v any) ([]any, error) {
	items, err := iterate(v)
	if err == nil {
		err = e.charge(16 * len(items))
	}
	if err == nil {
		e.steps += int64(len(items))
		err = e.step()
	}
	return items, err
}

func fAbs(_ *evaluator, v any, _ []any, _ *kwargs) (any, error) {
	switch n := v.(type) {
	case int64:
		if n < 0 {
			return -n, nil
		}
		return n, nil
	case float64:
		return math.Abs(n), nil
	}
	return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
}

func fAttr(_ *evaluator, v any, args []any, _ *kwargs) (any, error) {
	name, _ := arg(args, nil, 0, "", "").(string)
	return getAttr(v, name)
}

func fDefault(_ *evaluator, v any, args []any, kw *kwargs) (any, error) {
	def := arg(args, kw, 0, "default_value", "")
	_, undef := v.(undefined)
	if undef || truthy(arg(args, kw, 1, "boolean", false)) && !truthy(v) {
		return def, nil
	}
	return v, nil
}

func fDictsort(_ *evaluator, v any, args []any, kw *kwargs) (any, error) {
	d, ok := v.(*dict)
	if !ok {
		return nil, fmt.Errorf("can only sort a dict, not %s", typeName(v))
	}
	byValue := arg(args, kw, 1, "by", "key") == "value"
	items := make([]any, len(d.keys))
	for i, k := range d.keys {
		items[i] = newList(k, d.m[k])
	}
	idx := 0
	if byValue {
		idx = 1
	}
	err := sortValues(items, func(x any) any {
		it := x.(*list).items[idx]
		if s, ok := it.(string); ok && !truthy(arg(args, kw, 0, "case_sensitive", false)) {
			return strings.ToLower(s)
		}
		return it
	}, truthy(arg(args, kw, 2, "reverse", false)))
	return newList(items...), err
}

func fEscape(_ *evaluator, v any, _ []any, _ *kwargs) (any, error) {
	return html.EscapeString(toStr(v)), nil
}

func fFirst(e *evaluator, v any, _ []any, _ *kwargs) (any, error) {
	items, err := seq(e, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefined{hint: "No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func fLast(e *evaluator, v any, _ []any, _ *kwargs) (any, error) {
	items, err := seq(e, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefined{hint: "No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], nil
}

func fFloat(_ *evaluator, v any, args []any, kw *kwargs) (any, error) {
	switch x := v.(type) {
	case int64, bool:
		return toFloat(x), nil
	case float64:
		return x, nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return f, nil
		}
	}
	return arg(args, kw, 0, "default", 0.0), nil
}

func fInt(_ *evaluator, v any, args []any, kw *kwargs) (any, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case bool:
		i, _ := asInt(x)
		return i, nil
	case float64:
		return int64(x), nil
	case string:
		t := strings.TrimSpace(x)
		if i, err := strconv.ParseInt(t, 10, 64); err == nil {
			return i, nil
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return int64(f), nil
		}
	}
	return arg(args, kw, 0, "default", int64(0)), nil
}

// fIndent is jinja2's indent(width=4, first=False, blank=False).
func fIndent(_ *evaluator, v any, args []any, kw *kwargs) (any, error) {
	width := arg(args, kw, 0, "width", int64(4))
	pad, ok := width.(string)
	if !ok {
		n, _ := asInt(width)
		pad = strings.Repeat(" ", int(max(0, min(n, 1024))))
	}
	lines := strings.Split(toStr(v), "\n")
	var b strings.Builder
	if truthy(arg(args, kw, 1, "first", false)) {
		b.WriteString(pad)
	}
	blank := truthy(arg(args, kw, 2, "blank", false))
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
			if blank || l != "" {
				b.WriteString(pad)
			}
		}
		b.WriteString(l)
	}
	return b.String(), nil
}

func fItems(_ *evaluator, v any, _ []any, _ *kwargs) (any, error) {
	switch d := v.(type) {
	case *dict:
		m := dictMethod(d, "items")
		return m.fn(nil, nil, nil)
	case undefined:
		return newList(), nil
	}
	return nil, fmt.Errorf("can only get item pairs from a mapping, not %s", typeName(v))
}

func fJoin(e *evaluator, v any, args []any, kw *kwargs) (any, error) {
	items, err := seq(e, v)
	if err != nil {
		return nil, err
	}
	sep := toStr(arg(args, kw, 0, "d", ""))
	attr := arg(args, kw, 1, "attribute", nil)
	parts := make([]string, len(items))
	for i, it := range items {
		if attr != nil {
			if it, err = attrPath(it, attr); err != nil {
				return nil, err
			}
		}
		parts[i] = toStr(it)
	}
	return strings.Join(parts, sep), nil
}

func fLength(_ *evaluator, v any, _ []any, _ *kwargs) (any, error) {
	n, err := length(v)
	return int64(n), err
}

func fList(e *evaluator, v any, _ []any, _ *kwargs) (any, error) {
	items, err := seq(e, v)
	return newList(append([]any(nil), items...)...), err
}

// attrPath looks up a dotted attribute path ("a.b", or an int index),
// as jinja2's make_attrgetter does.
func attrPath(v any, path any) (any, error) {
	if n, ok := path.(int64); ok {
		return getItem(v, n)
	}
	for _, part := range strings.Split(toStr(path), ".") {
		var key any = part
		if n, err := strconv.ParseInt(part, 10, 64); err == nil {
			key = n
		}
		var err error
		if v, err = getItem(v, key); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func fMap(e *evaluator, v any, args []any, kw *kwargs) (any, error) {
	if !truthy(v) { // jinja2 maps a false value to nothing
		return newList(), nil
	}
	items, err := seq(e, v)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	if a, ok := kw.get("attribute"); ok {
		def, hasDef := kw.get("default")
		for i, it := range items {
			if out[i], err = attrPath(it, a); err != nil {
				return nil, err
			}
			if _, undef := out[i].(undefined); undef && hasDef {
				out[i] = def
			}
		}
		return newList(out...), nil
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("map requires a filter name or attribute=")
	}
	name := toStr(args[0])
	fn, ok := filters[name]
	if !ok {
		return nil, fmt.Errorf("no filter named '%s'", name)
	}
	for i, it := range items {
		if out[i], err = fn(e, it, args[1:], kw); err != nil {
			return nil, err
		}
	}
	return newList(out...), nil
}

func fMinMax(sign int) filterFunc {
	return func(e *evaluator, v any, args []any, kw *kwargs) (any, error) {
		items, err := seq(e, v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return undefined{hint: "no items in the sequence"}, nil
		}
		attr := arg(args, kw, 1, "attribute", nil)
		key := func(x any) any {
			if attr != nil {
				x, _ = attrPath(x, attr)
			}
			if s, ok := x.(string); ok && !truthy(arg(args, kw, 0, "case_sensitive", false)) {
				return strings.ToLower(s)
			}
			return x
		}
		best := items[0]
		for _, it := range items[1:] {
			c, err := compare(key(it), key(best))
			if err != nil {
				return nil, err
			}
			if c*sign > 0 {
				best = it
			}
		}
		return best, nil
	}
}

// fSelect implements select, reject, selectattr and rejectattr.
func fSelect(keep, byAttr bool) filterFunc {
	return func(e *evaluator, v any, args []any, kw *kwargs) (any, error) {
		if !truthy(v) { // jinja2 selects nothing from a false value
			return newList(), nil
		}
		items, err := seq(e, v)
		if err != nil {
			return nil, err
		}
		var attr any
		if byAttr {
			if len(args) == 0 {
				return nil, fmt.Errorf("missing attribute")
			}
			attr, args = args[0], args[1:]
		}
		var out []any
		for _, it := range items {
			x := it
			if byAttr {
				if x, err = attrPath(it, attr); err != nil {
					return nil, err
				}
			}
			var ok bool
			if len(args) == 0 {
				ok = truthy(x)
			} else if ok, err = runTest(toStr(args[0]), x, args[1:]); err != nil {
				return nil, err
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return newList(out...), nil
	}
}

func fReplace(_ *evaluator, v any, args []any, kw *kwargs) (any, error) {
	n, err := intArg(args, kw, 2, "count", -1)
	if err != nil {
		return nil, err
	}
	return strings.Replace(toStr(v), toStr(arg(args, kw, 0, "old", "")), toStr(arg(args, kw, 1, "new", "")), int(n)), nil
}

func fReverse(e *evaluator, v any, _ []any, _ *kwargs) (any, error) {
	if s, ok := v.(string); ok {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	}
	items, err := seq(e, v)
	out := make([]any, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return newList(out...), err
}

func fRound(_ *evaluator, v any, args []any, kw *kwargs) (any, error) {
	prec, err := intArg(args, kw, 0, "precision", 0)
	if err != nil {
		return nil, err
	}
	method := toStr(arg(args, kw, 1, "method", "common"))
	p := math.Pow(10, float64(prec))
	f := toFloat(v) * p
	switch method {
	case "ceil":
		f = math.Ceil(f)
	case "floor":
		f = math.Floor(f)
	default:
		f = math.Round(f)
	}
	return f / p, nil
}

func fSort(e *evaluator, v any, args []any, kw *kwargs) (any, error) {
	items, err := seq(e, v)
	if err != nil {
		return nil, err
	}
	out := append([]any(nil), items...)
	attr := arg(args, kw, 2, "attribute", nil)
	cs := truthy(arg(args, kw, 1, "case_sensitive", false))
	err = sortValues(out, func(x any) any {
		if attr != nil {
			x, _ = attrPath(x, attr)
		}
		if s, ok := x.(string); ok && !cs {
			return strings.ToLower(s)
		}
		return x
	}, truthy(arg(args, kw, 0, "reverse", false)))
	return newList(out...), err
}

func fSum(e *evaluator, v any, args []any, kw *kwargs) (any, error) {
	items, err := seq(e, v)
	if err != nil {
		return nil, err
	}
	attr := arg(args, kw, 0, "attribute", nil)
	var total any = arg(args, kw, 1, "start", int64(0))
	for _, it := range items {
		if attr != nil {
			if it, err = attrPath(it, attr); err != nil {
				return nil, err
			}
		}
		if total, err = e.binary("+", total, it); err != nil {
			return nil, err
		}
	}
	return total, nil
}

func fTrim(_ *evaluator, v any, args []any, kw *kwargs) (any, error) {
	if c := arg(args, kw, 0, "chars", nil); c != nil {
		return strings.Trim(toStr(v), toStr(c)), nil
	}
	return strings.TrimFunc(toStr(v), unicode.IsSpace), nil
}

func fUnique(e *evaluator, v any, args []any, kw *kwargs) (any, error) {
	items, err := seq(e, v)
	if err != nil {
		return nil, err
	}
	var out []any
	for _, it := range items {
		dup := false
		for _, o := range out {
			if equal(o, it) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, it)
		}
	}
	return newList(out...), nil
}
