package chattemplate

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// limits bound one rendering, so that no template can hang the server
// or exhaust its memory.
type limits struct {
	maxOutput int   // bytes of rendered output
	maxAlloc  int   // bytes of strings and list slots built, summed over the rendering
	maxSteps  int64 // statements run, loop iterations and calls
	maxDepth  int   // nesting of macro calls and recursive loops
}

var defaultLimits = limits{
	maxOutput: 16 << 20,
	maxAlloc:  256 << 20,
	maxSteps:  2_000_000,
	maxDepth:  100,
}

// ErrLimit is wrapped by the error of a rendering stopped by a limit.
var ErrLimit = errors.New("chat template exceeded its resource limits")

// Exception is the error of a template's raise_exception(msg).
type Exception struct{ Message string }

func (e *Exception) Error() string { return "chat template error: " + e.Message }

var (
	errBreak    = errors.New("break outside a loop")
	errContinue = errors.New("continue outside a loop")
)

type scope struct {
	vars   map[string]any
	parent *scope
}

func newScope(parent *scope) *scope { return &scope{vars: map[string]any{}, parent: parent} }

func (s *scope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

type evaluator struct {
	lim   limits
	top   *strings.Builder
	out   *strings.Builder
	steps int64
	alloc int
	depth int
	now   func() time.Time
}

func (e *evaluator) step() error {
	e.steps++
	if e.steps > e.lim.maxSteps {
		return fmt.Errorf("%w: more than %d steps", ErrLimit, e.lim.maxSteps)
	}
	return nil
}

// charge counts n bytes built towards the allocation limit.
func (e *evaluator) charge(n int) error {
	e.alloc += n
	if e.alloc > e.lim.maxAlloc {
		return fmt.Errorf("%w: more than %d bytes built", ErrLimit, e.lim.maxAlloc)
	}
	return nil
}

// chargeN charges n items of size bytes each, without overflowing.
func (e *evaluator) chargeN(n int64, size int) error {
	if size > 0 && n > int64(e.lim.maxAlloc-e.alloc)/int64(size) {
		return fmt.Errorf("%w: more than %d bytes built", ErrLimit, e.lim.maxAlloc)
	}
	return e.charge(int(n) * size)
}

// chargeValue charges a value a filter, method or operator built.
func (e *evaluator) chargeValue(v any) error {
	switch x := v.(type) {
	case string:
		return e.charge(len(x))
	case *list:
		return e.charge(16 * len(x.items))
	case *dict:
		return e.charge(32 * len(x.keys))
	}
	return nil
}

func (e *evaluator) write(s string) error {
	if err := e.charge(len(s)); err != nil {
		return err
	}
	e.out.WriteString(s)
	if e.out == e.top && e.top.Len() > e.lim.maxOutput {
		return fmt.Errorf("%w: output larger than %d bytes", ErrLimit, e.lim.maxOutput)
	}
	return nil
}

// capture runs f with the output going to a new buffer and returns
// what it wrote.
func (e *evaluator) capture(f func() error) (string, error) {
	saved := e.out
	var b strings.Builder
	e.out = &b
	err := f()
	e.out = saved
	return b.String(), err
}

// filteredBody renders a block's body and passes the text through its
// filters ({% set x | f %}…{% endset %}, {% filter f %}…{% endfilter %}).
func (e *evaluator) filteredBody(body []node, filters []*filterExpr, s *scope) (any, error) {
	text, err := e.capture(func() error { return e.exec(body, s) })
	if err != nil {
		return nil, err
	}
	var v any = text
	for _, f := range filters {
		if v, err = e.filter(f, v, s); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (e *evaluator) enter() error {
	e.depth++
	if e.depth > e.lim.maxDepth {
		return fmt.Errorf("%w: calls nested more than %d deep", ErrLimit, e.lim.maxDepth)
	}
	return nil
}

func (e *evaluator) exec(nodes []node, s *scope) error {
	for _, n := range nodes {
		if err := e.step(); err != nil {
			return err
		}
		if err := e.execNode(n, s); err != nil {
			return err
		}
	}
	return nil
}

func lineErr(line int, err error) error {
	var ex *Exception
	if err == nil || line == 0 || errors.As(err, &ex) || errors.Is(err, ErrLimit) || errors.Is(err, errBreak) || errors.Is(err, errContinue) {
		return err
	}
	var le *lineError
	if errors.As(err, &le) {
		return err
	}
	return &lineError{line: line, err: err}
}

type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("chat template, line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

func (e *evaluator) execNode(n node, s *scope) error {
	switch n := n.(type) {
	case *textNode:
		return e.write(n.s)
	case *outputNode:
		v, err := e.eval(n.x, s)
		if err != nil {
			return lineErr(n.line, err)
		}
		return e.write(toStr(v))
	case *ifNode:
		for i, c := range n.conds {
			v, err := e.eval(c, s)
			if err != nil {
				return err
			}
			if truthy(v) {
				return e.exec(n.bodies[i], s)
			}
		}
		return e.exec(n.els, s)
	case *forNode:
		v, err := e.eval(n.iter, s)
		if err != nil {
			return lineErr(n.line, err)
		}
		return lineErr(n.line, e.forLoop(n, v, s, 0))
	case *setNode:
		v, err := e.eval(n.value, s)
		if err != nil {
			return lineErr(n.line, err)
		}
		return lineErr(n.line, e.assign(n.targets, v, s))
	case *setBlockNode:
		v, err := e.filteredBody(n.body, n.filters, s)
		if err != nil {
			return err
		}
		return e.assign([]expr{n.target}, v, s)
	case *macroNode:
		s.vars[n.name] = e.macro(n.name, n.params, n.body, s, nil)
		return nil
	case *callBlockNode:
		caller := e.macro("caller", n.params, n.body, s, nil)
		v, err := e.call(n.call, s, caller)
		if err != nil {
			return err
		}
		return e.write(toStr(v))
	case *filterBlockNode:
		v, err := e.filteredBody(n.body, n.filters, s)
		if err != nil {
			return err
		}
		return e.write(toStr(v))
	case *withNode:
		inner := newScope(s)
		for i, name := range n.names {
			v, err := e.eval(n.vals[i], s)
			if err != nil {
				return err
			}
			inner.vars[name] = v
		}
		return e.exec(n.body, inner)
	case *loopCtlNode:
		if n.brk {
			return errBreak
		}
		return errContinue
	}
	return fmt.Errorf("unknown node %T", n)
}

func (e *evaluator) assign(targets []expr, v any, s *scope) error {
	if len(targets) > 1 {
		items, err := iterate(v)
		if err != nil {
			return fmt.Errorf("cannot unpack non-iterable %s object", typeName(v))
		}
		if len(items) != len(targets) {
			return fmt.Errorf("cannot unpack %d values into %d names", len(items), len(targets))
		}
		for i, t := range targets {
			if err := e.assign([]expr{t}, items[i], s); err != nil {
				return err
			}
		}
		return nil
	}
	switch t := targets[0].(type) {
	case *nameExpr:
		s.vars[t.name] = v
		return nil
	case *attrExpr:
		obj, err := e.eval(t.obj, s)
		if err != nil {
			return err
		}
		ns, ok := obj.(*dict)
		if !ok || !ns.namespace {
			return fmt.Errorf("cannot assign attribute on non-namespace object")
		}
		ns.set(t.name, v)
		return nil
	}
	return fmt.Errorf("cannot assign to %T", targets[0])
}

// loopInfo is the `loop` variable.
type loopInfo struct {
	items   []any
	index0  int
	depth0  int
	changed *any
	recurse func(v any) (any, error)
}

func (e *evaluator) forLoop(n *forNode, v any, s *scope, depth int) error {
	items, err := iterate(v)
	if err != nil {
		return err
	}
	if err := e.charge(16 * len(items)); err != nil {
		return err
	}
	bind := func(sc *scope, item any) error {
		if len(n.targets) == 1 {
			sc.vars[n.targets[0]] = item
			return nil
		}
		parts, err := iterate(item)
		if err != nil {
			return fmt.Errorf("cannot unpack non-iterable %s object", typeName(item))
		}
		if len(parts) != len(n.targets) {
			return fmt.Errorf("cannot unpack %d values into %d names", len(parts), len(n.targets))
		}
		for i, name := range n.targets {
			sc.vars[name] = parts[i]
		}
		return nil
	}
	if n.cond != nil {
		var kept []any
		for _, it := range items {
			if err := e.step(); err != nil {
				return err
			}
			sc := newScope(s)
			if err := bind(sc, it); err != nil {
				return err
			}
			c, err := e.eval(n.cond, sc)
			if err != nil {
				return err
			}
			if truthy(c) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		return e.exec(n.els, s)
	}
	var last any = undefined{}
	loop := &loopInfo{items: items, depth0: depth, changed: &last}
	if n.recursive {
		loop.recurse = func(v any) (any, error) {
			if err := e.enter(); err != nil {
				return nil, err
			}
			defer func() { e.depth-- }()
			return e.capture(func() error { return e.forLoop(n, v, s, depth+1) })
		}
	}
	for i, it := range items {
		if err := e.step(); err != nil {
			return err
		}
		sc := newScope(s)
		if err := bind(sc, it); err != nil {
			return err
		}
		loop.index0 = i
		sc.vars["loop"] = loop
		err := e.exec(n.body, sc)
		if errors.Is(err, errBreak) {
			break
		}
		if err != nil && !errors.Is(err, errContinue) {
			return err
		}
	}
	return nil
}

func (l *loopInfo) attr(name string) any {
	n := len(l.items)
	switch name {
	case "index0":
		return int64(l.index0)
	case "index":
		return int64(l.index0 + 1)
	case "revindex":
		return int64(n - l.index0)
	case "revindex0":
		return int64(n - l.index0 - 1)
	case "first":
		return l.index0 == 0
	case "last":
		return l.index0 == n-1
	case "length":
		return int64(n)
	case "depth":
		return int64(l.depth0 + 1)
	case "depth0":
		return int64(l.depth0)
	case "previtem":
		if l.index0 > 0 {
			return l.items[l.index0-1]
		}
		return undefined{hint: "there is no previous item"}
	case "nextitem":
		if l.index0 < n-1 {
			return l.items[l.index0+1]
		}
		return undefined{hint: "there is no next item"}
	case "cycle":
		return &callable{name: "loop.cycle", fn: func(e *evaluator, args []any, kw *kwargs) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("no items for cycling given")
			}
			return args[l.index0%len(args)], nil
		}}
	case "changed":
		return &callable{name: "loop.changed", fn: func(e *evaluator, args []any, kw *kwargs) (any, error) {
			v := any(newList(args...))
			if equal(*l.changed, v) {
				return false, nil
			}
			*l.changed = v
			return true, nil
		}}
	}
	return undefined{hint: fmt.Sprintf("'LoopContext' object has no attribute '%s'", name)}
}

// macro makes a callable that renders body with params bound, in a
// scope whose parent is the one the macro was defined in.
func (e *evaluator) macro(name string, params []param, body []node, def *scope, _ any) *callable {
	return &callable{name: name, fn: func(e *evaluator, args []any, kw *kwargs) (any, error) {
		if err := e.enter(); err != nil {
			return nil, err
		}
		defer func() { e.depth-- }()
		s := newScope(def)
		var extra []any
		for i, a := range args {
			if i < len(params) {
				s.vars[params[i].name] = a
			} else {
				extra = append(extra, a)
			}
		}
		extraKw := newDict()
		for i := 0; i < kw.len(); i++ {
			k, v := kw.names[i], kw.vals[i]
			known := k == "caller"
			for _, p := range params {
				known = known || p.name == k
			}
			if known {
				s.vars[k] = v
			} else {
				extraKw.set(k, v)
			}
		}
		for _, p := range params {
			if _, ok := s.vars[p.name]; ok {
				continue
			}
			if p.def == nil {
				s.vars[p.name] = undefined{hint: fmt.Sprintf("parameter '%s' was not provided", p.name)}
				continue
			}
			v, err := e.eval(p.def, s)
			if err != nil {
				return nil, err
			}
			s.vars[p.name] = v
		}
		s.vars["varargs"] = newList(extra...)
		s.vars["kwargs"] = extraKw
		out, err := e.capture(func() error { return e.exec(body, s) })
		if errors.Is(err, errBreak) || errors.Is(err, errContinue) {
			err = fmt.Errorf("'break' or 'continue' outside a loop")
		}
		return out, err
	}}
}
