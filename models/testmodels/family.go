package testmodels

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// FamilyScript describes a scripted model of one model family (issue
// 35): its vocabulary holds the family's special tokens, its chat
// template is the family's real one (read by the test from the engine's
// llama.cpp tree, never copied here), and it says a fixed answer in the
// family's syntax. Asked anything, it writes Turn1 (reasoning, then a
// tool call); once the prompt holds ToolResultMarker (the template
// writes it only for a tool result) it writes Turn2 (the final answer).
//
// Turn1 and Turn2 are the answers' tokens: a piece that is one of
// Specials is that control token, one of UserTokens that token, Trigger
// and ToolResultMarker are user-defined tokens (they tokenize whole wherever they appear), a
// "<0xNN>" piece is that byte, and any other piece is an ordinary token
// whose spaces are SentencePiece's "▁". A token may come back in an
// answer (gpt-oss writes <|channel|> and <|message|> twice before its
// call): the model tells the occurrences apart by an ordinary piece
// written once between them, which FamilyScript picks itself (see
// [FamilyScriptModel]).
type FamilyScript struct {
	Name     string   // general.name
	Template string   // tokenizer.chat_template: the family's template
	Specials []string // the family's control tokens (EOG ones by llama.cpp's rules)
	// UserTokens are the family's added tokens that print (user-defined:
	// Qwen's <think> and <tool_call>).
	UserTokens []string
	// Trigger is the last token of the template's generation prompt
	// (gpt-oss: "assistant" of "<|start|>assistant"; "<0x0A>" for a
	// prompt ending in a newline).
	Trigger string
	// Trigger2 is the last token of the prompt after a tool result where
	// the template writes no generation prompt there ("" is Trigger).
	Trigger2         string
	Turn1, Turn2     []string // the answers' pieces
	ToolResultMarker string   // text the prompt holds only after a tool result
	ContextLength    int      // llama.context_length (0 gives 8192)
}

