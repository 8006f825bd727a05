package chattemplate

// Expressions.
type (
	expr      any
	constExpr struct{ v any }
	nameExpr  struct{ name string }
	listExpr  struct {
		items []expr
		tuple bool
	}
	dictExpr struct{ keys, vals []expr }
	attrExpr struct {
		obj  expr
		name string
	}
	itemExpr  struct{ obj, key expr }
	sliceExpr struct{ obj, lo, hi, step expr }
	callExpr  struct {
		fn   expr
		args []expr
		kw   []string
		kwv  []expr
	}
	filterExpr struct {
		obj  expr // nil in a filter block or a set block
		name string
		args []expr
		kw   []string
		kwv  []expr
	}
	testExpr struct {
		obj  expr
		name string
		args []expr
		neg  bool
	}
	unaryExpr struct {
		op string // "-", "+", "not"
		x  expr
	}
	binExpr struct {
		op   string // + - * / // % ** ~ and or
		l, r expr
	}
	compareExpr struct {
		first expr
		ops   []string // == != < <= > >= in notin
		rest  []expr
	}
	condExpr struct{ cond, yes, no expr }
)

func (p *parser) expr() (expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxParseDepth {
		return nil, p.errorf("expression nested too deeply")
	}
	return p.condExpr()
}

// tupleOrExpr parses "a, b, …" as a tuple and a lone expression as
// itself; a for loop's iterable is read without conditional
// expressions, so that "for x in y if c" filters.
func (p *parser) tupleOrExpr(condexpr bool) (expr, error) {
	one := p.expr
	if !condexpr {
		one = p.orExpr
	}
	x, err := one()
	if err != nil || !p.isOp(",") {
		return x, err
	}
	items := []expr{x}
	for p.acceptOp(",") {
		if k := p.peek().kind; k == tBlockEnd || k == tVarEnd || p.isName("if") {
			break
		}
		y, err := one()
		if err != nil {
			return nil, err
		}
		items = append(items, y)
	}
	return &listExpr{items: items, tuple: true}, nil
}

func (p *parser) condExpr() (expr, error) {
	x, err := p.orExpr()
	if err != nil {
		return nil, err
	}
	for p.acceptName("if") {
		c, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		var no expr
		if p.acceptName("else") {
			if no, err = p.condExpr(); err != nil {
				return nil, err
			}
		}
		x = &condExpr{cond: c, yes: x, no: no}
	}
	return x, nil
}

func (p *parser) orExpr() (expr, error) {
	x, err := p.andExpr()
	for err == nil && p.acceptName("or") {
		var y expr
		y, err = p.andExpr()
		x = &binExpr{op: "or", l: x, r: y}
	}
	return x, err
}

func (p *parser) andExpr() (expr, error) {
	x, err := p.notExpr()
	for err == nil && p.acceptName("and") {
		var y expr
		y, err = p.notExpr()
		x = &binExpr{op: "and", l: x, r: y}
	}
	return x, err
}

func (p *parser) notExpr() (expr, error) {
	if p.acceptName("not") {
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxParseDepth {
			return nil, p.errorf("expression nested too deeply")
		}
		x, err := p.notExpr()
		return &unaryExpr{op: "not", x: x}, err
	}
	return p.compare()
}

func (p *parser) compare() (expr, error) {
	x, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	var c *compareExpr
	for {
		var op string
		t := p.peek()
		switch {
		case t.kind == tOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			op = t.val
			p.pos++
		case p.isName("in"):
			op = "in"
			p.pos++
		case p.isName("not") && p.toks[p.pos+1].kind == tName && p.toks[p.pos+1].val == "in":
			op = "notin"
			p.pos += 2
		default:
			if c == nil {
				return x, nil
			}
			return c, nil
		}
		y, err := p.binary(0)
		if err != nil {
			return nil, err
		}
		if c == nil {
			c = &compareExpr{first: x}
		}
		c.ops, c.rest = append(c.ops, op), append(c.rest, y)
	}
}

// Binary operators from loosest to tightest, as jinja2 groups them.
var binLevels = [][]string{{"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}}

func (p *parser) binary(level int) (expr, error) {
	if level == len(binLevels) {
		return p.unary(true)
	}
	x, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		matched := false
		for _, op := range binLevels[level] {
			if t.kind == tOp && t.val == op {
				matched = true
			}
		}
		if !matched {
			return x, nil
		}
		p.pos++
		y, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		x = &binExpr{op: t.val, l: x, r: y}
	}
}

func (p *parser) unary(withFilter bool) (expr, error) {
	var x expr
	var err error
	switch {
	case p.isOp("-") || p.isOp("+"):
		op := p.next().val
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxParseDepth {
			return nil, p.errorf("expression nested too deeply")
		}
		var y expr
		if y, err = p.unary(false); err != nil {
			return nil, err
		}
		x = &unaryExpr{op: op, x: y}
	default:
		if x, err = p.primary(); err != nil {
			return nil, err
		}
	}
	if x, err = p.postfix(x); err != nil {
		return nil, err
	}
	if withFilter {
		return p.filters(x)
	}
	return x, nil
}

func (p *parser) primary() (expr, error) {
	t := p.next()
	switch t.kind {
	case tName:
		switch t.val {
		case "true", "True":
			return &constExpr{true}, nil
		case "false", "False":
			return &constExpr{false}, nil
		case "none", "None":
			return &constExpr{nil}, nil
		}
		return &nameExpr{name: t.val}, nil
	case tString:
		s := t.val
		for p.peek().kind == tString {
			s += p.next().val
		}
		return &constExpr{s}, nil
	case tInt, tFloat:
		return &constExpr{t.num}, nil
	case tOp:
		switch t.val {
		case "(":
			if p.acceptOp(")") {
				return &listExpr{tuple: true}, nil
			}
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.acceptOp(")") {
				return x, nil
			}
			items := []expr{x}
			for p.acceptOp(",") {
				if p.isOp(")") {
					break
				}
				y, err := p.expr()
				if err != nil {
					return nil, err
				}
				items = append(items, y)
			}
			return &listExpr{items: items, tuple: true}, p.expectOp(")")
		case "[":
			l := &listExpr{}
			for !p.acceptOp("]") {
				if len(l.items) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.acceptOp("]") {
						break
					}
				}
				x, err := p.expr()
				if err != nil {
					return nil, err
				}
				l.items = append(l.items, x)
			}
			return l, nil
		case "{":
			d := &dictExpr{}
			for !p.acceptOp("}") {
				if len(d.keys) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.acceptOp("}") {
						break
					}
				}
				k, err := p.expr()
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.expr()
				if err != nil {
					return nil, err
				}
				d.keys, d.vals = append(d.keys, k), append(d.vals, v)
			}
			return d, nil
		}
	}
	p.pos--
	return nil, p.errorf("unexpected %s", describe(t))
}

