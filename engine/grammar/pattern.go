package grammar

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
)

// pattern converts a JSON Schema "pattern" (a regular expression over the
// string's characters, matched anywhere unless anchored) into a sequence
// matching the JSON-encoded characters between the quotes.
func (c *converter) pattern(p string) (string, error) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("unsupported regular expression: %v", err)
	}
	return c.anchored(re)
}

// anchored converts a whole expression: ^ and $ may only stand at the
// start and end of it (or of its top-level alternatives); an unanchored
// end may be followed (or preceded) by any characters.
func (c *converter) anchored(re *syntax.Regexp) (string, error) {
	if re.Op == syntax.OpAlternate {
		if err := c.countBranches("pattern alternation", len(re.Sub)); err != nil {
			return "", err
		}
		var alts []string
		for _, sub := range re.Sub {
			a, err := c.anchored(sub)
			if err != nil {
				return "", err
			}
			alts = append(alts, a)
		}
		return "( " + strings.Join(alts, " | ") + " )", nil
	}
	if re.Op == syntax.OpCapture {
		return c.anchored(re.Sub[0])
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	isStart := func(r *syntax.Regexp) bool { return r.Op == syntax.OpBeginText || r.Op == syntax.OpBeginLine }
	isEnd := func(r *syntax.Regexp) bool { return r.Op == syntax.OpEndText || r.Op == syntax.OpEndLine }
	start, end := false, false
	for len(subs) > 0 && isStart(subs[0]) {
		subs, start = subs[1:], true
	}
	for len(subs) > 0 && isEnd(subs[len(subs)-1]) {
		subs, end = subs[:len(subs)-1], true
	}
	var mid []string
	for _, sub := range subs {
		x, err := c.regex(sub)
		if err != nil {
			return "", err
		}
		mid = append(mid, x)
	}
	body := seq(mid...)
	if body == "" && start && end {
		return "", nil
	}
	any := func() string { return c.rules.prim("char") + "*" }
	if body == "" {
		return any(), nil
	}
	parts := []string{body}
	if !start {
		parts = append([]string{any()}, parts...)
	}
	if !end {
		parts = append(parts, any())
	}
	if s := seq(parts...); s != "" {
		return "( " + s + " )", nil
	}
	return "", nil
}

// regex converts a regular expression without anchors into an item.
func (c *converter) regex(re *syntax.Regexp) (string, error) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return "", nil
	case syntax.OpNoMatch:
		return "", errors.New("matches nothing")
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			var parts []string
			for _, r := range re.Rune {
				folds := []rune{r}
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					folds = append(folds, f)
				}
				slices.Sort(folds)
				var ranges []rune
				for _, f := range folds {
					ranges = append(ranges, f, f)
				}
				parts = append(parts, jsonClass(ranges))
			}
			return "( " + seq(parts...) + " )", nil
		}
		var b strings.Builder
		for _, r := range re.Rune {
			b.WriteString(jsonChar(r))
		}
		return literal(b.String()), nil
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return "", errors.New("matches nothing")
		}
		return jsonClass(re.Rune), nil
	case syntax.OpAnyCharNotNL:
		return jsonClass([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}), nil
	case syntax.OpAnyChar:
		return c.rules.prim("char"), nil
	case syntax.OpCapture:
		x, err := c.regex(re.Sub[0])
		if err != nil || x == "" {
			return x, err
		}
		return "( " + x + " )", nil
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		x, err := c.regex(re.Sub[0])
		if err != nil || x == "" {
			return x, err
		}
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		return repeat("( "+x+" )", lo, hi), nil
	case syntax.OpConcat:
		var parts []string
		for _, sub := range re.Sub {
			x, err := c.regex(sub)
			if err != nil {
				return "", err
			}
			parts = append(parts, x)
		}
		if s := seq(parts...); s != "" {
			return "( " + s + " )", nil
		}
		return "", nil
	case syntax.OpAlternate:
		if err := c.countBranches("pattern alternation", len(re.Sub)); err != nil {
			return "", err
		}
		if texts, ok := literalSet(re, MaxEnumValues); ok {
			if texts = dedup(texts); len(texts) >= enumTrieMin {
				return "( " + c.alternatives("pattern", texts) + " )", nil
			}
		}
		var alts []string
		for _, sub := range re.Sub {
			x, err := c.regex(sub)
			if err != nil {
				return "", err
			}
			alts = append(alts, x) // may be empty: an empty alternative
		}
		return "( " + strings.Join(alts, " | ") + " )", nil
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return "", errors.New("^ and $ are only supported at the start and end of the pattern")
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return "", errors.New(`\b and \B are not supported`)
	}
	return "", fmt.Errorf("unsupported regular expression construct %v", re.Op)
}

// jsonChar writes r as it appears inside a JSON string.
func jsonChar(r rune) string {
	switch r {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x20 || r == 0x7f {
		return fmt.Sprintf(`\u%04x`, r)
	}
	return string(r)
}

// jsonClass matches one JSON-encoded character whose value is in the
// ranges (pairs lo, hi): raw characters, or escapes for those JSON
// requires to be escaped.
func jsonClass(ranges []rune) string {
	var raw strings.Builder
	var escaped []string
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for r := lo; r <= hi && r < 0x80; r++ {
			if r < 0x20 || r == '"' || r == '\\' || r == 0x7f {
				escaped = append(escaped, literal(jsonChar(r)))
			}
		}
		// The raw part: the range less the characters JSON escapes.
		for _, seg := range splitRange(lo, hi) {
			raw.WriteString(classChar(seg[0]))
			if seg[1] != seg[0] {
				raw.WriteString("-" + classChar(seg[1]))
			}
		}
	}
	var alts []string
	if raw.Len() > 0 {
		alts = append(alts, "["+raw.String()+"]")
	}
	alts = append(alts, escaped...)
	return group(alts)
}

// splitRange returns [lo, hi] less the characters JSON must escape, as ranges.
func splitRange(lo, hi rune) [][2]rune {
	var out [][2]rune
	start := lo
	for r := lo; r <= hi && r <= 0x80; r++ {
		if r < 0x20 || r == '"' || r == '\\' || r == 0x7f {
			if start < r {
				out = append(out, [2]rune{start, r - 1})
			}
			start = r + 1
		}
	}
	if start <= hi {
		out = append(out, [2]rune{start, hi})
	}
	return out
}
