package chattemplate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

type tokKind int

const (
	tText       tokKind = iota
	tVarBegin           // {{
	tVarEnd             // }}
	tBlockBegin         // {%
	tBlockEnd           // %}
	tName
	tString
	tInt
	tFloat
	tOp
	tEOF
)

type token struct {
	kind tokKind
	val  string // text, name, operator or decoded string
	num  any    // int64 or float64
	line int
}

// SyntaxError is a template that does not parse.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("chat template syntax error, line %d: %s", e.Line, e.Msg)
}

var endRawRe = regexp.MustCompile(`\{%([-+]?)\s*endraw\s*([-+]?)%\}`)

// lex splits src into tokens the way jinja2's lexer does with the
// settings transformers uses: trim_blocks and lstrip_blocks on, a single
// trailing newline dropped, "\r\n" and "\r" read as "\n".
func lex(src string) ([]token, error) {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	src = strings.TrimSuffix(src, "\n")
	l := &lexer{src: src, line: 1, lineStart: true}
	if err := l.run(); err != nil {
		return nil, err
	}
	l.toks = append(l.toks, token{kind: tEOF, line: l.line})
	return l.toks, nil
}

type lexer struct {
	src        string
	pos        int
	line       int
	toks       []token
	lineStart  bool // the text being read starts a line
	lstripNext bool // a "-" ended the last tag: strip the next text's leading whitespace
	trimNL     bool // a block tag ended the last tag: drop one newline
}

func (l *lexer) errorf(format string, a ...any) error {
	return &SyntaxError{Line: l.line, Msg: fmt.Sprintf(format, a...)}
}

func (l *lexer) emitText(text string) {
	if text != "" {
		l.toks = append(l.toks, token{kind: tText, val: text, line: l.line})
	}
	l.line += strings.Count(text, "\n")
}

func (l *lexer) run() error {
	for l.pos < len(l.src) {
		rest := l.src[l.pos:]
		i := strings.Index(rest, "{")
		for i >= 0 && (i+1 >= len(rest) || !strings.ContainsRune("{%#", rune(rest[i+1]))) {
			j := strings.Index(rest[i+1:], "{")
			if j < 0 {
				i = -1
				break
			}
			i += 1 + j
		}
		text := rest
		if i >= 0 {
			text = rest[:i]
		}
		// Whitespace control from the previous tag's end; startsLine is
		// jinja2's line_starting: the last tag's match ended in "\n".
		startsLine := l.lineStart
		if l.lstripNext {
			t := strings.TrimLeft(text, ws)
			skipped := text[:len(text)-len(t)]
			startsLine = strings.HasSuffix(skipped, "\n")
			l.line += strings.Count(skipped, "\n")
			text = t
		} else if l.trimNL && strings.HasPrefix(text, "\n") {
			text, startsLine = text[1:], true
			l.line++
		}
		l.lstripNext, l.trimNL, l.lineStart = false, false, false
		if i < 0 {
			l.emitText(text)
			return nil
		}
		kind := rest[i+1]
		sign := byte(0)
		if i+2 < len(rest) && (rest[i+2] == '-' || rest[i+2] == '+') {
			sign = rest[i+2]
		}
		switch {
		case sign == '-':
			stripped := strings.TrimRight(text, ws)
			l.emitText(stripped)
			l.line += strings.Count(text[len(stripped):], "\n")
		case sign != '+' && kind != '{':
			// lstrip_blocks: drop the spaces and tabs between the start
			// of the line and a block or comment tag.
			lpos := strings.LastIndexByte(text, '\n') + 1
			if (lpos > 0 || startsLine) && strings.Trim(text[lpos:], " \t") == "" {
				l.line += strings.Count(text[lpos:], "\n")
				text = text[:lpos]
			}
			l.emitText(text)
		default:
			l.emitText(text)
		}
		l.pos += i + 2
		if sign != 0 {
			l.pos++
		}
		var err error
		switch kind {
		case '#':
			err = l.comment()
		case '{':
			err = l.tag(tVarBegin, tVarEnd, "}}")
		case '%':
			if rawEnd := l.rawBlock(); rawEnd {
				continue
			}
			err = l.tag(tBlockBegin, tBlockEnd, "%}")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// endSign records the whitespace control of a tag's end: "-" strips
// what follows, "+" keeps it, none drops one newline after a block tag.
func (l *lexer) endSign(sign byte, block bool) {
	switch {
	case sign == '-':
		l.lstripNext = true
	case sign == '+':
	case block:
		l.trimNL = true
	}
}

func (l *lexer) comment() error {
	j := strings.Index(l.src[l.pos:], "#}")
	if j < 0 {
		return l.errorf("unexpected end of template: missing end of comment tag")
	}
	body := l.src[l.pos : l.pos+j]
	l.line += strings.Count(body, "\n")
	sign := byte(0)
	if strings.HasSuffix(body, "-") || strings.HasSuffix(body, "+") {
		sign = body[len(body)-1]
	}
	l.pos += j + 2
	l.endSign(sign, true)
	return nil
}

// rawBlock reads "{% raw %}…{% endraw %}" as text; it reports whether
// the tag at l.pos was one.
func (l *lexer) rawBlock() bool {
	rest := l.src[l.pos:]
	t := strings.TrimLeft(rest, ws)
	if !strings.HasPrefix(t, "raw") {
		return false
	}
	t = strings.TrimLeft(t[3:], ws)
	sign := byte(0)
	if strings.HasPrefix(t, "-%}") || strings.HasPrefix(t, "+%}") {
		sign, t = t[0], t[1:]
	}
	if !strings.HasPrefix(t, "%}") {
		return false
	}
	start := len(rest) - len(t) + 2
	loc := endRawRe.FindStringSubmatchIndex(rest[start:])
	if loc == nil {
		return false // the parser reports the unknown tag
	}
	body := rest[start : start+loc[0]]
	if sign == '-' {
		body = strings.TrimLeft(body, ws)
	}
	if loc[3] > loc[2] && rest[start+loc[2]] == '-' {
		body = strings.TrimRight(body, ws)
	}
	l.emitText(body)
	l.line += strings.Count(rest[:start+loc[1]], "\n") - strings.Count(body, "\n")
	l.pos += start + loc[1]
	endSign := byte(0)
	if loc[5] > loc[4] {
		endSign = rest[start+loc[4]]
	}
	l.endSign(endSign, true)
	return true
}

const ws = " \t\n\r\f\v"

// tag reads the expression tokens of a {{ }} or {% %} tag.
func (l *lexer) tag(begin, end tokKind, closer string) error {
	l.toks = append(l.toks, token{kind: begin, line: l.line})
	depth := 0
	src := l.src
	for {
		for l.pos < len(src) && strings.IndexByte(ws, src[l.pos]) >= 0 {
			if src[l.pos] == '\n' {
				l.line++
			}
			l.pos++
		}
		if l.pos >= len(src) {
			return l.errorf("unexpected end of template: missing %q", closer)
		}
		rest := src[l.pos:]
		if depth == 0 {
			for _, s := range []string{"-", "+", ""} {
				if strings.HasPrefix(rest, s+closer) {
					l.toks = append(l.toks, token{kind: end, line: l.line})
					l.pos += len(s) + len(closer)
					sign := byte(0)
					if s != "" {
						sign = s[0]
					}
					l.endSign(sign, end == tBlockEnd)
					return nil
				}
			}
		}
		c := rest[0]
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			n := 1
			for n < len(rest) && (rest[n] == '_' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] >= '0' && rest[n] <= '9') {
				n++
			}
			l.toks = append(l.toks, token{kind: tName, val: rest[:n], line: l.line})
			l.pos += n
		case c >= '0' && c <= '9':
			if err := l.number(rest); err != nil {
				return err
			}
		case c == '\'' || c == '"':
			if err := l.str(rest, c); err != nil {
				return err
			}
		default:
			op := ""
			for _, o := range []string{"**", "//", "==", "!=", "<=", ">="} {
				if strings.HasPrefix(rest, o) {
					op = o
					break
				}
			}
			if op == "" {
				if strings.IndexByte("+-*/%~|()[]{},.:=<>", c) < 0 {
					r, _ := utf8.DecodeRuneInString(rest)
					return l.errorf("unexpected character %q", r)
				}
				op = rest[:1]
			}
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
			}
			l.toks = append(l.toks, token{kind: tOp, val: op, line: l.line})
			l.pos += len(op)
		}
	}
}

