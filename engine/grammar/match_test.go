package grammar

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// A small GBNF recognizer, independent of the generator, to check which
// strings a grammar accepts. It reads the syntax llama.cpp does (one rule
// per line, as this package writes them) and matches by computing the
// set of end positions of each item.

type gItem struct {
	kind     byte   // 'l' literal, 'c' class, 'r' rule, 'g' group, '.' any
	lit      []rune // literal
	ranges   []rune // class ranges (pairs)
	negated  bool
	name     string
	group    [][]gItem
	min, max int // max -1: unbounded
}

type gGrammar struct {
	rules map[string][][]gItem
	order []string
}

type gParser struct {
	s   []rune
	pos int
}

func parseGBNF(text string) (*gGrammar, error) {
	g := &gGrammar{rules: map[string][][]gItem{}}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, body, ok := strings.Cut(line, " ::= ")
		if !ok {
			return nil, fmt.Errorf("no ::= in %q", line)
		}
		if !regexp.MustCompile(`^[a-zA-Z0-9-]+$`).MatchString(name) {
			return nil, fmt.Errorf("bad rule name %q", name)
		}
		if _, dup := g.rules[name]; dup {
			return nil, fmt.Errorf("rule %q defined twice", name)
		}
		p := &gParser{s: []rune(body)}
		alts, err := p.alternates()
		if err != nil {
			return nil, fmt.Errorf("rule %s: %v", name, err)
		}
		if p.pos != len(p.s) {
			return nil, fmt.Errorf("rule %s: trailing %q", name, string(p.s[p.pos:]))
		}
		g.rules[name] = alts
		g.order = append(g.order, name)
	}
	// Every reference is defined.
	var check func(alts [][]gItem) error
	check = func(alts [][]gItem) error {
		for _, seq := range alts {
			for _, it := range seq {
				if it.kind == 'r' {
					if _, ok := g.rules[it.name]; !ok {
						return fmt.Errorf("undefined rule %q", it.name)
					}
				}
				if it.kind == 'g' {
					if err := check(it.group); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	for _, name := range g.order {
		if err := check(g.rules[name]); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (p *gParser) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *gParser) alternates() ([][]gItem, error) {
	var alts [][]gItem
	for {
		seq, err := p.sequence()
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == '|' {
			p.pos++
			continue
		}
		return alts, nil
	}
}

func (p *gParser) char() (rune, error) {
	if p.pos >= len(p.s) {
		return 0, fmt.Errorf("unexpected end")
	}
	c := p.s[p.pos]
	p.pos++
	if c != '\\' {
		return c, nil
	}
	if p.pos >= len(p.s) {
		return 0, fmt.Errorf("unexpected end")
	}
	e := p.s[p.pos]
	p.pos++
	hex := func(n int) (rune, error) {
		if p.pos+n > len(p.s) {
			return 0, fmt.Errorf("short escape")
		}
		v, err := strconv.ParseUint(string(p.s[p.pos:p.pos+n]), 16, 32)
		p.pos += n
		return rune(v), err
	}
	switch e {
	case 'x':
		return hex(2)
	case 'u':
		return hex(4)
	case 'U':
		return hex(8)
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case 'n':
		return '\n', nil
	case '\\', '"', '[', ']':
		return e, nil
	}
	return 0, fmt.Errorf("unknown escape \\%c", e)
}

func (p *gParser) sequence() ([]gItem, error) {
	var seq []gItem
	for {
		p.space()
		if p.pos >= len(p.s) {
			return seq, nil
		}
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			var lit []rune
			for p.pos < len(p.s) && p.s[p.pos] != '"' {
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				lit = append(lit, r)
			}
			if p.pos >= len(p.s) {
				return nil, fmt.Errorf("unterminated literal")
			}
			p.pos++
			seq = append(seq, gItem{kind: 'l', lit: lit, min: 1, max: 1})
		case c == '[':
			p.pos++
			it := gItem{kind: 'c', min: 1, max: 1}
			if p.pos < len(p.s) && p.s[p.pos] == '^' {
				it.negated = true
				p.pos++
			}
			for p.pos < len(p.s) && p.s[p.pos] != ']' {
				lo, err := p.char()
				if err != nil {
					return nil, err
				}
				hi := lo
				if p.pos+1 < len(p.s) && p.s[p.pos] == '-' && p.s[p.pos+1] != ']' {
					p.pos++
					if hi, err = p.char(); err != nil {
						return nil, err
					}
				}
				it.ranges = append(it.ranges, lo, hi)
			}
			if p.pos >= len(p.s) {
				return nil, fmt.Errorf("unterminated class")
			}
			p.pos++
			seq = append(seq, it)
		case c == '(':
			p.pos++
			alts, err := p.alternates()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.pos >= len(p.s) || p.s[p.pos] != ')' {
				return nil, fmt.Errorf("missing )")
			}
			p.pos++
			seq = append(seq, gItem{kind: 'g', group: alts, min: 1, max: 1})
		case c == '.':
			p.pos++
			seq = append(seq, gItem{kind: '.', min: 1, max: 1})
		case c == '*' || c == '+' || c == '?' || c == '{':
			if len(seq) == 0 {
				return nil, fmt.Errorf("repetition without item")
			}
			last := &seq[len(seq)-1]
			if last.min != 1 || last.max != 1 {
				// x** and the like: wrap the previous item.
				*last = gItem{kind: 'g', group: [][]gItem{{*last}}, min: 1, max: 1}
			}
			p.pos++
			switch c {
			case '*':
				last.min, last.max = 0, -1
			case '+':
				last.min, last.max = 1, -1
			case '?':
				last.min, last.max = 0, 1
			case '{':
				end := strings.IndexRune(string(p.s[p.pos:]), '}')
				if end < 0 {
					return nil, fmt.Errorf("unterminated {")
				}
				spec := string(p.s[p.pos:])[:end]
				p.pos += utf8.RuneCountInString(spec) + 1
				a, b, comma := strings.Cut(spec, ",")
				n, err := strconv.Atoi(a)
				if err != nil {
					return nil, fmt.Errorf("bad repetition {%s}", spec)
				}
				m := n
				if comma {
					m = -1
					if b != "" {
						if m, err = strconv.Atoi(b); err != nil {
							return nil, fmt.Errorf("bad repetition {%s}", spec)
						}
					}
				}
				if n > 2000 || m > 2000 {
					return nil, fmt.Errorf("repetition {%s} over llama.cpp's limit", spec)
				}
				last.min, last.max = n, m
			}
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-':
			start := p.pos
			for p.pos < len(p.s) {
				c := p.s[p.pos]
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
					break
				}
				p.pos++
			}
			seq = append(seq, gItem{kind: 'r', name: string(p.s[start:p.pos]), min: 1, max: 1})
		default:
			return seq, nil
		}
	}
}

type matcher struct {
	g    *gGrammar
	in   []rune
	memo map[string]map[int][]int
}

// accepts reports whether the grammar's root matches all of s.
func (g *gGrammar) accepts(s string) bool {
	m := &matcher{g: g, in: []rune(s), memo: map[string]map[int][]int{}}
	return slices.Contains(m.rule("root", 0), len(m.in))
}

func (m *matcher) rule(name string, pos int) []int {
	if byPos, ok := m.memo[name]; ok {
		if ends, ok := byPos[pos]; ok {
			return ends
		}
	} else {
		m.memo[name] = map[int][]int{}
	}
	m.memo[name][pos] = nil // left recursion would see no match
	ends := m.alts(m.g.rules[name], pos)
	m.memo[name][pos] = ends
	return ends
}

func (m *matcher) alts(alts [][]gItem, pos int) []int {
	var out []int
	for _, seq := range alts {
		out = union(out, m.seq(seq, pos))
	}
	return out
}

func (m *matcher) seq(seq []gItem, pos int) []int {
	cur := []int{pos}
	for _, it := range seq {
		var next []int
		for _, p := range cur {
			next = union(next, m.repeated(it, p))
		}
		cur = next
		if len(cur) == 0 {
			break
		}
	}
	return cur
}

func (m *matcher) repeated(it gItem, pos int) []int {
	var out []int
	// Positions after n repetitions; once past min, a position reached
	// again (with more repetitions) adds nothing.
	cur := []int{pos}
	seen := map[int]bool{}
	for n := 0; ; n++ {
		if n >= it.min {
			var fresh []int
			for _, p := range cur {
				if !seen[p] {
					seen[p] = true
					fresh = append(fresh, p)
				}
			}
			cur = fresh
			out = union(out, cur)
		}
		if it.max >= 0 && n >= it.max || len(cur) == 0 {
			return out
		}
		var next []int
		for _, p := range cur {
			next = union(next, m.once(it, p))
		}
		cur = next
	}
}

func (m *matcher) once(it gItem, pos int) []int {
	switch it.kind {
	case 'l':
		if pos+len(it.lit) <= len(m.in) && slices.Equal(m.in[pos:pos+len(it.lit)], it.lit) {
			return []int{pos + len(it.lit)}
		}
		return nil
	case 'c':
		if pos >= len(m.in) {
			return nil
		}
		c, in := m.in[pos], false
		for i := 0; i < len(it.ranges); i += 2 {
			if it.ranges[i] <= c && c <= it.ranges[i+1] {
				in = true
			}
		}
		if in != it.negated {
			return []int{pos + 1}
		}
		return nil
	case '.':
		if pos < len(m.in) {
			return []int{pos + 1}
		}
		return nil
	case 'r':
		return m.rule(it.name, pos)
	case 'g':
		return m.alts(it.group, pos)
	}
	panic("bad item")
}

func union(a, b []int) []int {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}

func mustParse(t testing.TB, g string) *gGrammar {
	t.Helper()
	pg, err := parseGBNF(g)
	if err != nil {
		t.Fatalf("grammar does not parse: %v\n%s", err, g)
	}
	return pg
}

func TestMatcherSelf(t *testing.T) {
	g := mustParse(t, `root ::= "a" x{2,3} ( "b" | "c" )* [^0-9]?
x ::= [0-9] | "-"`)
	for s, want := range map[string]bool{"a12": true, "a-2-": true, "a12bcb": true, "a1": false, "a1234": false,
		"a12z": true, "a12zz": false, "a12bd": true, "": false} {
		if g.accepts(s) != want {
			t.Errorf("%q: got %v", s, !want)
		}
	}
}

// generate draws a random string from the grammar (nil on giving up:
// too deep or too long).
func (g *gGrammar) generate(r *rand.Rand) (string, bool) {
	var out []rune
	var walkAlts func(alts [][]gItem, depth int) bool
	var walkItem func(it gItem, depth int) bool
	walkAlts = func(alts [][]gItem, depth int) bool {
		seq := alts[r.IntN(len(alts))]
		for _, it := range seq {
			if !walkItem(it, depth) {
				return false
			}
		}
		return true
	}
	pool := []rune("aZ0 -_\"\\/\n\t\x01é中😀{}[]:,.")
	walkItem = func(it gItem, depth int) bool {
		if depth > 60 || len(out) > 20000 {
			return false
		}
		n := it.min
		if it.max < 0 {
			if depth < 20 {
				n += r.IntN(4)
			}
		} else if it.max > it.min {
			span := it.max - it.min
			if depth < 20 && r.IntN(3) == 0 {
				n += r.IntN(span + 1)
			} else {
				n += r.IntN(min(span, 3) + 1)
			}
		}
		for range n {
			switch it.kind {
			case 'l':
				out = append(out, it.lit...)
			case 'c':
				if !it.negated {
					i := 2 * r.IntN(len(it.ranges)/2)
					lo, hi := it.ranges[i], it.ranges[i+1]
					c := lo + rune(r.Int64N(int64(hi-lo)+1))
					if c >= 0xD800 && c <= 0xDFFF || c > 0x10FFFF {
						c = lo
					}
					out = append(out, c)
					continue
				}
				var ok []rune
				for _, c := range pool {
					in := false
					for i := 0; i < len(it.ranges); i += 2 {
						in = in || it.ranges[i] <= c && c <= it.ranges[i+1]
					}
					if !in {
						ok = append(ok, c)
					}
				}
				if len(ok) == 0 {
					return false
				}
				out = append(out, ok[r.IntN(len(ok))])
			case '.':
				out = append(out, pool[r.IntN(len(pool))])
			case 'r':
				if !walkAlts(g.rules[it.name], depth+1) {
					return false
				}
			case 'g':
				if !walkAlts(it.group, depth+1) {
					return false
				}
			}
		}
		return true
	}
	if !walkAlts(g.rules["root"], 0) {
		return "", false
	}
	return string(out), true
}
