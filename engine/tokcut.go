package engine

// #include "llama.h"
import "C"

import (
	"log/slog"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenizePiece is the text length past which Tokenize works in pieces
// (a variable for the tests).
//
// llama.cpp's SentencePiece tokenizer (b7437) appends each character
// that no token spells to its output with a reserve of exactly the room
// it needs, so every such character reallocates and copies the whole
// output: a text made of them takes time quadratic in its length (128
// KiB of "é" on a vocabulary without it: 3.2 s; 256 KiB: 17.7 s; the 10
// MiB a request body may hold: hours of a core). Tokenized in pieces of
// about tokenizePiece bytes, the copies stay small (measured, LLaMA 2's
// vocabulary: 10 MiB of newlines in 1.9 s; 10 MiB of prose in 2.0 s
// against 6.8 s whole). A piece ends only where llama.cpp could not have
// merged across: between two characters that no token's text holds side
// by side (SentencePiece merges two symbols only into a token that
// spells both), never next to a special token's text (nor inside
// whitespace when a special token strips it), and the next piece is
// tokenized with the character before the cut in front (so that the
// space llama.cpp puts before a text's first word lands on it), whose own
// tokens are then dropped: the result is the whole text's, token for
// token (tested against it). Byte-level BPE vocabularies are cut between
// words (bpeCuts); other vocabularies are tokenized whole.
var tokenizePiece = 4 << 10

// tokenCuts is what a vocabulary says about where a text may be cut.
type tokenCuts struct {
	spm bool // SentencePiece: cut where no merge can cross
	bpe bool // byte-level BPE: cut between words (bpeCuts)
	// pairs holds every two characters that stand side by side in a
	// token's text (a space as SentencePiece's U+2581), sorted: a cut
	// between them could split a merge.
	pairs []uint64
	// first and last are the first and last characters of the special
	// tokens' texts (llama.cpp matches them in the raw text before
	// tokenizing): no cut next to one.
	first, last map[rune]bool
	// strip: a special token swallows whitespace beside it (LSTRIP,
	// RSTRIP): no cut inside whitespace.
	strip  bool
	addEOS bool
	// specials are the special tokens' texts: a BPE cut is never inside
	// one; lstrip and rstrip those that swallow the whitespace after or
	// before them.
	specials, lstrip, rstrip []string
}

// insideSpecial reports whether a special token's text in text spans
// the byte offset i (starts before it and ends after it).
func (tc *tokenCuts) insideSpecial(text string, i int) bool {
	for _, s := range tc.specials {
		lo := max(i-len(s)+1, 0)
		hi := min(i+len(s)-1, len(text))
		if lo < hi && strings.Contains(text[lo:hi], s) {
			return true
		}
	}
	return false
}

const spmSpace = '\u2581' // SentencePiece's escaped space

func pairKey(a, b rune) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// spmRune is a character as llama.cpp's SentencePiece tokenizer sees it:
// spaces escaped.
func spmRune(r rune) rune {
	if r == ' ' {
		return spmSpace
	}
	return r
}

func (m *Model) tokenCuts() *tokenCuts {
	m.cutsOnce.Do(func() {
		tc := &tokenCuts{first: map[rune]bool{}, last: map[rune]bool{}}
		m.cuts = tc
		switch C.llama_vocab_type(m.vocab) {
		case C.LLAMA_VOCAB_TYPE_SPM:
			tc.spm = true
		case C.LLAMA_VOCAB_TYPE_BPE:
			tc.bpe = true
		default:
			return
		}
		tc.addEOS = bool(C.llama_vocab_get_add_eos(m.vocab))
		special := C.enum_llama_token_attr(C.LLAMA_TOKEN_ATTR_CONTROL | C.LLAMA_TOKEN_ATTR_USER_DEFINED | C.LLAMA_TOKEN_ATTR_UNKNOWN)
		strip := C.enum_llama_token_attr(C.LLAMA_TOKEN_ATTR_LSTRIP | C.LLAMA_TOKEN_ATTR_RSTRIP)
		for id := range m.nVocab {
			text := C.GoString(C.llama_vocab_get_text(m.vocab, C.llama_token(id)))
			attr := C.llama_vocab_get_attr(m.vocab, C.llama_token(id))
			if attr&special != 0 && text != "" {
				tc.specials = append(tc.specials, text)
				f, _ := utf8.DecodeRuneInString(text)
				l, _ := utf8.DecodeLastRuneInString(text)
				tc.first[f], tc.last[l] = true, true
				if attr&strip != 0 {
					tc.strip = true
				}
				if attr&C.LLAMA_TOKEN_ATTR_LSTRIP != 0 {
					tc.lstrip = append(tc.lstrip, text)
				}
				if attr&C.LLAMA_TOKEN_ATTR_RSTRIP != 0 {
					tc.rstrip = append(tc.rstrip, text)
				}
			}
			if !tc.spm || !utf8.ValidString(text) {
				continue // no merge of whole characters spells it
			}
			prev := rune(-1)
			for _, r := range text {
				r = spmRune(r)
				if prev >= 0 {
					tc.pairs = append(tc.pairs, pairKey(prev, r))
				}
				prev = r
			}
		}
		slices.Sort(tc.pairs)
		tc.pairs = slices.Compact(tc.pairs)
		tc.pairs = slices.Clip(tc.pairs)
	})
	return m.cuts
}

// canCut reports whether a SentencePiece text may be cut between
// characters a and b.
func (tc *tokenCuts) canCut(a, b rune) bool {
	if !tc.besideSpecial(a, b) {
		return false
	}
	_, found := slices.BinarySearch(tc.pairs, pairKey(spmRune(a), spmRune(b)))
	return !found
}

// besideSpecial reports whether a cut between a and b keeps clear of the
// special tokens' texts (and of whitespace they strip).
func (tc *tokenCuts) besideSpecial(a, b rune) bool {
	if tc.last[a] || tc.first[b] {
		return false
	}
	return !tc.strip || !isSpace(a) && !isSpace(b)
}

// isSpace is C's isspace, which llama.cpp strips with.
func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r'
}

