package testmodels

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// ToolScript describes a variant of the scripted tool-calling model (see
// [Script]) that plays a script of the test's choosing: asked anything, it
// thinks Thinking and calls Tool with Arguments; once the conversation
// holds a tool response it answers Answer. It is made for long prompts,
// such as the 25k-45k-token system prompts and tool schemas of coding
// agents: see [ScriptVariant].
type ToolScript struct {
	Name          string // general.name ("" gives ScriptName plus the tool)
	Thinking      string // thought before the call ("" gives ScriptThinking)
	Tool          string // the function called
	Arguments     string // its arguments: a JSON object
	Answer        string // the final answer, words separated by single spaces
	ContextLength int    // llama.context_length (0 gives 65536)
}

// Call is the raw tool call text the variant writes.
func (s ToolScript) Call() string {
	return `<tool_call>{"name": "` + s.Tool + `", "arguments": ` + s.Arguments + `}</tool_call>`
}

// Variant model shape: two heads of agentHeadDim dimensions (attention is
// the only cost that grows with the square of the prompt, so it is kept
// tiny), a rope base so large that the last rotary pair of a head turns by
// less than 1e-14 radians per position (the marker lookup is the same at
// any distance), and output weights agentLogit (the bigram margin is
// agentLogit·sqrt(n_embd) ≈ 48, so even sampling at temperature 1 over
// the large vocabulary never leaves the script).
const (
	agentHeads    = 2
	agentHeadDim  = 8
	agentRopeBase = 1e30
	agentLogit    = 6
	agentQuery    = 2 // query weight: marker scores of 2·n_embd/sqrt(head_dim) ≈ 45
)

