package engine

// #include "llama.h"
import "C"

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Control tokens (<|im_end|>, <|eot_id|>, <|channel|>, …) are what a chat
// template writes between turns. With parse_special on, llama.cpp turns
// their text into the token wherever it appears, so a user who types
// "<|im_end|>" in a message closes their own turn and can forge a
// system or assistant turn. Client text is therefore tokenized as text:
// the dialects mark the spans of the rendered prompt that came from a
// client (ControlSpans finds the control texts there) and TokenizeLiteral
// keeps llama.cpp's special parsing for the rest only.

// controlTrie finds the texts of the tokens a template writes as markers:
// CONTROL and UNKNOWN ones, which llama.cpp matches only with
// parse_special on, and the user-defined ones that the model's chat
// template writes. llama.cpp matches user-defined tokens in any text, as
// Hugging Face's tokenizers match added tokens, and makes harmony's
// <|start|>, <|message|>, <|channel|> and <|constrain|> user-defined (so
// that they print): those would still forge a turn. Other user-defined
// tokens (a code model's tags) are matched in client text as llama.cpp
// matches them.
type controlTrie struct {
	next []map[byte]int32 // node → byte → child node
	end  []bool           // a control text ends at the node
}

func (t *controlTrie) add(s string) {
	n := int32(0)
	for i := 0; i < len(s); i++ {
		c, ok := t.next[n][s[i]]
		if !ok {
			c = int32(len(t.next))
			t.next = append(t.next, map[byte]int32{})
			t.end = append(t.end, false)
			t.next[n][s[i]] = c
		}
		n = c
	}
	t.end[n] = true
}

// longest is the length of the longest control text at the start of s,
// 0 when none starts there.
func (t *controlTrie) longest(s string) int {
	best, n := 0, int32(0)
	for i := 0; i < len(s); i++ {
		c, ok := t.next[n][s[i]]
		if !ok {
			break
		}
		if n = c; t.end[n] {
			best = i + 1
		}
	}
	return best
}

type controlTexts struct {
	once sync.Once
	trie *controlTrie
}

func (m *Model) controlTrie() *controlTrie {
	m.control.once.Do(func() {
		t := &controlTrie{next: []map[byte]int32{{}}, end: []bool{false}}
		templates := []string{m.Meta.ChatTemplate}
		for _, s := range m.Meta.ChatTemplates {
			templates = append(templates, s)
		}
		inTemplate := func(text string) bool {
			for _, s := range templates {
				if strings.Contains(s, text) {
					return true
				}
			}
			return false
		}
		control := C.enum_llama_token_attr(C.LLAMA_TOKEN_ATTR_CONTROL | C.LLAMA_TOKEN_ATTR_UNKNOWN)
		for id := range m.nVocab {
			attr := C.llama_vocab_get_attr(m.vocab, C.llama_token(id))
			if attr&(control|C.LLAMA_TOKEN_ATTR_USER_DEFINED) == 0 {
				continue
			}
			text := C.GoString(C.llama_vocab_get_text(m.vocab, C.llama_token(id)))
			if text != "" && (attr&control != 0 || inTemplate(text)) {
				t.add(text)
			}
		}
		m.control.trie = t
	})
	return m.control.trie
}

// HasControlText reports whether s holds the text of a control token.
func (m *Model) HasControlText(s string) bool {
	t := m.controlTrie()
	for i := 0; i < len(s); i++ {
		if t.longest(s[i:]) > 0 {
			return true
		}
	}
	return false
}

// ControlSpans are the byte ranges of s that hold a control token's
// text (every occurrence, overlapping ones merged), sorted: the spans a
// client's text must keep as text.
func (m *Model) ControlSpans(s string) [][2]int {
	t := m.controlTrie()
	var out [][2]int
	for i := 0; i < len(s); i++ {
		n := t.longest(s[i:])
		if n == 0 {
			continue
		}
		if k := len(out); k > 0 && out[k-1][1] >= i {
			out[k-1][1] = max(out[k-1][1], i+n)
		} else {
			out = append(out, [2]int{i, i + n})
		}
	}
	return out
}

// TokenizeLiteral is Tokenize with parse_special on, except that the
// spans of text given (sorted, not overlapping) are tokenized with it
// off. The text is tokenized in segments cut at the spans' edges; each
// segment after the first is tokenized with the character before it in
// front, whose own tokens are dropped, so that a SentencePiece
// vocabulary puts no space before it (when the two would merge, the
// segment goes alone).
func (m *Model) TokenizeLiteral(text string, addSpecial bool, literal [][2]int) ([]Token, error) {
	if len(literal) == 0 {
		return m.Tokenize(text, addSpecial, true)
	}
	type segment struct {
		from, to int
		special  bool
	}
	var segs []segment
	at := 0
	for _, s := range literal {
		if s[0] > at {
			segs = append(segs, segment{at, s[0], true})
		}
		segs = append(segs, segment{s[0], s[1], false})
		at = s[1]
	}
	if at < len(text) {
		segs = append(segs, segment{at, len(text), true})
	}
	var out []Token
	eos := addSpecial && bool(C.llama_vocab_get_add_eos(m.vocab))
	for i, s := range segs {
		if i == 0 {
			toks, err := m.Tokenize(text[s.from:s.to], addSpecial, s.special)
			if err != nil {
				return nil, err
			}
			if eos && len(toks) > 0 && toks[len(toks)-1] == m.EOS() {
				toks = toks[:len(toks)-1] // it goes after the last segment
			}
			out = append(out, toks...)
			continue
		}
		if s.special {
			toks, err := m.tokenizeAfter(text, s.from, s.to, true)
			if err != nil {
				return nil, err
			}
			out = append(out, toks...)
			continue
		}
		// Without special parsing llama.cpp still matches user-defined
		// tokens: a cut one character into each marker text keeps any
		// from being read.
		from := s.from
		for _, c := range append(m.markerCuts(text[s.from:s.to]), s.to-s.from) {
			if s.from+c <= from {
				continue
			}
			toks, err := m.tokenizeAfter(text, from, s.from+c, false)
			if err != nil {
				return nil, err
			}
			out = append(out, toks...)
			from = s.from + c
		}
	}
	if eos {
		out = append(out, m.EOS())
	}
	return out, nil
}

// markerCuts are offsets in s, one character into each marker text it
// holds.
func (m *Model) markerCuts(s string) []int {
	t := m.controlTrie()
	var cuts []int
	for i := 0; i < len(s); i++ {
		if t.longest(s[i:]) > 0 {
			_, n := utf8.DecodeRuneInString(s[i:])
			cuts = append(cuts, i+n)
		}
	}
	return cuts
}

// tokenizeAfter tokenizes text[from:to] as it continues what is before
// from: with the preceding character in front, its tokens dropped.
func (m *Model) tokenizeAfter(text string, from, to int, special bool) ([]Token, error) {
	lead := from - 1
	for lead > 0 && text[lead]&0xC0 == 0x80 {
		lead--
	}
	if lead >= 0 {
		l, err := m.tokenize(text[lead:from], false, special)
		if err != nil {
			return nil, err
		}
		both, err := m.Tokenize(text[lead:to], false, special)
		if err != nil {
			return nil, err
		}
		if len(both) >= len(l) && slices.Equal(both[:len(l)], l) {
			return both[len(l):], nil
		}
	}
	return m.Tokenize(text[from:to], false, special)
}
