package engine

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// samePieces checks that text tokenizes in pieces (Tokenize) as it does
// whole, with BOS and special-token parsing as flags say.
func samePieces(t *testing.T, m *Model, what, text string, flags [2]bool) {
	t.Helper()
	got, err := m.Tokenize(text, flags[0], flags[1])
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.tokenize(text, flags[0], flags[1])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		k := 0
		for k < min(len(got), len(want)) && got[k] == want[k] {
			k++
		}
		t.Fatalf("%s (%d bytes), add/parse special %v: %d tokens in pieces, %d whole, first difference at %d", what, len(text), flags, len(got), len(want), k)
	}
}

// Tokenized in pieces, a long text gives the tokens it gives whole, on
// SentencePiece vocabularies (a 512-token one, LLaMA 2's 32,000 and one
// that adds an EOS), with
// and without BOS and special-token parsing, for texts that mix words,
// spaces, newlines, characters the vocabularies lack, special tokens'
// texts and long runs; the texts are really cut.
func TestTokenizePieces(t *testing.T) {
	defer func(n int) { tokenizePiece = n }(tokenizePiece)
	tokenizePiece = 48
	parts := []string{"Once", " upon", " a", " time", " ", "  ", "\n", "\n\n", "é", "中文", "🦊", "\t", ".", "<s>", "</s>", "<unk>",
		"▁", "ab", "aaaa", "...", "'", "1234", "\u00a0", "x"}
	rng := rand.New(rand.NewSource(1))
	var texts []string
	for range 40 {
		var b strings.Builder
		for b.Len() < 200+rng.Intn(600) {
			p := parts[rng.Intn(len(parts))]
			b.WriteString(strings.Repeat(p, 1+rng.Intn(3)*rng.Intn(8)))
		}
		texts = append(texts, b.String())
	}
	texts = append(texts, strings.Repeat("é", 4000), strings.Repeat("\n", 4000), strings.Repeat("a", 3000),
		strings.Repeat("Once upon a time there was a little girl. ", 40), strings.Repeat(" é\n", 1000))
	// The generated reranker's vocabulary adds an EOS after the text.
	reranker := filepath.Join(t.TempDir(), "reranker.gguf")
	if err := testmodels.WriteReranker(reranker); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{testmodels.Testdata("stories260K.gguf"), testmodels.Testdata("llama-2-tiny-random.gguf"), reranker} {
		m, err := LoadModel(file, ModelParams{VocabOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		cut := 0
		for i, text := range texts {
			if c, _ := m.tokenCuts().pieceCuts(text, tokenizePiece); len(c) > 0 {
				cut++
			}
			for _, flags := range [][2]bool{{true, false}, {false, false}, {true, true}, {false, true}} {
				samePieces(t, m, fmt.Sprintf("%s, text %d", file, i), text, flags)
			}
		}
		if cut < len(texts)/2 {
			t.Errorf("%s: only %d of %d texts were cut", file, cut, len(texts))
		}
		if file == reranker && !m.tokenCuts().addEOS {
			t.Error("the reranker's vocabulary adds no EOS: the case is not tested")
		}
		m.Close()
	}
}

// The worst text (a megabyte of a character the vocabulary has no token
// for, each costing llama.cpp a copy of its whole output when tokenized
// whole) is tokenized, in pieces, as its short version is: one token
// per newline after what starts the text.
func TestTokenizeWorstText(t *testing.T) {
	m, err := LoadModel(testmodels.Testdata("llama-2-tiny-random.gguf"), ModelParams{VocabOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	text := strings.Repeat("\n", 1<<20)
	if c, _ := m.tokenCuts().pieceCuts(text, tokenizePiece); len(c) < 32 {
		t.Fatalf("%d cuts in a megabyte of newlines", len(c))
	}
	short, err := m.tokenize("\n\n\n", true, true) // BOS, the leading space, 3 newlines
	if err != nil {
		t.Fatal(err)
	}
	lead := len(short) - 3
	toks, err := m.Tokenize(text, true, true)
	if err != nil || len(toks) != lead+len(text) || !slices.Equal(toks[:lead], short[:lead]) {
		t.Fatalf("%d tokens (%v), want %d", len(toks), err, lead+len(text))
	}
	for _, tk := range toks[lead:] {
		if tk != short[lead] {
			t.Fatal("a newline tokenized otherwise")
		}
	}
}

// go test -run - -bench Tokenize ./engine: 128 KiB of newlines and of
// prose on LLaMA 2's vocabulary, in pieces and whole.
func BenchmarkTokenize(b *testing.B) {
	m, err := LoadModel(testmodels.Testdata("llama-2-tiny-random.gguf"), ModelParams{VocabOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for _, c := range []struct{ name, text string }{
		{"newlines", strings.Repeat("\n", 128<<10)},
		{"prose", strings.Repeat("Once upon a time there was a little girl. ", (128<<10)/43)},
	} {
		b.Run(c.name+"/pieces", func(b *testing.B) {
			for b.Loop() {
				m.Tokenize(c.text, true, true)
			}
		})
		b.Run(c.name+"/whole", func(b *testing.B) {
			for b.Loop() {
				m.tokenize(c.text, true, true)
			}
		})
	}
}

// bpePreTokenizers are llama.cpp pre-tokenizers of byte-level BPE
// vocabularies: with a hand-written matcher (gpt-2, llama-bpe, ...) and
// with std::regex (qwen2, deepseek-llm, tekken, gpt-4o), whose recursion
// once overflowed the stack on a long run of one character.
var bpePreTokenizers = []string{"gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder", "tekken", "gpt-4o", "falcon", "starcoder", "command-r", "smollm", "default"}

func loadBPE(t *testing.T, pre string) *Model {
	t.Helper()
	testkit.Full(t, "tokenizer sweeps on generated BPE vocabularies")
	path := filepath.Join(t.TempDir(), pre+".gguf")
	if err := testmodels.WriteBPE(path, pre); err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(path, ModelParams{VocabOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// Prose tokenized in pieces on a BPE vocabulary gives the whole text's
// tokens: every cut is at a space between two letters, a word boundary
// for each pre-tokenizer.
func TestTokenizePiecesBPE(t *testing.T) {
	defer func(n int) { tokenizePiece = n }(tokenizePiece)
	tokenizePiece = 256
	words := []string{"the", "cat", "sat", "on", "a", "mat", "don't", "we'll", "café", "naïve", "中文", "Ünïcode", "x"}
	seps := []string{" ", " ", " ", " ", " ", " ", " ", " ", ", ", ". ", "\n", "  ", " 123 ", " 🦊 ", "\t", "! ", " " + testmodels.BPEEndOfText + " "}
	rng := rand.New(rand.NewSource(2))
	var texts []string
	for range 30 {
		var b strings.Builder
		for b.Len() < 300+rng.Intn(900) {
			b.WriteString(words[rng.Intn(len(words))])
			b.WriteString(seps[rng.Intn(len(seps))])
		}
		texts = append(texts, b.String())
	}
	for _, pre := range bpePreTokenizers {
		m := loadBPE(t, pre)
		if !m.tokenCuts().bpe {
			t.Fatalf("%s: not a BPE vocabulary", pre)
		}
		for i, text := range texts {
			cuts, _ := m.tokenCuts().pieceCuts(text, tokenizePiece)
			if len(cuts) == 0 {
				t.Fatalf("%s: text %d was not cut", pre, i)
			}
			for _, c := range cuts {
				if text[c] != ' ' {
					t.Fatalf("%s: text %d cut at %q, not at a space between words", pre, i, text[max(c-5, 0):min(c+5, len(text))])
				}
			}
			for _, flags := range [][2]bool{{true, false}, {false, true}} {
				samePieces(t, m, fmt.Sprintf("%s, text %d", pre, i), text, flags)
			}
		}
	}
}

func countToken(toks []Token, m *Model, text string) int {
	n := 0
	for _, tk := range toks {
		if string(m.TokenPiece(tk, true)) == text {
			n++
		}
	}
	return n
}

// Long runs of one character (which overflowed the stack in llama.cpp's
// std::regex pre-tokenizers: 28 KiB of newlines, 32 KiB of one letter)
// are tokenized (96 KiB each) and cover the whole text; a forced cut in
// text without words splits no special token.
func TestTokenizeRunsBPE(t *testing.T) {
	for _, pre := range bpePreTokenizers {
		m := loadBPE(t, pre)
		for _, c := range []string{"a", "\n", " ", "é"} {
			text := strings.Repeat(c, 96<<10/len(c))
			toks, err := m.Tokenize(text, false, true)
			if err != nil {
				t.Fatalf("%s, %q: %v", pre, c, err)
			}
			if pre != "qwen2" {
				continue
			}
			var n int
			for _, tk := range toks {
				n += len(m.TokenPiece(tk, false))
			}
			if n != len(text) {
				t.Fatalf("%s, %q: the tokens spell %d bytes of %d", pre, c, n, len(text))
			}
		}
		// A run of text that is not words, with special tokens in it: no
		// cut splits one.
		run := strings.Repeat(strings.Repeat("=", 1000)+testmodels.BPEEndOfText, 100)
		toks, err := m.Tokenize(run, false, true)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(run, testmodels.BPEEndOfText); slices.Index(toks, toks[0]) < 0 || countToken(toks, m, testmodels.BPEEndOfText) != n {
			t.Fatalf("%s: %d special tokens kept of %d", pre, countToken(toks, m, testmodels.BPEEndOfText), n)
		}
	}
}

// A BPE cut is never inside a special token's text, nor where it would
// part a stripping special token from whitespace it swallows; beside a
// special token, or in whitespace no such token touches, it is.
func TestBPECanCut(t *testing.T) {
	tc := &tokenCuts{bpe: true, specials: []string{"<mask>", "<|end|>"}, lstrip: []string{"<mask>"}, rstrip: []string{"<|end|>"}}
	text := "ab<mask>cd  <mask>ef<|end|>  gh  ij<|end|>" + strings.Repeat(" ", tokenizePiece+1) + "kl"
	for _, c := range []struct {
		at   string // the text from the cut on
		want bool
	}{
		{"<mask>cd", true},   // beside
		{"mask>cd", false},   // inside
		{" <mask>ef", false}, // inside whitespace <mask> strips from its left
		{"  <mask>ef", true}, // before it: the whitespace goes with <mask>
		{"  gh", false},      // right after <|end|>, which strips what follows
		{" gh", false},       // inside that whitespace
		{"gh  ij", true},     // after it: the whitespace stays with <|end|>
		{" ij", true},        // whitespace no stripping token touches
		{"|end|>", false},
		{strings.Repeat(" ", tokenizePiece) + "kl", true}, // whitespace longer than a piece
	} {
		i := strings.Index(text, c.at)
		if i < 0 {
			t.Fatalf("%q not in the text", c.at)
		}
		var ws [2]int
		if got := tc.bpeCanCut(text, i, &ws); got != c.want {
			t.Errorf("cut before %q: %v, want %v", c.at, got, c.want)
		}
	}
}
