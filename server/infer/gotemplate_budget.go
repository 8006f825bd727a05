package infer

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/template"
	"text/template/parse"
)

// Go templates come from requests (Ollama's `template` field) as well as
// from manifests, and text/template has no bound of its own: nested
// {{define}} blocks that each call the one below ten times render 10^n
// copies of the prompt, {{range 1000000000}} spins without output, and
// printf doubles a variable each iteration. Every rendering therefore runs
// under a budget, the Go-template counterpart of the Jinja engine's limits
// (models/chattemplate): output bytes, bytes built by functions, steps
// (a step at the start of every block body, loop iteration and template
// call) and the nesting of template calls.
type goBudget struct {
	maxOutput int   // bytes written to the prompt
	maxAlloc  int   // bytes built by print functions, summed
	maxSteps  int64 // block bodies entered: loop iterations, branches, calls
	maxDepth  int   // nesting of {{template}} calls
	maxWidth  int   // a printf width or precision
}

var goTemplateBudget = goBudget{
	maxOutput: 16 << 20,
	maxAlloc:  64 << 20,
	maxSteps:  100_000,
	maxDepth:  100,
	maxWidth:  1024,
}

// errGoTemplateLimit is wrapped by the error of a rendering stopped by its
// budget.
var errGoTemplateLimit = errors.New("template exceeded its resource limits")

// Names of the functions inserted into every parsed body; a template's
// source may not name them (renderGoTemplate refuses it).
const (
	budgetPrefix = "__tadpole_"
	stepFunc     = budgetPrefix + "step"
	enterFunc    = budgetPrefix + "enter"
	leaveFunc    = budgetPrefix + "leave"
)

// goRun is one rendering's account against its budget.
type goRun struct {
	lim                 goBudget
	steps               int64
	depth, alloc, wrote int
}

func (r *goRun) step() (string, error) {
	r.steps++
	if r.steps > r.lim.maxSteps {
		return "", fmt.Errorf("%w: more than %d steps", errGoTemplateLimit, r.lim.maxSteps)
	}
	return "", nil
}

func (r *goRun) enter() (string, error) {
	r.depth++
	if r.depth > r.lim.maxDepth {
		return "", fmt.Errorf("%w: template calls nested deeper than %d", errGoTemplateLimit, r.lim.maxDepth)
	}
	return r.step()
}

func (r *goRun) leave() string {
	r.depth--
	return ""
}

// charge counts n bytes built towards the allocation budget.
func (r *goRun) charge(n int) error {
	r.alloc += n
	if n < 0 || r.alloc > r.lim.maxAlloc {
		return fmt.Errorf("%w: functions built more than %d bytes", errGoTemplateLimit, r.lim.maxAlloc)
	}
	return nil
}

// Write counts the rendered bytes; past the budget it fails, which stops
// text/template's execution at once.
func (r *goRun) Write(p []byte) (int, error) {
	r.wrote += len(p)
	if r.wrote > r.lim.maxOutput {
		return 0, fmt.Errorf("%w: output over %d bytes", errGoTemplateLimit, r.lim.maxOutput)
	}
	return len(p), nil
}

// argBytes is an upper estimate of what formatting args may print before
// fmt runs: strings by length (the doubling attack goes through strings),
// anything else through its %v form (the template's data is bounded by the
// request's size).
func argBytes(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v)
		case jsonText:
			n += len(v)
		case []byte:
			n += len(v)
		default:
			n += len(fmt.Sprint(v))
		}
	}
	return n
}

// checkFormat refuses a printf format whose width or precision (numeric,
// or taken from an argument with '*') could make fmt build a huge string.
func (r *goRun) checkFormat(format string) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format); i++ {
			c := format[i]
			if c == '*' {
				return fmt.Errorf("%w: printf width or precision from an argument ('*')", errGoTemplateLimit)
			}
			if c >= '0' && c <= '9' {
				n := 0
				for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
					if n = n*10 + int(format[i]-'0'); n > r.lim.maxWidth {
						return fmt.Errorf("%w: printf width or precision over %d", errGoTemplateLimit, r.lim.maxWidth)
					}
				}
				i--
				continue
			}
			if c == '+' || c == '-' || c == '#' || c == ' ' || c == '.' || c == '[' || c == ']' {
				continue
			}
			break // the verb (or %%)
		}
	}
	return nil
}

