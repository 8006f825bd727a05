package chattemplate

import "fmt"

// Statements.
type (
	node       any
	textNode   struct{ s string }
	outputNode struct {
		x    expr
		line int
	}
	ifNode struct {
		conds  []expr
		bodies [][]node
		els    []node
	}
	forNode struct {
		targets   []string
		iter      expr
		cond      expr // for x in y if cond
		body, els []node
		recursive bool
		line      int
	}
	setNode struct {
		targets []expr // nameExpr or attrExpr (namespace attribute)
		value   expr
		line    int
	}
	setBlockNode struct {
		target  expr
		filters []*filterExpr // applied to the captured text, in order
		body    []node
	}
	macroNode struct {
		name   string
		params []param
		body   []node
	}
	callBlockNode struct {
		call   *callExpr
		params []param
		body   []node
	}
	filterBlockNode struct {
		filters []*filterExpr
		body    []node
	}
	withNode struct {
		names []string
		vals  []expr
		body  []node
	}
	loopCtlNode struct{ brk bool }
)

type param struct {
	name string
	def  expr // nil: required
}

type parser struct {
	toks  []token
	pos   int
	depth int
}

const maxParseDepth = 200

func parse(src string) ([]node, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	body, end, err := p.body()
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errorf("encountered unknown tag '%s'", end)
	}
	return body, nil
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) errorf(format string, a ...any) error {
	return &SyntaxError{Line: p.peek().line, Msg: fmt.Sprintf(format, a...)}
}

func (p *parser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tOp && t.val == op
}

func (p *parser) isName(name string) bool {
	t := p.peek()
	return t.kind == tName && t.val == name
}

func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) acceptName(name string) bool {
	if p.isName(name) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.errorf("expected '%s', got %s", op, describe(p.peek()))
	}
	return nil
}

func (p *parser) expectName() (string, error) {
	t := p.peek()
	if t.kind != tName {
		return "", p.errorf("expected a name, got %s", describe(t))
	}
	p.pos++
	return t.val, nil
}

func (p *parser) expectBlockEnd() error {
	if p.peek().kind != tBlockEnd {
		return p.errorf("expected end of statement block, got %s", describe(p.peek()))
	}
	p.pos++
	return nil
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of template"
	case tBlockEnd:
		return "'%}'"
	case tVarEnd:
		return "'}}'"
	case tString:
		return "string " + reprString(t.val)
	case tInt, tFloat:
		return fmt.Sprintf("number %v", t.num)
	}
	return "'" + t.val + "'"
}

// body parses nodes up to a block tag it does not know, whose name it
// returns with the parser left on that name ("" at the end).
func (p *parser) body() ([]node, string, error) {
	var out []node
	for {
		t := p.next()
		switch t.kind {
		case tEOF:
			return out, "", nil
		case tText:
			out = append(out, &textNode{t.val})
		case tVarBegin:
			x, err := p.expr()
			if err != nil {
				return nil, "", err
			}
			if p.peek().kind != tVarEnd {
				return nil, "", p.errorf("expected end of print statement, got %s", describe(p.peek()))
			}
			p.pos++
			out = append(out, &outputNode{x: x, line: t.line})
		case tBlockBegin:
			name := p.peek()
			if name.kind != tName {
				return nil, "", p.errorf("tag name expected")
			}
			n, err := p.statement(name.val)
			if err != nil {
				return nil, "", err
			}
			if n == nil {
				return out, name.val, nil
			}
			out = append(out, n)
		default:
			return nil, "", p.errorf("unexpected %s", describe(t))
		}
	}
}

// block parses a body that must end with one of ends; it returns the
// end met, with the parser after its name.
func (p *parser) block(what string, ends ...string) ([]node, string, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxParseDepth {
		return nil, "", p.errorf("blocks nested too deeply")
	}
	body, end, err := p.body()
	if err != nil {
		return nil, "", err
	}
	for _, e := range ends {
		if end == e {
			p.pos++
			return body, end, nil
		}
	}
	if end == "" {
		return nil, "", p.errorf("unexpected end of template: '%s' block not closed (expected '%s')", what, ends[len(ends)-1])
	}
	return nil, "", p.errorf("encountered unknown tag '%s' in a '%s' block", end, what)
}