// pieceCuts returns where text is cut (each a byte offset of a character
// that starts a piece, the previous character at prev[i]), about every
// size bytes; none when the vocabulary is not cut.
func (tc *tokenCuts) pieceCuts(text string, size int) (cuts, prev []int) {
	if tc.bpe {
		return tc.bpeCuts(text, size)
	}
	if !tc.spm || !utf8.ValidString(text) {
		return nil, nil
	}
	last := 0 // the last cut
	pa, pr := -1, rune(-1)
	for i, r := range text {
		if pr >= 0 && i-last >= size && len(text)-i >= size/2 && tc.canCut(pr, r) {
			cuts, prev = append(cuts, i), append(prev, pa)
			last = i
		}
		pa, pr = i, r
	}
	return cuts, prev
}

// bpeCuts is where a text is cut for a byte-level BPE vocabulary.
// llama.cpp splits such a text into words with its pre-tokenizer's
// regular expression first, and for most pre-tokenizers (Qwen 2 and 3,
// DeepSeek, Tekken, GPT-4o: those without a hand-written matcher) with
// std::regex, which recurses once per character of a match: 28 KiB of
// newlines or 32 KiB of one letter overflowed an 8 MiB thread stack and
// took the process down (SIGSEGV). A piece starts at a space between two
// letters, at least size/2 bytes after the last cut: a word boundary for
// every pre-tokenizer llama.cpp has (the space begins the next word,
// " bar"), so the pieces' tokens are the whole text's (tested). A
// stretch of size bytes without one (a run of one character, base64,
// minified code) is cut where it reaches that length: its tokens there
// may differ from what llama.cpp would make of it whole, had it not
// crashed, and no match is longer than size characters (about 1.2 MiB of
// stack). Either cut is made only where bpeCanCut allows.
func (tc *tokenCuts) bpeCuts(text string, size int) (cuts, prev []int) {
	last := 0
	pr := rune(-1)
	var ws [2]int
	for i, r := range text {
		if pr >= 0 {
			word := false
			if i-last >= size/2 && r == ' ' && unicode.IsLetter(pr) {
				next, _ := utf8.DecodeRuneInString(text[i+1:])
				word = unicode.IsLetter(next)
			}
			if (word || i-last >= size) && tc.bpeCanCut(text, i, &ws) {
				cuts, prev = append(cuts, i), append(prev, i)
				last = i
			}
		}
		pr = r
	}
	return cuts, prev
}

