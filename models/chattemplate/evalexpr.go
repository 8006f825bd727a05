package chattemplate

import (
	"fmt"
	"html"
	"math"
	"strings"
)

func (e *evaluator) eval(x expr, s *scope) (any, error) {
	switch x := x.(type) {
	case *constExpr:
		return x.v, nil
	case *nameExpr:
		if v, ok := s.lookup(x.name); ok {
			return v, nil
		}
		if f, ok := globals[x.name]; ok {
			return f, nil
		}
		return undefined{hint: fmt.Sprintf("'%s' is undefined", x.name)}, nil
	case *listExpr:
		l := &list{items: make([]any, 0, len(x.items))}
		for _, it := range x.items {
			v, err := e.eval(it, s)
			if err != nil {
				return nil, err
			}
			l.items = append(l.items, v)
		}
		return l, e.chargeValue(l)
	case *dictExpr:
		d := newDict()
		for i := range x.keys {
			k, err := e.eval(x.keys[i], s)
			if err != nil {
				return nil, err
			}
			v, err := e.eval(x.vals[i], s)
			if err != nil {
				return nil, err
			}
			d.set(k, v)
		}
		return d, e.chargeValue(d)
	case *attrExpr:
		obj, err := e.eval(x.obj, s)
		if err != nil {
			return nil, err
		}
		return getAttr(obj, x.name)
	case *itemExpr:
		obj, err := e.eval(x.obj, s)
		if err != nil {
			return nil, err
		}
		k, err := e.eval(x.key, s)
		if err != nil {
			return nil, err
		}
		return getItem(obj, k)
	case *sliceExpr:
		return e.slice(x, s)
	case *callExpr:
		return e.call(x, s, nil)
	case *filterExpr:
		obj, err := e.eval(x.obj, s)
		if err != nil {
			return nil, err
		}
		return e.filter(x, obj, s)
	case *testExpr:
		obj, err := e.eval(x.obj, s)
		if err != nil {
			return nil, err
		}
		args, err := e.evalList(x.args, s)
		if err != nil {
			return nil, err
		}
		if err := e.step(); err != nil {
			return nil, err
		}
		ok, err := runTest(x.name, obj, args)
		return ok != x.neg, err
	case *unaryExpr:
		v, err := e.eval(x.x, s)
		if err != nil {
			return nil, err
		}
		switch x.op {
		case "not":
			return !truthy(v), nil
		case "-":
			switch n := v.(type) {
			case int64:
				return -n, nil
			case float64:
				return -n, nil
			case bool:
				i, _ := asInt(n)
				return -i, nil
			}
		case "+":
			if isNumber(v) {
				return v, nil
			}
		}
		if u, ok := v.(undefined); ok {
			return nil, u.err()
		}
		return nil, fmt.Errorf("bad operand type for unary %s: '%s'", x.op, typeName(v))
	case *binExpr:
		l, err := e.eval(x.l, s)
		if err != nil {
			return nil, err
		}
		switch x.op {
		case "and":
			if !truthy(l) {
				return l, nil
			}
			return e.eval(x.r, s)
		case "or":
			if truthy(l) {
				return l, nil
			}
			return e.eval(x.r, s)
		}
		r, err := e.eval(x.r, s)
		if err != nil {
			return nil, err
		}
		if x.op == "+" {
			l, r = markupAdd(x, l, r)
		}
		v, err := e.binary(x.op, l, r)
		if err != nil {
			return nil, err
		}
		return v, e.chargeValue(v)
	case *compareExpr:
		l := any(nil)
		l, err := e.eval(x.first, s)
		if err != nil {
			return nil, err
		}
		for i, op := range x.ops {
			r, err := e.eval(x.rest[i], s)
			if err != nil {
				return nil, err
			}
			ok, err := compareOp(op, l, r)
			if err != nil || !ok {
				return false, err
			}
			l = r
		}
		return true, nil
	case *condExpr:
		c, err := e.eval(x.cond, s)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return e.eval(x.yes, s)
		}
		if x.no == nil {
			return undefined{hint: "the inline if-expression evaluated to false and no else section was defined"}, nil
		}
		return e.eval(x.no, s)
	}
	return nil, fmt.Errorf("unknown expression %T", x)
}