// FamilyScriptModel returns the metadata and tensors of the scripted
// model s describes: [ScriptVariant]'s construction (a bigram table over
// one-hot embeddings, one attention layer noticing marker tokens, the
// filler vocabulary) with the rules worked out from the answers.
//
// Each token of the answers has a stage: Turn1's stage counts the
// markers written before it, Turn2's is above all of those (the tool
// result marker starts it). A token's successor depends on its stage
// only where the token comes back with another successor; then an
// attention head from that token looks for the stage's marker and adds
// a logit of 2^rank (the later stage the larger) to the stage's
// successor, beating the bigram's own successor and every earlier stage.
// Markers are chosen where needed: the latest ordinary piece written
// once in both answers between two occurrences that disagree.
func FamilyScriptModel(s FamilyScript) ([]gguf.KV, []gguf.Tensor, error) {
	if s.Template == "" || s.Trigger == "" || s.ToolResultMarker == "" || len(s.Turn1) == 0 || len(s.Turn2) == 0 {
		return nil, nil, fmt.Errorf("family scripted model: a template, a trigger, a tool result marker and both answers are needed")
	}
	if s.ContextLength == 0 {
		s.ContextLength = 8192
	}
	special := map[string]bool{}
	for _, t := range append(append([]string(nil), s.Specials...), s.UserTokens...) {
		special[t] = true
	}
	structural := func(tok string) bool {
		return special[tok] || tok == s.Trigger || tok == s.Trigger2 || tok == s.ToolResultMarker || isByteToken(tok)
	}
	tok := func(piece string) string {
		if structural(piece) {
			return piece
		}
		return strings.ReplaceAll(piece, " ", spaceMark)
	}
	if s.Trigger2 == "" {
		s.Trigger2 = s.Trigger
	}
	chains := [2][]string{{s.Trigger}, {s.Trigger2}}
	for i, turn := range [][]string{s.Turn1, s.Turn2} {
		for _, p := range turn {
			if p == "" {
				return nil, nil, fmt.Errorf("family scripted model: an empty piece")
			}
			chains[i] = append(chains[i], tok(p))
		}
	}
	count := map[string]int{}
	for _, c := range chains {
		for _, t := range c[1:] {
			count[t]++
		}
	}
	eligible := func(t string) bool { return !structural(t) && count[t] == 1 }

	// Markers by chain (indices), added until no token's successor is
	// ambiguous within a stage.
	var marks [2][]int
	stage := func(c, i int) int {
		n := 0
		for _, m := range marks[c] {
			if m <= i {
				n++
			}
		}
		if c == 1 {
			return len(marks[0]) + 1 + n
		}
		return n
	}
	type at struct{ c, i int }
	var entries map[string]map[int]at
	for {
		entries = map[string]map[int]at{}
		conflict := false
		for c, chain := range chains {
			for i := 0; i+1 < len(chain) && !conflict; i++ {
				t, st := chain[i], stage(c, i)
				if entries[t] == nil {
					entries[t] = map[int]at{}
				}
				prev, seen := entries[t][st]
				if !seen {
					entries[t][st] = at{c, i}
					continue
				}
				if chains[prev.c][prev.i+1] == chain[i+1] {
					continue
				}
				conflict = true
				m := -1
				for j := i - 1; j > prev.i && prev.c == c; j-- {
					if eligible(chain[j]) {
						m = j
						break
					}
				}
				if m < 0 {
					return nil, nil, fmt.Errorf("family scripted model: %q is followed by %q and by %q with no piece written once between them to tell them apart", t, chains[prev.c][prev.i+1], chain[i+1])
				}
				marks[c] = append(marks[c], m)
				sort.Ints(marks[c])
			}
			if conflict {
				break
			}
		}
		if !conflict {
			break
		}
	}
	markerOf := func(st int) string {
		switch k := len(marks[0]); {
		case st <= k:
			return chains[0][marks[0][st-1]]
		case st == k+1:
			return s.ToolResultMarker
		default:
			return chains[1][marks[1][st-k-2]]
		}
	}

	v := newVocab()
	for _, t := range s.Specials {
		v.add(t, 0, tokControl)
	}
	for _, t := range append([]string{s.Trigger, s.Trigger2, s.ToolResultMarker}, s.UserTokens...) {
		if !isByteToken(t) {
			v.add(t, 0, tokUserDefined)
		}
	}
	var table [][2]string
	var rules []scriptRule
	toks := make([]string, 0, len(entries))
	for t := range entries {
		toks = append(toks, t)
	}
	sort.Strings(toks)
	for _, t := range toks {
		var stages []int
		for st := range entries[t] {
			stages = append(stages, st)
		}
		sort.Ints(stages)
		next := func(st int) string { e := entries[t][st]; return chains[e.c][e.i+1] }
		table = append(table, [2]string{t, next(stages[0])})
		same := true
		for _, st := range stages[1:] {
			same = same && next(st) == next(stages[0])
		}
		if same {
			continue
		}
		for _, st := range stages[1:] {
			rules = append(rules, scriptRule{token: t, marker: markerOf(st), next: next(st), weight: float32(math.Exp2(float64(st)))})
		}
	}
	return buildScripted(scriptPlan{
		name:          s.Name,
		description:   "Deterministic scripted model of a model family's chat format for tests: reasons, calls a tool, then answers from the tool result.",
		vocab:         v,
		template:      s.Template,
		fixed:         []string{s.Trigger, s.Trigger2, s.ToolResultMarker},
		table:         table,
		rules:         rules,
		contextLength: s.ContextLength,
	})
}

// WriteFamilyScript writes the scripted model s describes to path.
func WriteFamilyScript(path string, s FamilyScript) error {
	kvs, tensors, err := FamilyScriptModel(s)
	if err != nil {
		return err
	}
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write family scripted model: %w", err)
	}
	return nil
}

func isByteToken(t string) bool {
	return len(t) == 6 && strings.HasPrefix(t, "<0x") && strings.HasSuffix(t, ">")
}

