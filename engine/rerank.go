package engine

// #include "llama.h"
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// llama.cpp's LLAMA_POOLING_TYPE_RANK as GGUF stores it in
// <arch>.pooling_type.
const poolingTypeRank = 4

// RerankError says why a model cannot score query/document pairs, or is
// nil for a reranker: a model whose GGUF declares rank pooling
// (<arch>.pooling_type 4, as convert_hf_to_gguf writes for BGE, Jina and
// Qwen3 rerankers) and carries a classification output head
// (cls.output.weight). It reads only the GGUF header, so the API layer
// can ask before loading the model.
//
// The head is required because of what llama.cpp b7437 does without it
// (src/llama-graph.cpp build_pooling, src/llama-context.cpp decode): rank
// pooling then yields the pooled hidden state (n_embd floats per sequence)
// while the scores are read as n_cls_out floats at offset
// n_cls_out*seq_idx, so every sequence but the first gets another
// sequence's number, and with more classifier labels than n_embd the read
// runs past the tensor and ggml asserts (the process aborts); newer
// llama.cpp aborts at graph build. A loaded model holds every tensor of its
// file (llama.cpp refuses a file with tensors its architecture does not
// use), so a present cls.output.weight is a head llama.cpp applies, of
// the n_cls_out its load checked.
func RerankError(f *gguf.File) error {
	if f == nil {
		return fmt.Errorf("no model metadata")
	}
	pt, ok := f.ArchUint("pooling_type")
	if !ok || pt != poolingTypeRank {
		return fmt.Errorf("it is not a reranker (its %s.pooling_type is not rank)", f.Architecture())
	}
	if _, ok := f.Tensor("cls.output.weight"); !ok {
		return fmt.Errorf("it declares rank pooling but has no classifier head (cls.output.weight)")
	}
	return nil
}

// IsReranker reports whether the model scores query/document pairs (see
// RerankError).
func (m *Model) IsReranker() bool { return m.RerankError() == nil }

// RerankError is RerankError of the model's file, and checks that its
// loaded head has outputs.
func (m *Model) RerankError() error {
	if err := RerankError(m.GGUF); err != nil {
		return err
	}
	if C.llama_model_n_cls_out(m.c) < 1 {
		return fmt.Errorf("its classifier head has no outputs")
	}
	return nil
}

// AddEOS reports whether the vocabulary appends EOS to a tokenized text.
func (m *Model) AddEOS() bool { return bool(C.llama_vocab_get_add_eos(m.vocab)) }

// AddSEP reports whether the vocabulary puts SEP between two texts.
func (m *Model) AddSEP() bool { return bool(C.llama_vocab_get_add_sep(m.vocab)) }

// SEP is the separator token, or -1 when the vocabulary has none.
func (m *Model) SEP() Token { return Token(C.llama_vocab_sep(m.vocab)) }

// RankScore is a sequence's relevance score after a Decode on a context
// with rank pooling: the first of the classifier head's n_cls_out outputs
// (as llama-server's /rerank reads it), unnormalised.
func (c *Context) RankScore(seq int) (float32, error) {
	if C.llama_pooling_type(c.c) != C.LLAMA_POOLING_TYPE_RANK {
		return 0, fmt.Errorf("the context does not rank (its pooling is not rank)")
	}
	p := C.llama_get_embeddings_seq(c.c, C.llama_seq_id(seq))
	if p == nil {
		return 0, fmt.Errorf("no score for sequence %d", seq)
	}
	return *(*float32)(unsafe.Pointer(p)), nil
}

// Ranks reports whether the context pools with rank pooling.
func (c *Context) Ranks() bool { return C.llama_pooling_type(c.c) == C.LLAMA_POOLING_TYPE_RANK }

// RerankTokens is the token sequence the model scores for a query and a
// document, built as llama-server builds it (tools/server
// format_prompt_rerank): the model's tokenizer.chat_template.rerank with
// {query} and {document} replaced, tokenized with special tokens parsed;
// without one, [BOS] query [EOS] [SEP] document [EOS], each special token
// where the vocabulary adds it (EOS falls back to SEP).
func (m *Model) RerankTokens(query, doc string) ([]Token, error) {
	if tmpl, ok := m.Meta.ChatTemplates["rerank"]; ok && tmpl != "" {
		prompt := strings.ReplaceAll(tmpl, "{query}", query)
		prompt = strings.ReplaceAll(prompt, "{document}", doc)
		return m.Tokenize(prompt, false, true)
	}
	q, err := m.Tokenize(query, false, false)
	if err != nil {
		return nil, err
	}
	d, err := m.Tokenize(doc, false, false)
	if err != nil {
		return nil, err
	}
	eos := m.EOS()
	if eos < 0 {
		eos = m.SEP()
	}
	out := make([]Token, 0, len(q)+len(d)+4)
	add := func(t Token, on bool) {
		if on && t >= 0 {
			out = append(out, t)
		}
	}
	add(m.BOS(), m.AddBOS())
	out = append(out, q...)
	add(eos, m.AddEOS())
	add(m.SEP(), m.AddSEP())
	out = append(out, d...)
	add(eos, m.AddEOS())
	return out, nil
}