// statement parses the block tag named name; it returns nil, without
// consuming anything, for a tag that ends or continues an open block.
func (p *parser) statement(name string) (node, error) {
	line := p.peek().line
	switch name {
	case "if":
		p.pos++
		return p.ifStmt()
	case "for":
		p.pos++
		return p.forStmt(line)
	case "set":
		p.pos++
		return p.setStmt(line)
	case "macro":
		p.pos++
		return p.macroStmt()
	case "call":
		p.pos++
		return p.callStmt()
	case "filter":
		p.pos++
		fs, err := p.filterChain()
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, _, err := p.block("filter", "endfilter")
		if err != nil {
			return nil, err
		}
		return &filterBlockNode{filters: fs, body: body}, p.expectBlockEnd()
	case "with":
		p.pos++
		return p.withStmt()
	case "break", "continue":
		p.pos++
		return &loopCtlNode{brk: name == "break"}, p.expectBlockEnd()
	case "generation":
		// transformers' {% generation %} marks assistant text for
		// training masks; it renders its body unchanged.
		p.pos++
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, _, err := p.block("generation", "endgeneration")
		if err != nil {
			return nil, err
		}
		return &withNode{body: body}, p.expectBlockEnd()
	case "elif", "else", "endif", "endfor", "endset", "endmacro", "endcall", "endfilter", "endwith", "endgeneration":
		return nil, nil
	}
	return nil, p.errorf("encountered unknown tag '%s'", name)
}

func (p *parser) ifStmt() (node, error) {
	n := &ifNode{}
	for {
		cond, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, end, err := p.block("if", "elif", "else", "endif")
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, cond)
		n.bodies = append(n.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.expectBlockEnd(); err != nil {
				return nil, err
			}
			n.els, _, err = p.block("if", "endif")
			if err != nil {
				return nil, err
			}
		}
		return n, p.expectBlockEnd()
	}
}

func (p *parser) forStmt(line int) (node, error) {
	n := &forNode{line: line}
	for {
		name, err := p.expectName()
		if err != nil {
			return nil, err
		}
		n.targets = append(n.targets, name)
		if !p.acceptOp(",") {
			break
		}
	}
	if !p.acceptName("in") {
		return nil, p.errorf("expected 'in' in for loop")
	}
	var err error
	if n.iter, err = p.tupleOrExpr(false); err != nil {
		return nil, err
	}
	if p.acceptName("if") {
		if n.cond, err = p.orExpr(); err != nil {
			return nil, err
		}
	}
	n.recursive = p.acceptName("recursive")
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, end, err := p.block("for", "else", "endfor")
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		if n.els, _, err = p.block("for", "endfor"); err != nil {
			return nil, err
		}
	}
	return n, p.expectBlockEnd()
}

func (p *parser) setTarget() (expr, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	if p.acceptOp(".") {
		attr, err := p.expectName()
		if err != nil {
			return nil, err
		}
		return &attrExpr{obj: &nameExpr{name: name}, name: attr}, nil
	}
	return &nameExpr{name: name}, nil
}

func (p *parser) setStmt(line int) (node, error) {
	var targets []expr
	for {
		t, err := p.setTarget()
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
		if !p.acceptOp(",") {
			break
		}
	}
	if p.acceptOp("=") {
		v, err := p.tupleOrExpr(true)
		if err != nil {
			return nil, err
		}
		return &setNode{targets: targets, value: v, line: line}, p.expectBlockEnd()
	}
	if len(targets) != 1 {
		return nil, p.errorf("expected '='")
	}
	n := &setBlockNode{target: targets[0]}
	if p.isOp("|") {
		fs, err := p.filterChain()
		if err != nil {
			return nil, err
		}
		n.filters = fs
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	var err error
	if n.body, _, err = p.block("set", "endset"); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd()
}

// filterChain parses "name(args) | name …" after a filter or set tag.
func (p *parser) filterChain() ([]*filterExpr, error) {
	var out []*filterExpr
	p.acceptOp("|")
	for {
		f, err := p.filterCall(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		if !p.acceptOp("|") {
			return out, nil
		}
	}
}

func (p *parser) params() ([]param, error) {
	var ps []param
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	for !p.acceptOp(")") {
		if len(ps) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.acceptOp(")") {
				break
			}
		}
		name, err := p.expectName()
		if err != nil {
			return nil, err
		}
		pr := param{name: name}
		if p.acceptOp("=") {
			if pr.def, err = p.expr(); err != nil {
				return nil, err
			}
		}
		ps = append(ps, pr)
	}
	return ps, nil
}

func (p *parser) macroStmt() (node, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	ps, err := p.params()
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.block("macro", "endmacro")
	if err != nil {
		return nil, err
	}
	p.acceptName(name) // {% endmacro name %}
	return &macroNode{name: name, params: ps, body: body}, p.expectBlockEnd()
}

func (p *parser) callStmt() (node, error) {
	n := &callBlockNode{}
	if p.isOp("(") {
		ps, err := p.params()
		if err != nil {
			return nil, err
		}
		n.params = ps
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	c, ok := x.(*callExpr)
	if !ok {
		return nil, p.errorf("expected a call in a call block")
	}
	n.call = c
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	if n.body, _, err = p.block("call", "endcall"); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd()
}

func (p *parser) withStmt() (node, error) {
	n := &withNode{}
	for p.peek().kind != tBlockEnd {
		if len(n.names) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		name, err := p.expectName()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.names, n.vals = append(n.names, name), append(n.vals, v)
	}
	p.pos++
	var err error
	if n.body, _, err = p.block("with", "endwith"); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd()
}