// scriptRule is one attention head of a scripted model: from token, it
// looks for marker anywhere in the context and, when it is there, adds
// weight times the bigram logit to next.
type scriptRule struct {
	token, marker, next string
	weight              float32
}

// scriptPlan is what a scripted model is built from.
type scriptPlan struct {
	name, description string
	vocab             *vocab // the specials and markers so far; the table's pieces and the filler are added
	template          string
	spacePrefix       bool        // tokenizer.ggml.add_space_prefix
	fixed             []string    // tokens given a dimension first (in this order)
	table             [][2]string // bigram successors; the last token of a chain goes to </s>
	rules             []scriptRule
	contextLength     int
}

// buildScripted builds a scripted model (see [ScriptVariant]).
func buildScripted(p scriptPlan) ([]gguf.KV, []gguf.Tensor, error) {
	v := p.vocab
	active := map[int]int{} // token id -> dimension
	dim := func(id int) {
		if _, ok := active[id]; !ok {
			active[id] = len(active)
		}
	}
	for _, t := range p.fixed {
		dim(v.id(t))
	}
	for _, e := range p.table {
		for _, tok := range e {
			if _, ok := v.ids[tok]; !ok {
				v.add(tok, pieceScore(tok), tokNormal) // written, never parsed: no prefixes needed
			}
			dim(v.id(tok))
		}
	}
	for _, r := range p.rules {
		for _, tok := range []string{r.token, r.marker, r.next} {
			if _, ok := v.ids[tok]; !ok {
				v.add(tok, pieceScore(tok), tokNormal)
			}
			dim(v.id(tok))
		}
	}
	next := map[int]int{}
	for _, e := range p.table {
		if n, ok := next[v.id(e[0])]; ok && n != v.id(e[1]) {
			return nil, nil, fmt.Errorf("scripted model: token %q has two successors", e[0])
		}
		next[v.id(e[0])] = v.id(e[1])
	}
	for _, piece := range fillerPieces() {
		v.addWord(piece)
	}
	nVocab := len(v.tokens)
	filler := len(active)
	heads := max(len(p.rules), 1)
	nEmbd := (filler + 1 + len(p.rules) + 63) / 64 * 64
	norm := float32(math.Sqrt(float64(nEmbd)))
	dimOf := func(id int) int {
		if d, ok := active[id]; ok {
			return d
		}
		return filler
	}

	kvs := oneBlockKVs(p.name, p.description, nVocab, p.contextLength, nEmbd, agentRopeBase)
	for i := range kvs {
		switch kvs[i].Key {
		case "llama.attention.head_count", "llama.attention.head_count_kv":
			kvs[i].Value = uint32(heads)
		case "llama.rope.dimension_count":
			kvs[i].Value = uint32(agentHeadDim)
		}
	}
	kvs = append(kvs,
		gguf.KV{Key: "llama.attention.key_length", Value: uint32(agentHeadDim)},
		gguf.KV{Key: "llama.attention.value_length", Value: uint32(agentHeadDim)})
	for _, kv := range v.kvs() {
		switch kv.Key {
		case "tokenizer.chat_template":
			kv.Value = p.template
		case "tokenizer.ggml.add_space_prefix":
			kv.Value = p.spacePrefix
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

	// Attention: head h queries from its rule's token and keys on its
	// marker, on the last rotary pair of the head; its value writes the
	// rule's feature, which the output turns into the rule's logit.
	qkv := heads * agentHeadDim
	wq, wk, wv, wo := mat(qkv, nEmbd), mat(qkv, nEmbd), mat(qkv, nEmbd), mat(nEmbd, qkv)
	for h, r := range p.rules {
		feat := filler + 1 + h
		outRows[v.id(r.next)*nEmbd+feat] = r.weight * agentLogit
		qk := h*agentHeadDim + agentHeadDim - 2
		val := h * agentHeadDim
		m := active[v.id(r.marker)]
		wq[qk*nEmbd+active[v.id(r.token)]] = agentQuery
		wk[qk*nEmbd+m] = 1
		wv[val*nEmbd+m] = 1
		wo[feat*qkv+val] = 1 / norm
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
