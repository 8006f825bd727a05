package engine

// #include <stdlib.h>
// #include "llama.h"
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
}

// Sampler is a llama.cpp sampler chain. It is not safe for concurrent use;
// each generating sequence has its own.
type Sampler struct {
	c *C.struct_llama_sampler
}

// NewSampler builds the chain: grammar, logit bias, penalties, then greedy
// or top-k → typical → top-p → min-p → temperature → random draw (or a
// Mirostat variant). With Temperature <= 0 the chain is grammar, logit
// bias and greedy: temperature 0 means the model's single most likely
// continuation, as Ollama's own sampler does.
func (m *Model) NewSampler(p SamplerParams) (*Sampler, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	chain := C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
	s := &Sampler{c: chain}
	add := func(x *C.struct_llama_sampler) { C.llama_sampler_chain_add(chain, x) }
	seed := C.uint32_t(C.LLAMA_DEFAULT_SEED)
	if p.Seed >= 0 {
		seed = C.uint32_t(uint32(p.Seed))
	}
	if g := strings.TrimSpace(p.Grammar); g != "" {
		cg := C.CString(g)
		root := C.CString("root")
		gs := C.llama_sampler_init_grammar(m.vocab, cg, root)
		C.free(unsafe.Pointer(cg))
		C.free(unsafe.Pointer(root))
		if gs == nil {
			s.Close()
			return nil, fmt.Errorf("invalid grammar: %s", strings.Join(takeLogErrors(), "; "))
		}
		add(gs)
	}
	if len(p.LogitBias) > 0 {
		biases := make([]C.llama_logit_bias, 0, len(p.LogitBias))
		for t, b := range p.LogitBias {
			if t < 0 || int(t) >= m.VocabSize() {
				s.Close()
				return nil, fmt.Errorf("logit_bias: token %d is not in the vocabulary (0..%d)", t, m.VocabSize()-1)
			}
			biases = append(biases, C.llama_logit_bias{token: C.llama_token(t), bias: C.float(b)})
		}
		add(C.llama_sampler_init_logit_bias(C.int32_t(m.VocabSize()), C.int32_t(len(biases)), &biases[0]))
	}
	if p.Temperature <= 0 {
		add(C.llama_sampler_init_greedy())
		return s, nil
	}
	if (p.RepeatPenalty != 0 && p.RepeatPenalty != 1) || p.PresencePenalty != 0 || p.FrequencyPenalty != 0 {
		rp := p.RepeatPenalty
		if rp == 0 {
			rp = 1
		}
		add(C.llama_sampler_init_penalties(C.int32_t(p.RepeatLastN), C.float(rp), C.float(p.FrequencyPenalty), C.float(p.PresencePenalty)))
	}
	switch p.Mirostat {
	case 1:
		add(C.llama_sampler_init_temp(C.float(p.Temperature)))
		add(C.llama_sampler_init_mirostat(C.int32_t(m.VocabSize()), seed, C.float(p.MirostatTau), C.float(p.MirostatEta), 100))
		return s, nil
	case 2:
		add(C.llama_sampler_init_temp(C.float(p.Temperature)))
		add(C.llama_sampler_init_mirostat_v2(seed, C.float(p.MirostatTau), C.float(p.MirostatEta)))
		return s, nil
	}
	if p.TopK > 0 {
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
	return s, nil
}

// Sample picks the next token from output idx of the context's last batch
// and feeds it back to the chain (penalties, grammar and Mirostat state).
func (s *Sampler) Sample(ctx *Context, idx int) Token {
	return Token(C.llama_sampler_sample(s.c, ctx.c, C.int32_t(idx)))
}

// Accept feeds a token the sampler did not pick (e.g. prompt tokens for
// the repetition penalties) into the chain's state.
func (s *Sampler) Accept(t Token) { C.llama_sampler_accept(s.c, C.llama_token(t)) }

// Reset clears the chain's state.
func (s *Sampler) Reset() { C.llama_sampler_reset(s.c) }

// Close frees the chain.
func (s *Sampler) Close() {
	if s != nil && s.c != nil {
		C.llama_sampler_free(s.c)
		s.c = nil
	}
}