// ScriptVariant returns the metadata and tensors of the scripted model
// playing s.
//
// It is [Script]'s construction with two changes for long prompts. Its
// vocabulary adds every letter sequence of up to three letters (lower
// case and capitalised, with and without a leading "▁"), the printable
// ASCII characters and pairs of punctuation, so that English, JSON and
// code tokenize at about 2.3 characters a token instead of one byte
// token a character. Only the tokens the script writes or looks at get a
// dimension of their own; every other token embeds as one shared "filler"
// dimension whose successor is </s>, so the model stays a few MB (F16
// embedding and output matrices) whatever the vocabulary. And its
// attention is two heads of 8 dimensions.
func ScriptVariant(s ToolScript) ([]gguf.KV, []gguf.Tensor, error) {
	if s.Tool == "" || s.Answer == "" || !json.Valid([]byte(s.Arguments)) {
		return nil, nil, fmt.Errorf("scripted model variant: a tool, JSON arguments and an answer are needed")
	}
	if s.Name == "" {
		s.Name = ScriptName + " (" + s.Tool + ")"
	}
	if s.Thinking == "" {
		s.Thinking = ScriptThinking
	}
	if s.ContextLength == 0 {
		s.ContextLength = 65536
	}
	callJSON := `{"name": "` + s.Tool + `", "arguments": ` + s.Arguments + `}`
	used := map[string]bool{}
	think, err := uniquePieces(s.Thinking, used)
	if err != nil {
		return nil, nil, err
	}
	call, err := uniquePieces(callJSON, used)
	if err != nil {
		return nil, nil, err
	}
	answer, err := uniquePieces(s.Answer, used)
	if err != nil {
		return nil, nil, err
	}
	chainCall := append(append(append([]string{"<0x0A>", "<think>"}, think...), thinkEndToken, "<tool_call>"), call...)
	chainCall = append(chainCall, "</tool_call>", ImEndToken)
	chains := [][]string{chainCall, append(answer, ImEndToken)}

	// The active tokens, each with a dimension: the fixed specials and
	// markers, then the chains' tokens; then the filler vocabulary.
	v := newVocab()
	for _, t := range scriptUserTokens {
		v.add(t, 0, tokUserDefined)
	}
	var table [][2]string
	for _, chain := range chains {
		for i := 0; i+1 < len(chain); i++ {
			table = append(table, [2]string{chain[i], chain[i+1]})
		}
	}
	active := map[int]int{} // token id -> dimension
	dim := func(id int) {
		if _, ok := active[id]; !ok {
			active[id] = len(active)
		}
	}
	for _, t := range append([]string{ImEndToken, "<0x0A>"}, scriptUserTokens...) {
		dim(v.id(t))
	}
	for _, e := range table {
		for _, tok := range e {
			if _, ok := v.ids[tok]; !ok {
				v.add(tok, pieceScore(tok), tokNormal) // written, never parsed: no prefixes needed
			}
			dim(v.id(tok))
		}
	}
	next := map[int]int{}
	for _, e := range table {
		if n, ok := next[v.id(e[0])]; ok && n != v.id(e[1]) {
			return nil, nil, fmt.Errorf("scripted model variant: token %q has two successors", e[0])
		}
		next[v.id(e[0])] = v.id(e[1])
	}
	for _, p := range fillerPieces() {
		v.addWord(p)
	}
	nVocab := len(v.tokens)
	filler := len(active)
	featResponse, featThinkOff := filler+1, filler+2
	nEmbd := (featThinkOff + 1 + 63) / 64 * 64
	norm := float32(math.Sqrt(float64(nEmbd)))
	dimOf := func(id int) int {
		if d, ok := active[id]; ok {
			return d
		}
		return filler
	}

	kvs := oneBlockKVs(s.Name, "Deterministic scripted model for tests: thinks, calls "+s.Tool+", then answers from the tool result.",
		nVocab, s.ContextLength, nEmbd, agentRopeBase)
	for i := range kvs {
		switch kvs[i].Key {
		case "llama.attention.head_count", "llama.attention.head_count_kv":
			kvs[i].Value = uint32(agentHeads)
		case "llama.rope.dimension_count":
			kvs[i].Value = uint32(agentHeadDim)
		}
	}
	kvs = append(kvs,
		gguf.KV{Key: "llama.attention.key_length", Value: uint32(agentHeadDim)},
		gguf.KV{Key: "llama.attention.value_length", Value: uint32(agentHeadDim)})
	for _, kv := range v.kvs() {
		if kv.Key == "tokenizer.chat_template" {
			kv.Value = Qwen3Template
		}
		kvs = append(kvs, kv)
	}

	mat := func(rows, cols int) []float32 { return make([]float32, rows*cols) }
	embd := mat(nVocab, nEmbd)
	for id := range nVocab {
		embd[id*nEmbd+dimOf(id)] = 1
	}
	// Output rows are per token; a dimension's successor is the same for
	// all its tokens (the filler's is </s>).
	outRows := mat(nVocab, nEmbd)
	for id, d := range active {
		n, ok := next[id]
		if !ok {
			n = EOSID
		}
		outRows[n*nEmbd+d] = agentLogit
	}
	outRows[EOSID*nEmbd+filler] = agentLogit
	outRows[v.id(answer[0])*nEmbd+featResponse] = 4 * agentLogit
	outRows[v.id("<tool_call>")*nEmbd+featThinkOff] = 2 * agentLogit

	// Attention: head 0 finds "<tool_response>", head 1 "</think>", both
	// from the newline, on the last rotary pair of the head.
	qkv := agentHeads * agentHeadDim
	wq, wk, wv, wo := mat(qkv, nEmbd), mat(qkv, nEmbd), mat(qkv, nEmbd), mat(nEmbd, qkv)
	newline := active[v.id("<0x0A>")]
	for h, marker := range []struct {
		token string
		feat  int
	}{{toolResponseToken, featResponse}, {thinkEndToken, featThinkOff}} {
		qk := h*agentHeadDim + agentHeadDim - 2
		val := h * agentHeadDim
		m := active[v.id(marker.token)]
		wq[qk*nEmbd+newline] = agentQuery
		wk[qk*nEmbd+m] = 1
		wv[val*nEmbd+m] = 1
		wo[marker.feat*qkv+val] = 1 / norm
	}

	e := uint64(nEmbd)
	tensor := func(name string, rows, cols int, vals []float32, typ gguf.TensorType) gguf.Tensor {
		return gguf.Tensor{Name: name, Dims: []uint64{uint64(cols), uint64(rows)}, Type: typ, Data: encodeF32(vals, typ)}
	}
	ones := func(name string) gguf.Tensor {
		return gguf.Tensor{Name: name, Dims: []uint64{e}, Type: gguf.F32, Data: constF32(nEmbd, 1)}
	}
	tensors := []gguf.Tensor{
		tensor("token_embd.weight", nVocab, nEmbd, embd, gguf.F16),
		ones("blk.0.attn_norm.weight"),
		tensor("blk.0.attn_q.weight", qkv, nEmbd, wq, gguf.F32),
		tensor("blk.0.attn_k.weight", qkv, nEmbd, wk, gguf.F32),
		tensor("blk.0.attn_v.weight", qkv, nEmbd, wv, gguf.F32),
		tensor("blk.0.attn_output.weight", nEmbd, qkv, wo, gguf.F32),
		ones("blk.0.ffn_norm.weight"),
		tensor("blk.0.ffn_gate.weight", bigramFF, nEmbd, mat(bigramFF, nEmbd), gguf.F32),
		tensor("blk.0.ffn_up.weight", bigramFF, nEmbd, mat(bigramFF, nEmbd), gguf.F32),
		tensor("blk.0.ffn_down.weight", nEmbd, bigramFF, mat(nEmbd, bigramFF), gguf.F32),
		ones("output_norm.weight"),
		tensor("output.weight", nVocab, nEmbd, outRows, gguf.F16),
	}
	return kvs, tensors, nil
}

