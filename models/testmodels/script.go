package testmodels

import (
	_ "embed"
	"fmt"
	"math"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// The scripted tool-calling model's known behaviour (see the package
// documentation). Its chat template is Qwen3's, so it is a Hermes-format
// ("<tool_call>…</tool_call>") tool caller and a "<think>" thinking model.
const (
	// ScriptName is the scripted model's general.name.
	ScriptName = "Tadpole scripted tool-calling test model"
	// ScriptTool and ScriptArguments are the call the model makes.
	ScriptTool      = "get_weather"
	ScriptArguments = `{"city": "Paris"}`
	// ScriptThinking is what the model thinks before the call when
	// thinking is not switched off.
	ScriptThinking = "I need the weather."
	// ScriptCall is the raw tool call text the model writes.
	ScriptCall = `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`
	// ScriptAnswer is the model's answer once a tool result is in the
	// conversation.
	ScriptAnswer = "It is sunny in Paris."
	// ScriptContextLength is the model's llama.context_length.
	ScriptContextLength = 4096
)

// Qwen3Template is Qwen3's chat template (Qwen/Qwen3-0.6B's
// tokenizer_config.json, as llama.cpp's models/templates keeps it; see
// templates/NOTICE): the scripted model's tokenizer.chat_template.
//
//go:embed templates/qwen3.jinja
var Qwen3Template string

// Marker tokens the scripted model's attention looks for, and the other
// whole-text tokens of its vocabulary (USER_DEFINED, like Qwen's own: they
// tokenize whole and are written out as text).
const (
	toolResponseToken = "<tool_response>"
	thinkEndToken     = "</think>"
)

var scriptUserTokens = []string{"<think>", thinkEndToken, "<tool_call>", "</tool_call>", toolResponseToken, "</tool_response>"}

// scriptChains are the model's two answers: the first after the newline
// ending the generation prompt with no marker in the context, the second
// after it with a tool response in the context. With thinking switched
// off ("</think>" already in the prompt) the first chain starts at
// "<tool_call>".
var scriptChains = [][]string{
	{"<0x0A>", "<think>", "I", "▁need", "▁the", "▁weather.", thinkEndToken,
		"<tool_call>", `{"name":`, `▁"get_weather",`, `▁"arguments":`, `▁{"city":`, `▁"Paris"}}`, "</tool_call>", ImEndToken},
	{"It", "▁is", "▁sunny", "▁in", "▁Paris.", ImEndToken},
}

// scriptTokenType is tokenizer.ggml.token_type's USER_DEFINED.
const tokUserDefined int32 = 4

// Script returns the metadata and tensors of the scripted tool-calling
// model, for writing with gguf.Write.
//
// It is the bigram construction (one-hot embeddings, an output matrix
// mapping each token to its successor) plus one attention layer that
// notices two marker tokens anywhere in the context. Heads 0 and 1 query
// only from the newline token and their keys are non-zero only on
// "<tool_response>" (head 0) and "</think>" (head 1), with scores of about
// 40, so at the final newline each head puts practically all its weight
// on its marker if the marker is there (and spreads it over values that
// are zero otherwise). The heads' values write a unit feature into two
// spare residual dimensions, which the output matrix turns into a logit
// for "It" (tool response seen: 4×) or "<tool_call>" (thinking off: 2×),
// beating the newline's own successor "<think>" (1×). Queries and keys use
// the last rotary pair of their head with a rope base of 1e6, so position
// barely matters (cos ≥ 0.999 over the whole context). At other positions
// the query is zero, attention is uniform and the features leak at most
// 1/n of their value: far below the bigram margin once a prompt has a few
// tokens.
func Script() ([]gguf.KV, []gguf.Tensor) {
	v := newVocab()
	for _, t := range scriptUserTokens {
		v.add(t, 0, tokUserDefined)
	}
	var table [][2]string
	for _, chain := range scriptChains {
		for i := 0; i+1 < len(chain); i++ {
			table = append(table, [2]string{chain[i], chain[i+1]})
		}
	}
	next := v.successors(table)
	nVocab := len(v.tokens)
	nEmbd := (nVocab + 2 + 63) / 64 * 64 // one-hot tokens plus two features
	headDim := nEmbd / bigramHeads
	featResponse, featThinkOff := nVocab, nVocab+1
	s := float32(math.Sqrt(float64(nEmbd))) // RMS norm of a one-hot vector

	kvs := oneBlockKVs(ScriptName, "Deterministic scripted model for tests: thinks, calls get_weather, then answers from the tool result.",
		nVocab, ScriptContextLength, nEmbd, 1e6)
	for _, kv := range v.kvs() {
		if kv.Key == "tokenizer.chat_template" {
			kv.Value = Qwen3Template
		}
		kvs = append(kvs, kv)
	}

	mat := func(rows, cols int) []float32 { return make([]float32, rows*cols) }
	embd, out := mat(nVocab, nEmbd), mat(nVocab, nEmbd)
	for i := range nVocab {
		embd[i*nEmbd+i] = 1
		n, ok := next[i]
		if !ok {
			n = EOSID
		}
		out[n*nEmbd+i] = bigramLogit
	}
	out[v.id("It")*nEmbd+featResponse] = 4
	out[v.id("<tool_call>")*nEmbd+featThinkOff] = 2

	// Attention: q·k = 1·1·s² / sqrt(headDim) ≈ 40 for a marker.
	wq, wk, wv, wo := mat(nEmbd, nEmbd), mat(nEmbd, nEmbd), mat(nEmbd, nEmbd), mat(nEmbd, nEmbd)
	newline := v.id("<0x0A>")
	for h, marker := range []struct {
		token string
		feat  int
	}{{toolResponseToken, featResponse}, {thinkEndToken, featThinkOff}} {
		qk := h*headDim + headDim - 2 // last rotary pair: hardly rotated
		val := h * headDim
		wq[qk*nEmbd+newline] = 1
		wk[qk*nEmbd+v.id(marker.token)] = 1
		wv[val*nEmbd+v.id(marker.token)] = 1
		wo[marker.feat*nEmbd+val] = 1 / s
	}

	e := uint64(nEmbd)
	tensor := func(name string, rows, cols int, vals []float32) gguf.Tensor {
		return gguf.Tensor{Name: name, Dims: []uint64{uint64(cols), uint64(rows)}, Type: gguf.F32, Data: encodeF32(vals, gguf.F32)}
	}
	ones := func(name string) gguf.Tensor {
		return gguf.Tensor{Name: name, Dims: []uint64{e}, Type: gguf.F32, Data: constF32(nEmbd, 1)}
	}
	tensors := []gguf.Tensor{
		tensor("token_embd.weight", nVocab, nEmbd, embd),
		ones("blk.0.attn_norm.weight"),
		tensor("blk.0.attn_q.weight", nEmbd, nEmbd, wq),
		tensor("blk.0.attn_k.weight", nEmbd, nEmbd, wk),
		tensor("blk.0.attn_v.weight", nEmbd, nEmbd, wv),
		tensor("blk.0.attn_output.weight", nEmbd, nEmbd, wo),
		ones("blk.0.ffn_norm.weight"),
		tensor("blk.0.ffn_gate.weight", bigramFF, nEmbd, mat(bigramFF, nEmbd)),
		tensor("blk.0.ffn_up.weight", bigramFF, nEmbd, mat(bigramFF, nEmbd)),
		tensor("blk.0.ffn_down.weight", nEmbd, bigramFF, mat(nEmbd, bigramFF)),
		ones("output_norm.weight"),
		tensor("output.weight", nVocab, nEmbd, out),
	}
	return kvs, tensors
}

// WriteScript writes the scripted tool-calling model to path.
func WriteScript(path string) error {
	kvs, tensors := Script()
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write scripted model: %w", err)
	}
	return nil
}
