package testmodels

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// SentencePiece token types (tokenizer.ggml.token_type), as llama.cpp
// reads them.
const (
	tokNormal  int32 = 1
	tokUnknown int32 = 2
	tokControl int32 = 3
	tokByte    int32 = 6
)

// Token ids shared by the generated vocabularies.
const (
	UnkID      = 0
	BOSID      = 1
	EOSID      = 2
	firstByte  = 3 // <0x00>; <0xFF> is firstByte+255
	ImStartID  = firstByte + 256
	ImEndID    = ImStartID + 1
	firstPiece = ImEndID + 1
)

// Special token texts.
const (
	UnkToken     = "<unk>"
	BOSToken     = "<s>"
	EOSToken     = "</s>"
	ImStartToken = "<|im_start|>"
	ImEndToken   = "<|im_end|>"
)

// ChatMLTemplate is the tokenizer.chat_template of the generated models
// (llama.cpp recognises it as "chatml").
const ChatMLTemplate = "{% for message in messages %}" +
	"{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
	"{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// spaceMark is SentencePiece's word-boundary mark: a leading space.
const spaceMark = "▁"

// vocab is a SentencePiece vocabulary under construction.
type vocab struct {
	tokens []string
	scores []float32
	types  []int32
	ids    map[string]int
}

// newVocab starts a vocabulary with the fixed special and byte tokens.
func newVocab() *vocab {
	v := &vocab{ids: map[string]int{}}
	v.add(UnkToken, 0, tokUnknown)
	v.add(BOSToken, 0, tokControl)
	v.add(EOSToken, 0, tokControl)
	for b := 0; b < 256; b++ {
		v.add(fmt.Sprintf("<0x%02X>", b), 0, tokByte)
	}
	v.add(ImStartToken, 0, tokControl)
	v.add(ImEndToken, 0, tokControl)
	return v
}

func (v *vocab) add(tok string, score float32, typ int32) int {
	if id, ok := v.ids[tok]; ok {
		return id
	}
	id := len(v.tokens)
	v.ids[tok] = id
	v.tokens = append(v.tokens, tok)
	v.scores = append(v.scores, score)
	v.types = append(v.types, typ)
	return id
}

// pieceScore ranks merges: longer pieces first, and a piece starting a
// word ahead of one of the same length inside a word.
func pieceScore(piece string) float32 {
	s := float32(utf8.RuneCountInString(piece))
	if strings.HasPrefix(piece, spaceMark) {
		s += 0.5
	}
	return s
}

// addWord adds a word piece and every prefix of it (llama.cpp's
// SentencePiece tokenizer merges two symbols only when their concatenation
// is a token, so a word is reachable only through its prefixes).
func (v *vocab) addWord(word string) int {
	for i := range word {
		if i > 0 {
			v.add(word[:i], pieceScore(word[:i]), tokNormal)
		}
	}
	return v.add(word, pieceScore(word), tokNormal)
}

func (v *vocab) id(tok string) int {
	id, ok := v.ids[tok]
	if !ok {
		panic("testmodels: no token " + tok)
	}
	return id
}

// kvs is the tokenizer metadata of the vocabulary.
func (v *vocab) kvs() []gguf.KV {
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: v.tokens},
		{Key: "tokenizer.ggml.scores", Value: v.scores},
		{Key: "tokenizer.ggml.token_type", Value: v.types},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(BOSID)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(EOSID)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(UnkID)},
		{Key: "tokenizer.ggml.eot_token_id", Value: uint32(ImEndID)},
		{Key: "tokenizer.ggml.add_bos_token", Value: true},
		{Key: "tokenizer.ggml.add_eos_token", Value: false},
		{Key: "tokenizer.ggml.add_space_prefix", Value: true},
		{Key: "tokenizer.chat_template", Value: ChatMLTemplate},
	}
}

// syntheticVocab builds a vocabulary of exactly n tokens: the fixed
// tokens, "▁", then single characters and letter sequences (each with and
// without "▁"), shortest first so that every piece's prefixes are in it.
func syntheticVocab(n int) (*vocab, error) {
	v := newVocab()
	if n < minVocab {
		return nil, fmt.Errorf("vocabulary of %d tokens: at least %d needed", n, minVocab)
	}
	full := func() bool { return len(v.tokens) >= n }
	v.add(spaceMark, pieceScore(spaceMark), tokNormal)
	const letters = "abcdefghijklmnopqrstuvwxyz"
	singles := letters + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\"-:;()"
	var level []string
	for _, c := range singles {
		for _, p := range []string{spaceMark + string(c), string(c)} {
			if full() {
				return v, nil
			}
			v.add(p, pieceScore(p), tokNormal)
			if strings.ContainsRune(letters, c) {
				level = append(level, p)
			}
		}
	}
	for !full() {
		var next []string
		for _, p := range level {
			for _, c := range letters {
				if full() {
					return v, nil
				}
				q := p + string(c)
				v.add(q, pieceScore(q), tokNormal)
				next = append(next, q)
			}
		}
		level = next
	}
	return v, nil
}

// minVocab is the smallest synthetic vocabulary: the fixed tokens and a
// few pieces.
const minVocab = firstPiece + 40
