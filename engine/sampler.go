package engine

// #include <stdlib.h>
// #include "llama.h"
// #include "sampling.h"
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// SamplerParams choose how the next token is picked. They are the sampling
// half of Ollama's options; the zero value is greedy decoding.
type SamplerParams struct {
	Seed             int64   // negative: a random seed
	Temperature      float32 // <= 0: greedy (argmax), like Ollama's sampler
	TopK             int     // <= 0: off
	TopP             float32 // 0 or >= 1: off
	MinP             float32 // <= 0: off
	TypicalP         float32 // 0 or >= 1: off
	RepeatLastN      int     // tokens the penalties look back over; -1: the whole context
	RepeatPenalty    float32 // 1 or 0: off
	PresencePenalty  float32
	FrequencyPenalty float32
	Mirostat         int // 0 off, 1 Mirostat, 2 Mirostat 2.0
	MirostatTau      float32
	MirostatEta      float32
	LogitBias        map[Token]float32
	// Grammar is a GBNF grammar (root rule "root") the output must match.
	Grammar string

	wholeChain bool // tests: llama.cpp's whole chain, as with a grammar
}

// Sampler picks tokens from a context's logits: Tadpole's front end
// (sampling.c) over a llama.cpp sampler chain. It is not safe for
// concurrent use; each generating sequence has its own.
type Sampler struct {
	c      *C.struct_tp_sampler
	nVocab int
}

// NewSampler builds the sampler. The order is llama.cpp's: grammar, logit
// bias, penalties, then greedy or top-k → typical → top-p → min-p →
// temperature → random draw (or a Mirostat variant). With Temperature <= 0
// it is grammar, logit bias and greedy: temperature 0 means the model's
// single most likely continuation, as Ollama's own sampler does.
//
// Without a grammar or Mirostat (the common case), the logit bias, the
// penalties and top-k are applied by the front end to the tokens they
// concern, and only top-k's survivors go through llama.cpp's chain; the
// arithmetic and the order are the same (see sampling.c).
func (m *Model) NewSampler(p SamplerParams) (*Sampler, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	seed := C.uint32_t(C.LLAMA_DEFAULT_SEED)
	if p.Seed >= 0 {
		seed = C.uint32_t(uint32(p.Seed))
	}
	var biasTok []C.int32_t
	var biasVal []C.float
	for t, b := range p.LogitBias {
		if t < 0 || int(t) >= m.VocabSize() {
			return nil, fmt.Errorf("logit_bias: token %d is not in the vocabulary (0..%d)", t, m.VocabSize()-1)
		}
		biasTok = append(biasTok, C.int32_t(t))
		biasVal = append(biasVal, C.float(b))
	}
	rp := p.RepeatPenalty
	if rp == 0 {
		rp = 1
	}
	penalties := p.Temperature > 0 && p.RepeatLastN != 0 && (rp != 1 || p.PresencePenalty != 0 || p.FrequencyPenalty != 0)
	grammar := strings.TrimSpace(p.Grammar)
	full := p.wholeChain || grammar != "" || (p.Temperature > 0 && p.Mirostat != 0)

	chain := C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
	add := func(x *C.struct_llama_sampler) { C.llama_sampler_chain_add(chain, x) }
	fail := func(err error) (*Sampler, error) {
		C.llama_sampler_free(chain)
		return nil, err
	}
	var topK, lastN C.int32_t
	// Greedy under a grammar: the front end tries the unconstrained
	// argmax against the grammar first (sampling.c); it keeps the bias.
	greedyGrammar := !p.wholeChain && grammar != "" && p.Temperature <= 0
	if full {
		// llama.cpp's whole chain.
		if grammar != "" {
			cg := C.CString(grammar)
			root := C.CString("root")
			gs := C.llama_sampler_init_grammar(m.vocab, cg, root)
			C.free(unsafe.Pointer(cg))
			C.free(unsafe.Pointer(root))
			if gs == nil {
				return fail(fmt.Errorf("invalid grammar: %s", strings.Join(takeLogErrors(), "; ")))
			}
			add(gs)
		}
		if len(biasTok) > 0 {
			biases := make([]C.llama_logit_bias, len(biasTok))
			for i := range biasTok {
				biases[i] = C.llama_logit_bias{token: C.llama_token(biasTok[i]), bias: biasVal[i]}
			}
			add(C.llama_sampler_init_logit_bias(C.int32_t(m.VocabSize()), C.int32_t(len(biases)), &biases[0]))
			if !greedyGrammar {
				biasTok, biasVal = nil, nil
			}
		}
		switch {
		case p.Temperature <= 0:
			add(C.llama_sampler_init_greedy())
		default:
			if penalties {
				add(C.llama_sampler_init_penalties(C.int32_t(m.VocabSize()), C.int32_t(p.RepeatLastN), C.float(rp), C.float(p.FrequencyPenalty), C.float(p.PresencePenalty)))
			}
			switch p.Mirostat {
			case 1:
				add(C.llama_sampler_init_temp(C.float(p.Temperature)))
				add(C.llama_sampler_init_mirostat(C.int32_t(m.VocabSize()), seed, C.float(p.MirostatTau), C.float(p.MirostatEta), 100))
			case 2:
				add(C.llama_sampler_init_temp(C.float(p.Temperature)))
				add(C.llama_sampler_init_mirostat_v2(seed, C.float(p.MirostatTau), C.float(p.MirostatEta)))
			default:
				addTail(add, p, seed, true)
			}
		}
	} else if p.Temperature > 0 {
		// The front end does bias, penalties and top-k; the chain the rest.
		if p.TopK > 0 {
			topK = C.int32_t(p.TopK)
		}
		if penalties {
			lastN = C.int32_t(p.RepeatLastN)
		}
		addTail(add, p, seed, false)
	} else {
		C.llama_sampler_free(chain)
		chain = nil // greedy: an argmax
	}
	var bt *C.int32_t
	var bv *C.float
	gg := C.int32_t(0)
	if greedyGrammar {
		gg = 1
	}
	if len(biasTok) > 0 {
		bt, bv = &biasTok[0], &biasVal[0]
	}
	c := C.tp_sampler_new(C.int32_t(m.VocabSize()), chain, topK, lastN, C.float(rp), C.float(p.FrequencyPenalty), C.float(p.PresencePenalty),
		C.int32_t(len(biasTok)), bt, bv, gg)
	if c == nil {
		if chain != nil {
			C.llama_sampler_free(chain)
		}
		return nil, fmt.Errorf("sampler: out of memory")
	}
	return &Sampler{c: c, nVocab: m.VocabSize()}, nil
}

