package engine

import (
	"math"
	"testing"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// samplingContext decodes a prompt on the 32k-vocabulary random model and
// returns a context whose last output holds real logits.
func samplingContext(t testing.TB) (*Model, *Context, *Batch) {
	t.Helper()
	m, err := LoadModel(testmodels.Testdata("llama-2-tiny-random.gguf"), ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	ctx, err := m.NewContext(ContextParams{NumCtx: 512, NumBatch: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctx.Close)
	b, err := NewBatch(64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return m, ctx, b
}

// generateWith decodes n tokens greedily fed back through s, starting from
// a fixed prompt, and returns them.
func generateWith(t *testing.T, m *Model, ctx *Context, b *Batch, s *Sampler, n int) []Token {
	t.Helper()
	ctx.ClearMemory()
	b.Clear()
	prompt := []Token{1, 450, 4996, 17354, 1701, 432, 17204}
	for i, tok := range prompt {
		b.Add(tok, i, 0, i == len(prompt)-1)
	}
	var out []Token
	for len(out) < n {
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		tok, err := s.Sample(ctx, b.Len()-1)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tok)
		b.Clear()
		b.Add(tok, len(prompt)+len(out)-1, 0, true)
	}
	return out
}

// The front end (bias, penalties and top-k applied to the tokens they
// concern) picks exactly what llama.cpp's whole chain picks, token for
// token, for the option combinations the servers send.
func TestSamplerMatchesLlamaChain(t *testing.T) {
	testkit.Full(t, "many sampler chains on the engine")
	m, ctx, b := samplingContext(t)
	ban := map[Token]float32{2: float32(math.Inf(-1)), 450: -5, 1000: 3.5}
	for _, tc := range []struct {
		name string
		p    SamplerParams
	}{
		{"greedy", SamplerParams{}},
		{"greedy with logit bias", SamplerParams{LogitBias: ban}},
		// Greedy under a grammar: the front end asks the grammar about
		// the unconstrained pick first. Letters and spaces reject most
		// of the random model's picks; everything but "<" rejects few.
		{"greedy, a narrow grammar", SamplerParams{Grammar: `root ::= [a-z ]+`, LogitBias: ban}},
		{"greedy, a wide grammar", SamplerParams{Grammar: `root ::= [^<]+`}},
		{"ollama defaults", SamplerParams{Seed: 7, Temperature: 0.8, TopK: 40, TopP: 0.9, RepeatLastN: 64, RepeatPenalty: 1.1}},
		{"hot, strong penalties, short window", SamplerParams{Seed: 3, Temperature: 1.5, TopK: 100, TopP: 0.95, MinP: 0.02, RepeatLastN: 4, RepeatPenalty: 1.8, FrequencyPenalty: 0.5, PresencePenalty: 0.7, LogitBias: ban}},
		{"top-k off (whole vocabulary)", SamplerParams{Seed: 11, Temperature: 0.7, TopP: 0.8, RepeatLastN: 64, RepeatPenalty: 1.1}},
		{"top-k above the vocabulary", SamplerParams{Seed: 5, Temperature: 0.9, TopK: 1 << 20, MinP: 0.05}},
		{"top-k 1", SamplerParams{Seed: 9, Temperature: 1, TopK: 1, RepeatLastN: 16, RepeatPenalty: 1.3}},
		{"typical", SamplerParams{Seed: 13, Temperature: 1, TopK: 50, TypicalP: 0.9, PresencePenalty: 1.5, RepeatLastN: 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, err := m.NewSampler(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			defer fast.Close()
			ref := tc.p
			ref.wholeChain = true
			slow, err := m.NewSampler(ref)
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Close()
			got := generateWith(t, m, ctx, b, fast, 48)
			want := generateWith(t, m, ctx, b, slow, 48)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("token %d: front end %d, llama.cpp's chain %d\n got %v\nwant %v", i, got[i], want[i], got, want)
				}
			}
			distinct := map[Token]bool{}
			for _, tok := range got {
				distinct[tok] = true
			}
			if tc.p.Temperature > 0 && tc.p.TopK != 1 && len(distinct) < 4 {
				t.Fatalf("sampling at temperature %g gave only %d distinct tokens: %v", tc.p.Temperature, len(distinct), got)
			}
		})
	}
}

// Accept and Reset feed the penalties: after a Reset the same seed and
// the same accepted tokens give the same choices again.
func TestSamplerAcceptReset(t *testing.T) {
	m, ctx, b := samplingContext(t)
	p := SamplerParams{Seed: 21, Temperature: 1, TopK: 40, RepeatLastN: 8, RepeatPenalty: 2}
	s, err := m.NewSampler(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref := p
	ref.wholeChain = true
	r, err := m.NewSampler(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tok := range []Token{450, 450, 4996, 17354, -1, Token(m.VocabSize())} { // the last two are ignored
		s.Accept(tok)
		r.Accept(tok)
	}
	a, c := generateWith(t, m, ctx, b, s, 16), generateWith(t, m, ctx, b, r, 16)
	if len(a) != len(c) {
		t.Fatal("length")
	}
	for i := range a {
		if a[i] != c[i] {
			t.Fatalf("after Accept: %v vs llama.cpp's %v", a, c)
		}
	}
}

func BenchmarkSample(b *testing.B) {
	m, ctx, batch := samplingContext(b)
	batch.Add(1, 0, 0, true)
	if err := ctx.Decode(batch); err != nil {
		b.Fatal(err)
	}
	ban := map[Token]float32{2: float32(math.Inf(-1))}
	for _, tc := range []struct {
		name string
		p    SamplerParams
	}{
		{"greedy", SamplerParams{LogitBias: ban}},
		{"temp0.8", SamplerParams{Seed: 1, Temperature: 0.8, TopK: 40, TopP: 0.9, RepeatLastN: 64, RepeatPenalty: 1.1, LogitBias: ban}},
		{"greedy+grammar", SamplerParams{Grammar: `root ::= [^<]*`, LogitBias: ban}},
	} {
		for _, whole := range []bool{false, true} {
			p := tc.p
			p.wholeChain = whole
			name := tc.name + "/frontend"
			if whole {
				name = tc.name + "/llama-chain"
			}
			b.Run(name, func(b *testing.B) {
				s, err := m.NewSampler(p)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				for i := 0; b.Loop(); i++ {
					if _, err := s.Sample(ctx, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