func (r *goRun) sprint(f func(...any) string, args []any) (string, error) {
	if err := r.charge(argBytes(args) + 2*len(args)); err != nil {
		return "", err
	}
	return f(args...), nil
}

func (r *goRun) escaper(f func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		// An escaper writes at most 6 bytes per input byte (&#34; \u0022).
		if err := r.charge(6 * argBytes(args)); err != nil {
			return "", err
		}
		return f(args...), nil
	}
}

// funcs are the template's functions bound to this rendering: Ollama's
// json, currentDate and yesterdayDate, the budget's hooks, and
// text/template's builtins that build strings, charged to the budget.
func (r *goRun) funcs() template.FuncMap {
	fm := template.FuncMap{
		stepFunc:  r.step,
		enterFunc: r.enter,
		leaveFunc: r.leave,
		"printf": func(format string, args ...any) (string, error) {
			if err := r.checkFormat(format); err != nil {
				return "", err
			}
			if err := r.charge(len(format) + argBytes(args) + 2*len(args)); err != nil {
				return "", err
			}
			return fmt.Sprintf(format, args...), nil
		},
		"print":    func(args ...any) (string, error) { return r.sprint(fmt.Sprint, args) },
		"println":  func(args ...any) (string, error) { return r.sprint(fmt.Sprintln, args) },
		"html":     r.escaper(template.HTMLEscaper),
		"js":       r.escaper(template.JSEscaper),
		"urlquery": r.escaper(func(a ...any) string { return url.QueryEscape(fmt.Sprint(a...)) }),
	}
	for k, v := range goTemplateFuncs {
		fm[k] = v
	}
	json := goTemplateFuncs["json"].(func(any) string)
	fm["json"] = func(v any) (string, error) {
		s := json(v)
		return s, r.charge(len(s))
	}
	return fm
}

// instrument puts a step at the start of every block body of every
// template defined in t (so every loop iteration and branch taken counts)
// and brackets each template's body with enter/leave (so calls count and
// their nesting is bounded).
func instrument(t *template.Template) {
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Tree.Root == nil {
			continue
		}
		root := tt.Tree.Root
		instrumentList(root)
		root.Nodes = append([]parse.Node{call(enterFunc, root.Pos)}, root.Nodes...)
		root.Nodes = append(root.Nodes, call(leaveFunc, root.Pos))
	}
}

func instrumentList(l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.IfNode:
			instrumentBranch(&n.BranchNode)
		case *parse.RangeNode:
			instrumentBranch(&n.BranchNode)
		case *parse.WithNode:
			instrumentBranch(&n.BranchNode)
		case *parse.ListNode:
			instrumentList(n)
		}
	}
}

func instrumentBranch(b *parse.BranchNode) {
	for _, l := range []*parse.ListNode{b.List, b.ElseList} {
		if l == nil {
			continue
		}
		instrumentList(l)
		l.Nodes = append([]parse.Node{call(stepFunc, l.Pos)}, l.Nodes...)
	}
}

// call is the action {{fn}}: its functions print nothing.
func call(fn string, pos parse.Pos) parse.Node {
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: &parse.PipeNode{
		NodeType: parse.NodePipe, Pos: pos,
		Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{
			&parse.IdentifierNode{NodeType: parse.NodeIdentifier, Pos: pos, Ident: fn},
		}}},
	}}
}

// renderGoTemplate parses and runs an Ollama Go template under the
// budget, writing the prompt to w.
func renderGoTemplate(w io.Writer, src string, data map[string]any, lim goBudget) error {
	if strings.Contains(src, budgetPrefix) {
		return Errorf(BadRequest, "invalid template: names starting with %q are reserved", budgetPrefix)
	}
	run := &goRun{lim: lim}
	t, err := template.New("prompt").Option("missingkey=zero").Funcs(run.funcs()).Parse(src)
	if err != nil {
		return Errorf(BadRequest, "invalid template: %v", err)
	}
	instrument(t)
	if err := t.Execute(io.MultiWriter(run, w), data); err != nil {
		// A limit is named without text/template's frames around it
		// (which would show the budget's hooks).
		for u := errors.Unwrap(err); u != nil && u != errGoTemplateLimit && errors.Is(u, errGoTemplateLimit); u = errors.Unwrap(err) {
			err = u
		}
		return Errorf(BadRequest, "template: %v", err)
	}
	return nil
}
