package grammar

import (
	"encoding/json"
	"regexp/syntax"
	"strings"
)

// enumTrieMin is the number of enum values from which they are written as
// a trie; fewer stay a plain list of literals, which reads better.
const enumTrieMin = 16

// alternatives writes the texts (distinct JSON values) as GBNF
// alternatives. From enumTrieMin texts on, they are a trie: one rule for
// each point where texts part, its alternatives the next characters.
// llama.cpp's grammar keeps one parse stack per open alternative, matches
// every stack against the whole vocabulary for each token and
// deduplicates stacks pairwise on each accepted character: a flat list
// of 1024 values costs ~1024 stacks for the first characters of the value,
// a trie as many as the values' distinct next characters. Rules with
// the same body are shared (rules.add), so common suffixes are written
// once.
func (c *converter) alternatives(hint string, texts []string) string {
	if len(texts) < enumTrieMin {
		lits := make([]string, len(texts))
		for i, t := range texts {
			lits[i] = literal(t)
		}
		return strings.Join(lits, " | ")
	}
	root := &trieNode{}
	for _, t := range texts {
		root.insert(t)
	}
	return c.trieBody(hint+"-t", root)
}

// constBranches returns the values of anyOf/oneOf branches that are each
// a const or an enum (annotations aside), as JSON texts, each once; ok is
// false when some branch is anything else. Such a list is one enum and
// is written as one (a trie, see alternatives) instead of one open
// alternative per branch.
func (c *converter) constBranches(branches []json.RawMessage) (texts []string, ok bool, err error) {
	seen := map[string]bool{}
	for _, b := range branches {
		s, err := decode(b)
		if err != nil || len(s) == 0 {
			return nil, false, nil
		}
		var vals []json.RawMessage
		switch keys := constraints(s); {
		case len(keys) == 1 && keys[0] == "const":
			vals = []json.RawMessage{s["const"]}
		case len(keys) == 1 && keys[0] == "enum":
			if vals, err = c.enumValues(s["enum"]); err != nil {
				return nil, false, err
			}
			if len(vals) == 0 {
				return nil, false, nil // unsatisfiable: left to the branch-by-branch path
			}
		default:
			return nil, false, nil
		}
		for _, v := range vals {
			if t := compact(v); !seen[t] {
				seen[t] = true
				texts = append(texts, t)
			}
		}
	}
	return texts, true, nil
}

// maxClassExpand bounds the characters of a class literalSet spells out.
const maxClassExpand = 64

// literalSet returns the JSON-encoded texts a pattern piece matches when
// it is a finite set of at most limit strings: literals (no case
// folding), small character classes, and alternations and concatenations
// of them. The regexp parser factors alternations (red|rose becomes
// r(?:ed|ose), a|b becomes [ab]), so a list of words comes back as such a
// tree; spelled out again, it is written as a trie.
func literalSet(re *syntax.Regexp, limit int) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		var b strings.Builder
		for _, r := range re.Rune {
			b.WriteString(jsonChar(r))
		}
		return []string{b.String()}, true
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) == maxClassExpand {
					return nil, false
				}
				out = append(out, jsonChar(r)) // what jsonClass matches for r
			}
		}
		return out, len(out) <= limit
	case syntax.OpCapture:
		return literalSet(re.Sub[0], limit)
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			t, ok := literalSet(sub, limit-len(out))
			if !ok {
				return nil, false
			}
			out = append(out, t...)
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			t, ok := literalSet(sub, limit)
			if !ok || len(out)*len(t) > limit {
				return nil, false
			}
			var next []string
			for _, a := range out {
				for _, b := range t {
					next = append(next, a+b)
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}

// dedup returns the texts each once, in order.
func dedup(texts []string) []string {
	seen := make(map[string]bool, len(texts))
	out := texts[:0:0]
	for _, t := range texts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// trieNode is a point in the trie: whether a text ends here, and the
// next characters in the order first met.
type trieNode struct {
	end   bool
	kids  map[rune]*trieNode
	order []rune
}

func (n *trieNode) insert(s string) {
	for _, r := range s {
		k, ok := n.kids[r]
		if !ok {
			if n.kids == nil {
				n.kids = map[rune]*trieNode{}
			}
			k = &trieNode{}
			n.kids[r] = k
			n.order = append(n.order, r)
		}
		n = k
	}
	n.end = true
}

// trieBody writes the alternatives that complete the texts below n: an
// empty one where a text ends, then one per next character, running on
// through characters no text parts at, into the rule of the next point
// where texts part. Recursion is one level per such point.
func (c *converter) trieBody(hint string, n *trieNode) string {
	var alts []string
	if n.end {
		alts = append(alts, "")
	}
	for _, r := range n.order {
		var run strings.Builder
		run.WriteRune(r)
		k := n.kids[r]
		for !k.end && len(k.order) == 1 {
			run.WriteRune(k.order[0])
			k = k.kids[k.order[0]]
		}
		alt := literal(run.String())
		if len(k.order) > 0 {
			alt += " " + c.rules.add(hint, c.trieBody(hint, k))
		}
		alts = append(alts, alt)
	}
	return strings.Join(alts, " | ")
}
