package testmodels

import (
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// BPEEndOfText is the special token of the BPE models.
const BPEEndOfText = "<|endoftext|>"

// byteChars is GPT-2's byte-level alphabet: byte b is written as
// byteChars[b] in a byte-level BPE vocabulary.
func byteChars() []rune {
	printable := func(b int) bool { return b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF }
	m := make([]rune, 256)
	n := 0
	for b := range 256 {
		if printable(b) {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// bpeMerges are the merges of the BPE models, in byte-level spelling
// ("Ġ" a space, "Ċ" a newline): enough that words merge and runs of one
// character merge into longer tokens.
var bpeMerges = []string{
	"Ġ t", "h e", "Ġt he", "Ġ a", "e r", "i n", "o n", "Ġ o", "a n", "Ġ w", "r e",
	"a a", "aa aa", "Ċ Ċ", "ĠĠ ĠĠ", "Ã ©", "1 2", "Ġ Ġ", "Ġ c", "Ġc a", "Ġca t",
}

// WriteBPE writes a tiny random-weight llama model whose vocabulary is a
// byte-level BPE (tokenizer.ggml.model "gpt2") with the pre-tokenizer pre
// (tokenizer.ggml.pre, one of llama.cpp's names: "qwen2", "llama-bpe",
// ...): the 256 byte tokens, the merges' results and <|endoftext|>.
func WriteBPE(path, pre string) error {
	chars := byteChars()
	var toks []string
	for b := range 256 {
		toks = append(toks, string(chars[b]))
	}
	for _, m := range bpeMerges {
		toks = append(toks, strings.ReplaceAll(m, " ", ""))
	}
	eot := len(toks)
	toks = append(toks, BPEEndOfText)
	for len(toks) < minVocab || len(toks)%8 != 0 { // RandomLlama's least
		toks = append(toks, fmt.Sprintf("<|pad%d|>", len(toks)))
	}
	types := make([]int32, len(toks))
	for i := range types {
		types[i] = tokNormal
		if i >= eot {
			types[i] = tokControl
		}
	}
	s := Tiny
	s.Vocab = len(toks)
	kvs, tensors, err := RandomLlama(s, gguf.F32, 1)
	if err != nil {
		return err
	}
	var out []gguf.KV
	for _, kv := range kvs {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			out = append(out, kv)
		}
	}
	out = append(out,
		gguf.KV{Key: "tokenizer.ggml.model", Value: "gpt2"},
		gguf.KV{Key: "tokenizer.ggml.pre", Value: pre},
		gguf.KV{Key: "tokenizer.ggml.tokens", Value: toks},
		gguf.KV{Key: "tokenizer.ggml.token_type", Value: types},
		gguf.KV{Key: "tokenizer.ggml.merges", Value: bpeMerges},
		gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: uint32(eot)},
		gguf.KV{Key: "tokenizer.ggml.eos_token_id", Value: uint32(eot)},
		gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: false},
	)
	if err := gguf.WriteFile(path, out, tensors); err != nil {
		return fmt.Errorf("write BPE model: %w", err)
	}
	return nil
}