func (e *evaluator) evalList(xs []expr, s *scope) ([]any, error) {
	out := make([]any, len(xs))
	for i, x := range xs {
		v, err := e.eval(x, s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (e *evaluator) evalKwargs(names []string, xs []expr, s *scope) (*kwargs, error) {
	if len(names) == 0 {
		return nil, nil
	}
	vals, err := e.evalList(xs, s)
	if err != nil {
		return nil, err
	}
	return &kwargs{names: names, vals: vals}, nil
}

func (e *evaluator) call(x *callExpr, s *scope, caller *callable) (any, error) {
	fn, err := e.eval(x.fn, s)
	if err != nil {
		return nil, err
	}
	args, err := e.evalList(x.args, s)
	if err != nil {
		return nil, err
	}
	kw, err := e.evalKwargs(x.kw, x.kwv, s)
	if err != nil {
		return nil, err
	}
	if caller != nil {
		if kw == nil {
			kw = &kwargs{}
		}
		kw.names, kw.vals = append(kw.names, "caller"), append(kw.vals, caller)
	}
	return e.callValue(fn, args, kw)
}

func (e *evaluator) callValue(fn any, args []any, kw *kwargs) (any, error) {
	if err := e.step(); err != nil {
		return nil, err
	}
	switch f := fn.(type) {
	case *callable:
		v, err := f.fn(e, args, kw)
		if err != nil {
			return nil, err
		}
		return v, e.chargeValue(v)
	case *loopInfo:
		if f.recurse == nil {
			return nil, fmt.Errorf("the loop is not recursive; mark it 'recursive' to call it")
		}
		if len(args) != 1 {
			return nil, fmt.Errorf("loop() takes one argument")
		}
		return f.recurse(args[0])
	case undefined:
		return nil, f.err()
	}
	return nil, fmt.Errorf("'%s' object is not callable", typeName(fn))
}

func (e *evaluator) slice(x *sliceExpr, s *scope) (any, error) {
	obj, err := e.eval(x.obj, s)
	if err != nil {
		return nil, err
	}
	var idx [3]*int64
	for i, p := range []expr{x.lo, x.hi, x.step} {
		if p == nil {
			continue
		}
		v, err := e.eval(p, s)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		n, ok := asInt(v)
		if !ok {
			return nil, fmt.Errorf("slice indices must be integers or None")
		}
		idx[i] = &n
	}
	var items []any
	var runes []rune
	switch o := obj.(type) {
	case *list:
		items = o.items
	case string:
		runes = []rune(o)
	case undefined:
		return nil, o.err()
	default:
		return nil, fmt.Errorf("'%s' object is not subscriptable", typeName(obj))
	}
	n := len(items) + len(runes)
	pick := pySlice(n, idx)
	if pick == nil {
		return nil, fmt.Errorf("slice step cannot be zero")
	}
	if err := e.charge(len(pick) * 8); err != nil {
		return nil, err
	}
	if runes != nil || obj == "" {
		var b strings.Builder
		for _, i := range pick {
			b.WriteRune(runes[i])
		}
		return b.String(), nil
	}
	out := make([]any, len(pick))
	for j, i := range pick {
		out[j] = items[i]
	}
	return &list{items: out}, nil
}

// pySlice returns the indexes Python's seq[lo:hi:step] picks from a
// sequence of length n; nil for a zero step.
func pySlice(n int, idx [3]*int64) []int {
	step := int64(1)
	if idx[2] != nil {
		step = *idx[2]
	}
	if step == 0 {
		return nil
	}
	norm := func(p *int64, def int64, lo, hi int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += int64(n)
		}
		return max(lo, min(hi, v))
	}
	out := []int{}
	if step > 0 {
		lo, hi := norm(idx[0], 0, 0, int64(n)), norm(idx[1], int64(n), 0, int64(n))
		for i := lo; i < hi; i += step {
			out = append(out, int(i))
		}
	} else {
		lo, hi := norm(idx[0], int64(n)-1, -1, int64(n)-1), norm(idx[1], -1, -1, int64(n)-1)
		if idx[1] != nil && *idx[1] < 0 && *idx[1]+int64(n) < 0 {
			hi = -1
		}
		for i := lo; i > hi; i += step {
			out = append(out, int(i))
		}
	}
	return out
}

func (e *evaluator) binary(op string, l, r any) (any, error) {
	if op == "+" || op == "~" {
		// llama.cpp's Jinja engine (llama-server) joins a string with
		// None or an undefined value as if that were "", where jinja2
		// fails ("+") or writes "None" ("~"); templates such as
		// firefunction v2's add an undefined `functions` this way.
		ls, lok := l.(string)
		rs, rok := r.(string)
		if lok && isNull(r) {
			return ls, nil
		}
		if rok && isNull(l) {
			return rs, nil
		}
	}
	if op == "~" {
		return toStr(l) + toStr(r), nil
	}
	if u, ok := l.(undefined); ok {
		return nil, u.err()
	}
	if u, ok := r.(undefined); ok {
		return nil, u.err()
	}
	if isNumber(l) && isNumber(r) {
		return arith(op, l, r)
	}
	switch op {
	case "+":
		switch a := l.(type) {
		case string:
			if b, ok := r.(string); ok {
				return a + b, nil
			}
			return nil, fmt.Errorf("can only concatenate str (not \"%s\") to str", typeName(r))
		case *list:
			if b, ok := r.(*list); ok {
				items := make([]any, 0, len(a.items)+len(b.items))
				return &list{items: append(append(items, a.items...), b.items...)}, nil
			}
			return nil, fmt.Errorf("can only concatenate list (not \"%s\") to list", typeName(r))
		}
	case "*":
		seq, n := l, r
		if isNumber(l) {
			seq, n = r, l
		}
		count, ok := asInt(n)
		if ok {
			count = max(count, 0)
			switch s := seq.(type) {
			case string:
				if err := e.chargeN(count, len(s)); err != nil {
					return nil, err
				}
				return strings.Repeat(s, int(count)), nil
			case *list:
				if err := e.chargeN(count, 16*len(s.items)); err != nil {
					return nil, err
				}
				out := make([]any, 0, int(count)*len(s.items))
				for range count {
					out = append(out, s.items...)
				}
				return &list{items: out}, nil
			}
		}
	case "%":
		if _, ok := l.(string); ok {
			return nil, fmt.Errorf("printf-style string formatting is not supported")
		}
	}
	return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(l), typeName(r))
}

func arith(op string, l, r any) (any, error) {
	ai, aInt := asInt(l)
	bi, bInt := asInt(r)
	if aInt && bInt {
		switch op {
		case "+":
			return ai + bi, nil
		case "-":
			return ai - bi, nil
		case "*":
			return ai * bi, nil
		case "//", "%":
			if bi == 0 {
				return nil, fmt.Errorf("integer division or modulo by zero")
			}
			q, m := ai/bi, ai%bi
			if m != 0 && (m < 0) != (bi < 0) {
				q, m = q-1, m+bi
			}
			if op == "//" {
				return q, nil
			}
			return m, nil
		case "**":
			if bi >= 0 {
				res := int64(1)
				for range min(bi, 64) {
					res *= ai
				}
				return res, nil
			}
		}
	}
	a, b := toFloat(l), toFloat(r)
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return a / b, nil
	case "//":
		if b == 0 {
			return nil, fmt.Errorf("float floor division by zero")
		}
		return math.Floor(a / b), nil
	case "%":
		if b == 0 {
			return nil, fmt.Errorf("float modulo")
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**":
		return math.Pow(a, b), nil
	}
	return nil, fmt.Errorf("unsupported operator %s", op)
}

// isMarkup reports whether x yields jinja2's Markup: an escape or safe
// filter, or a "+" with such an operand. Markup is tracked only this
// far, through the expression that builds it.
func isMarkup(x expr) bool {
	switch x := x.(type) {
	case *filterExpr:
		return x.name == "safe" || x.name == "e" || x.name == "escape"
	case *binExpr:
		return x.op == "+" && (isMarkup(x.l) || isMarkup(x.r))
	}
	return false
}

// markupAdd escapes the plain string added to Markup, as Markup.__add__
// and __radd__ do (functionary's template relies on it).
func markupAdd(x *binExpr, l, r any) (any, any) {
	lm, rm := isMarkup(x.l), isMarkup(x.r)
	if s, ok := r.(string); ok && lm && !rm {
		r = html.EscapeString(s)
	}
	if s, ok := l.(string); ok && rm && !lm {
		l = html.EscapeString(s)
	}
	return l, r
}

// isNull tells whether v is None or undefined.
func isNull(v any) bool {
	if v == nil {
		return true
	}
	_, ok := v.(undefined)
	return ok
}