// WriteScriptVariant writes the scripted model playing s to path.
func WriteScriptVariant(path string, s ToolScript) error {
	kvs, tensors, err := ScriptVariant(s)
	if err != nil {
		return err
	}
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write scripted model variant: %w", err)
	}
	return nil
}

// uniquePieces splits text at spaces into SentencePiece pieces ("▁" for
// the space before a word), joining a piece with the next ones while it
// is already in used, so that every token of every chain is distinct (a
// bigram has one successor per token).
func uniquePieces(text string, used map[string]bool) ([]string, error) {
	words := strings.Split(text, " ")
	var out []string
	for i := 0; i < len(words); i++ {
		p := words[i]
		if i > 0 {
			p = spaceMark + p
		}
		for used[p] || p == "" || p == spaceMark {
			if i+1 >= len(words) {
				return nil, fmt.Errorf("scripted model variant: %q has no distinct split into tokens", text)
			}
			i++
			p += spaceMark + words[i]
		}
		used[p] = true
		out = append(out, p)
	}
	return out, nil
}

// fillerPieces is the variant's extra vocabulary: printable ASCII
// characters, pairs of punctuation, and letter sequences of one to three
// letters, lower case and capitalised, each with and without "▁".
func fillerPieces() []string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	const punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
	var out []string
	for c := '!'; c <= '~'; c++ {
		out = append(out, string(c), spaceMark+string(c))
	}
	for _, a := range punct + spaceMark {
		for _, b := range punct + spaceMark {
			out = append(out, string(a)+string(b))
		}
	}
	level := []string{""}
	for range 3 {
		var grown []string
		for _, p := range level {
			for _, c := range letters {
				w := p + string(c)
				grown = append(grown, w)
				out = append(out, w, spaceMark+w, strings.ToUpper(w[:1])+w[1:], spaceMark+strings.ToUpper(w[:1])+w[1:])
			}
		}
		level = grown
	}
	return out
}