func (p *parser) postfix(x expr) (expr, error) {
	for {
		var err error
		switch {
		case p.acceptOp("."):
			t := p.next()
			switch t.kind {
			case tName:
				x = &attrExpr{obj: x, name: t.val}
			case tInt:
				x = &itemExpr{obj: x, key: &constExpr{t.num}}
			default:
				return nil, p.errorf("expected an attribute name after '.'")
			}
		case p.acceptOp("["):
			if x, err = p.subscript(x); err != nil {
				return nil, err
			}
		case p.isOp("("):
			if x, err = p.call(x); err != nil {
				return nil, err
			}
		default:
			return x, nil
		}
	}
}

func (p *parser) subscript(obj expr) (expr, error) {
	var parts [3]expr
	i, isSlice := 0, false
	for {
		if p.acceptOp("]") {
			break
		}
		if p.acceptOp(":") {
			isSlice = true
			i++
			if i > 2 {
				return nil, p.errorf("too many ':' in subscript")
			}
			continue
		}
		if parts[i] != nil {
			return nil, p.errorf("expected ']'")
		}
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		parts[i] = x
	}
	if !isSlice {
		if parts[0] == nil {
			return nil, p.errorf("empty subscript")
		}
		return &itemExpr{obj: obj, key: parts[0]}, nil
	}
	return &sliceExpr{obj: obj, lo: parts[0], hi: parts[1], step: parts[2]}, nil
}

func (p *parser) args() (args []expr, kw []string, kwv []expr, err error) {
	if err := p.expectOp("("); err != nil {
		return nil, nil, nil, err
	}
	for !p.acceptOp(")") {
		if len(args)+len(kw) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, nil, nil, err
			}
			if p.acceptOp(")") {
				break
			}
		}
		if p.isOp("*") || p.isOp("**") {
			return nil, nil, nil, p.errorf("*args and **kwargs in calls are not supported")
		}
		t := p.peek()
		if t.kind == tName && p.toks[p.pos+1].kind == tOp && p.toks[p.pos+1].val == "=" {
			p.pos += 2
			v, err := p.expr()
			if err != nil {
				return nil, nil, nil, err
			}
			kw, kwv = append(kw, t.val), append(kwv, v)
			continue
		}
		if len(kw) > 0 {
			return nil, nil, nil, p.errorf("positional argument after keyword argument")
		}
		v, err := p.expr()
		if err != nil {
			return nil, nil, nil, err
		}
		args = append(args, v)
	}
	return args, kw, kwv, nil
}

func (p *parser) call(fn expr) (expr, error) {
	args, kw, kwv, err := p.args()
	return &callExpr{fn: fn, args: args, kw: kw, kwv: kwv}, err
}

func (p *parser) filterCall(obj expr) (*filterExpr, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	for p.acceptOp(".") {
		n, err := p.expectName()
		if err != nil {
			return nil, err
		}
		name += "." + n
	}
	f := &filterExpr{obj: obj, name: name}
	if p.isOp("(") {
		if f.args, f.kw, f.kwv, err = p.args(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) filters(x expr) (expr, error) {
	for {
		switch {
		case p.acceptOp("|"):
			f, err := p.filterCall(x)
			if err != nil {
				return nil, err
			}
			x = f
		case p.acceptName("is"):
			t := &testExpr{obj: x, neg: p.acceptName("not")}
			name, err := p.expectName()
			if err != nil {
				return nil, err
			}
			t.name = name
			nt := p.peek()
			switch {
			case p.isOp("("):
				if t.args, _, _, err = p.args(); err != nil {
					return nil, err
				}
			case (nt.kind == tName || nt.kind == tString || nt.kind == tInt || nt.kind == tFloat || p.isOp("[") || p.isOp("{")) &&
				!p.isName("else") && !p.isName("or") && !p.isName("and"):
				if p.isName("is") {
					return nil, p.errorf("you cannot chain multiple tests with is")
				}
				a, err := p.primary()
				if err != nil {
					return nil, err
				}
				if a, err = p.postfix(a); err != nil {
					return nil, err
				}
				t.args = []expr{a}
			}
			x = t
		case p.isOp("("):
			var err error
			if x, err = p.call(x); err != nil {
				return nil, err
			}
		default:
			return x, nil
		}
	}
}