// bpeCanCut reports whether a BPE text may be cut at byte offset i: not
// inside a special token's text, nor in whitespace that a special token
// beside it strips (the piece without the token would keep it), unless
// the whitespace is longer than a piece. Beside a special token is fine:
// llama.cpp finds it whole in its piece.
func (tc *tokenCuts) bpeCanCut(text string, i int, ws *[2]int) bool {
	if tc.insideSpecial(text, i) {
		return false
	}
	if len(tc.lstrip) == 0 && len(tc.rstrip) == 0 {
		return true
	}
	// The whitespace around the cut (C isspace: ASCII), found once per
	// run (ws).
	start, end := ws[0], ws[1]
	if i < start || i > end || start == end {
		start, end = i, i
		for start > 0 && isSpace(rune(text[start-1])) {
			start--
		}
		for end < len(text) && isSpace(rune(text[end])) {
			end++
		}
		*ws = [2]int{start, end}
	}
	if start == end || end-start > tokenizePiece {
		// No whitespace, or a run too long to keep whole (it is a long
		// regex match): cut it even where a token would strip it.
		return true
	}
	// Whitespace a token strips must stay in the token's piece: all of
	// it before the cut after an RSTRIP token, after it before an LSTRIP
	// one.
	for _, s := range tc.rstrip {
		if i < end && strings.HasSuffix(text[:start], s) {
			return false
		}
	}
	for _, s := range tc.lstrip {
		if i > start && strings.HasPrefix(text[end:], s) {
			return false
		}
	}
	return true
}

// tokenizePieces is Tokenize of a long text in pieces (tokenizePiece).
func (m *Model) tokenizePieces(text string, addSpecial, parseSpecial bool) ([]Token, error) {
	tc := m.tokenCuts()
	cuts, prev := tc.pieceCuts(text, tokenizePiece)
	if len(cuts) == 0 {
		return m.tokenize(text, addSpecial, parseSpecial)
	}
	out, err := m.tokenize(text[:cuts[0]], addSpecial, parseSpecial)
	if err != nil {
		return nil, err
	}
	eos := addSpecial && tc.addEOS // the first piece ends with the EOS that belongs after the last
	if eos {
		if len(out) == 0 || out[len(out)-1] != m.EOS() {
			return m.tokenize(text, addSpecial, parseSpecial)
		}
		out = out[:len(out)-1]
	}
	for i, c := range cuts {
		end := len(text)
		if i+1 < len(cuts) {
			end = cuts[i+1]
		}
		var lead []Token
		if prev[i] < c { // SentencePiece: the character before the cut leads
			if lead, err = m.tokenize(text[prev[i]:c], false, parseSpecial); err != nil {
				return nil, err
			}
		}
		toks, err := m.tokenize(text[prev[i]:end], false, parseSpecial)
		if err != nil {
			return nil, err
		}
		if len(toks) < len(lead) || !slices.Equal(toks[:len(lead)], lead) {
			// Not expected (the cut is between characters no token
			// joins); the whole text is still tokenized right.
			slog.Warn("tokenize: a piece did not start as its leading character does; tokenizing the text whole", "offset", c)
			return m.tokenize(text, addSpecial, parseSpecial)
		}
		out = append(out, toks[len(lead):]...)
	}
	if eos {
		out = append(out, m.EOS())
	}
	return out, nil
}