var numRe = regexp.MustCompile(`^(?:[0-9][0-9_]*(?:\.[0-9][0-9_]*)?(?:[eE][+-]?[0-9]+)?)`)

func (l *lexer) number(rest string) error {
	s := numRe.FindString(rest)
	// "1.foo" is attribute access on 1: keep the dot for the parser.
	if i := strings.IndexByte(s, '.'); i >= 0 && (i+1 >= len(s) || s[i+1] < '0' || s[i+1] > '9') {
		s = s[:i]
	}
	l.pos += len(s)
	clean := strings.ReplaceAll(s, "_", "")
	if strings.ContainsAny(clean, ".eE") {
		f, err := strconv.ParseFloat(clean, 64)
		if err != nil {
			return l.errorf("bad number %q", s)
		}
		l.toks = append(l.toks, token{kind: tFloat, num: f, line: l.line})
		return nil
	}
	n, err := strconv.ParseInt(clean, 10, 64)
	if err != nil {
		return l.errorf("integer %q out of range", s)
	}
	l.toks = append(l.toks, token{kind: tInt, num: n, line: l.line})
	return nil
}

// str reads a string literal with Python's escapes.
func (l *lexer) str(rest string, q byte) error {
	var b strings.Builder
	i := 1
	for {
		if i >= len(rest) {
			return l.errorf("unterminated string literal")
		}
		c := rest[i]
		if c == q {
			i++
			break
		}
		if c == '\n' {
			l.line++
		}
		if c != '\\' || i+1 >= len(rest) {
			b.WriteByte(c)
			i++
			continue
		}
		e := rest[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '0':
			b.WriteByte(0)
		case '\n':
			l.line++
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(rest) {
				return l.errorf("truncated \\%c escape", e)
			}
			r, err := strconv.ParseUint(rest[i:i+n], 16, 32)
			if err != nil {
				return l.errorf("bad \\%c escape", e)
			}
			b.WriteRune(rune(r))
			i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	l.toks = append(l.toks, token{kind: tString, val: b.String(), line: l.line})
	l.pos += i
	return nil
}