// addTail adds what follows the penalties in llama.cpp's order: top-k
// (when the chain does it), typical, top-p, min-p, temperature and the
// seeded draw.
func addTail(add func(*C.struct_llama_sampler), p SamplerParams, seed C.uint32_t, topK bool) {
	if topK && p.TopK > 0 {
		add(C.llama_sampler_init_top_k(C.int32_t(p.TopK)))
	}
	if p.TypicalP > 0 && p.TypicalP < 1 {
		add(C.llama_sampler_init_typical(C.float(p.TypicalP), 1))
	}
	if p.TopP > 0 && p.TopP < 1 {
		add(C.llama_sampler_init_top_p(C.float(p.TopP), 1))
	}
	if p.MinP > 0 {
		add(C.llama_sampler_init_min_p(C.float(p.MinP), 1))
	}
	add(C.llama_sampler_init_temp(C.float(p.Temperature)))
	add(C.llama_sampler_init_dist(seed))
}

// Sample picks the next token from output idx of the context's last batch
// and feeds it back to the sampler (penalties, grammar and Mirostat
// state). It fails when the batch has no output idx.
func (s *Sampler) Sample(ctx *Context, idx int) (Token, error) {
	t := C.tp_sampler_sample(s.c, ctx.c, C.int32_t(idx))
	if t < 0 {
		return 0, fmt.Errorf("sample: no logits for batch output %d", idx)
	}
	return Token(t), nil
}

// Accept feeds a token the sampler did not pick (e.g. prompt tokens for
// the repetition penalties) into its state.
// Tokens outside the vocabulary are ignored.
func (s *Sampler) Accept(t Token) {
	if t >= 0 && int(t) < s.nVocab {
		C.tp_sampler_accept(s.c, C.int32_t(t))
	}
}

// Reset clears the sampler's state.
func (s *Sampler) Reset() { C.tp_sampler_reset(s.c) }

// Close frees the sampler.
func (s *Sampler) Close() {
	if s != nil && s.c != nil {
		C.tp_sampler_free(s.c)
		s.c = nil
	}
}
