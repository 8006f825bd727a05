package grammar

import "strings"

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
