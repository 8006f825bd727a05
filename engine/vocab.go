package engine

// #include <stdlib.h>
// #include "llama.h"
import "C"

import (
	"fmt"
	"unicode/utf8"
	"unsafe"
)

// Token is a vocabulary id.
type Token = int32

// Tokenize turns text into tokens. addSpecial adds BOS/EOS as the model's
// vocabulary asks; parseSpecial lets control tokens written in the text
// (e.g. "<|im_start|>") become their ids instead of plain text.
func (m *Model) Tokenize(text string, addSpecial, parseSpecial bool) ([]Token, error) {
	if len(text) > 1<<30 {
		return nil, fmt.Errorf("tokenize: text of %d bytes is too long", len(text))
	}
	if len(text) > tokenizePiece {
		return m.tokenizePieces(text, addSpecial, parseSpecial)
	}
	return m.tokenize(text, addSpecial, parseSpecial)
}

// tokenize is one llama_tokenize call over the whole text.
func (m *Model) tokenize(text string, addSpecial, parseSpecial bool) ([]Token, error) {
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	n := len(text) + 2
	for {
		toks := make([]Token, n)
		var p *C.llama_token
		if n > 0 {
			p = (*C.llama_token)(unsafe.Pointer(&toks[0]))
		}
		got := int(C.llama_tokenize(m.vocab, ctext, C.int32_t(len(text)), p, C.int32_t(n), C.bool(addSpecial), C.bool(parseSpecial)))
		if got >= 0 {
			return toks[:got], nil
		}
		if got == int(int32(-1<<31)) || -got <= n {
			return nil, fmt.Errorf("tokenize: llama.cpp failed on %d bytes of text", len(text))
		}
		n = -got
	}
}

// TokenPiece is the raw bytes of one token. Special tokens render as their
// text when special is true and as nothing otherwise. A piece may be part
// of a UTF-8 character: use a Detokenizer to stream text.
func (m *Model) TokenPiece(t Token, special bool) []byte {
	// llama.cpp looks the id up with std::vector::at: an id outside the
	// vocabulary throws through C and terminates the process.
	if t < 0 || int(t) >= m.nVocab {
		return nil
	}
	var small [64]byte
	buf := small[:]
	for {
		n := int(C.llama_token_to_piece(m.vocab, C.llama_token(t), (*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(len(buf)), 0, C.bool(special)))
		if n >= 0 {
			out := make([]byte, n)
			copy(out, buf[:n])
			return out
		}
		buf = make([]byte, -n)
	}
}

// Detokenize turns tokens back into text; control tokens are rendered only
// when special is true.
func (m *Model) Detokenize(toks []Token, special bool) string {
	var d Detokenizer
	var out []byte
	for _, t := range toks {
		out = append(out, d.Add(m.TokenPiece(t, special))...)
	}
	return string(append(out, d.Flush()...))
}

// IsEOG reports whether t ends generation (EOS, EOT, <|im_end|> …).
func (m *Model) IsEOG(t Token) bool { return bool(C.llama_vocab_is_eog(m.vocab, C.llama_token(t))) }

// BOS is the beginning-of-sequence token, or -1.
func (m *Model) BOS() Token { return Token(C.llama_vocab_bos(m.vocab)) }

// EOS is the end-of-sequence token, or -1.
func (m *Model) EOS() Token { return Token(C.llama_vocab_eos(m.vocab)) }

// FIM returns the fill-in-the-middle tokens (prefix, suffix, middle), or
// -1 for those the vocabulary lacks.
func (m *Model) FIM() (pre, suf, mid Token) {
	return Token(C.llama_vocab_fim_pre(m.vocab)), Token(C.llama_vocab_fim_suf(m.vocab)), Token(C.llama_vocab_fim_mid(m.vocab))
}

// AddBOS reports whether the vocabulary wants BOS at the start of a prompt.
func (m *Model) AddBOS() bool { return bool(C.llama_vocab_get_add_bos(m.vocab)) }

// VocabSize is the number of tokens in the vocabulary.
func (m *Model) VocabSize() int { return int(C.llama_vocab_n_tokens(m.vocab)) }

// Detokenizer joins token pieces into valid UTF-8 text: bytes of a
// character split across tokens are held back until it is complete. The
// zero value is ready to use.
type Detokenizer struct {
	pending []byte
}

// Add appends a piece and returns the text that is now complete.
func (d *Detokenizer) Add(piece []byte) []byte {
	d.pending = append(d.pending, piece...)
	cut := completePrefix(d.pending)
	out := make([]byte, cut)
	copy(out, d.pending[:cut])
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return out
}

// Flush returns whatever is held back, with invalid bytes replaced by
// U+FFFD, and resets the detokenizer.
func (d *Detokenizer) Flush() []byte {
	out := []byte(string([]rune(string(d.pending))))
	d.pending = d.pending[:0]
	return out
}

// completePrefix is the length of b without a trailing, still incomplete
// UTF-8 sequence. Invalid bytes that can never become valid pass through.
func completePrefix(b []byte) int {
	// A UTF-8 sequence is at most 4 bytes: look at most 3 back for its start.
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			return len(b)
		}
	}
	return len(b)
}
