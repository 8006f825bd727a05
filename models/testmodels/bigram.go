package testmodels

import (
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// The bigram model's known greedy answers. A prompt's answer depends only
// on its last token (see the package documentation).
const (
	// BigramName is the bigram model's general.name.
	BigramName = "Tadpole bigram test model"

	// BigramChatPrompt is the ChatML rendering of one user message "Hi"
	// with the generation prompt, as the model's chat template gives it.
	// Any prompt ending in "<|im_start|>assistant\n" (or any newline) is
	// answered with BigramAnswer.
	BigramChatPrompt = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	// BigramAnswer follows a newline: the answer to every chat. Generation
	// then ends with <|im_end|> (an end-of-generation token).
	BigramAnswer = "Hello from Tadpole."

	// CountPrompt is continued with CountAnswer, then </s> (EOS).
	CountPrompt = "one"
	CountAnswer = " two three four five six seven eight nine ten"

	// HelloPrompt is continued with HelloAnswer, then <|im_end|>.
	HelloPrompt = "Hello"
	HelloAnswer = " from Tadpole."

	// ColorPrompt is continued with ColorAnswer, then </s>.
	ColorPrompt = "red"
	ColorAnswer = " green blue"

	// LoopPrompt never ends: it is continued with " pong ping pong ..."
	// until the token limit (see LoopAnswer). For tests of limits,
	// streaming and cancellation.
	LoopPrompt = "ping"

	// BigramContextLength is the model's llama.context_length.
	BigramContextLength = 512
)

// LoopAnswer is the text of the first n tokens generated after LoopPrompt.
func LoopAnswer(n int) string {
	var b strings.Builder
	for i := range n {
		if i%2 == 0 {
			b.WriteString(" pong")
		} else {
			b.WriteString(" ping")
		}
	}
	return b.String()
}

// bigramTable lists next(token) for the tokens that do not map to </s>.
var bigramTable = [][2]string{
	{"<0x0A>", "Hello"}, // a newline, e.g. the end of "<|im_start|>assistant\n"
	{"Hello", "▁from"},
	{"▁Hello", "▁from"},
	{"▁from", "▁Tadpole"},
	{"▁Tadpole", "."},
	{".", ImEndToken},
	{"▁one", "▁two"},
	{"▁two", "▁three"},
	{"▁three", "▁four"},
	{"▁four", "▁five"},
	{"▁five", "▁six"},
	{"▁six", "▁seven"},
	{"▁seven", "▁eight"},
	{"▁eight", "▁nine"},
	{"▁nine", "▁ten"},
	{"▁ten", EOSToken},
	{"▁red", "▁green"},
	{"▁green", "▁blue"},
	{"▁blue", EOSToken},
	{"▁ping", "▁pong"},
	{"▁pong", "▁ping"},
}

// bigramExtraWords are in the vocabulary so that chat prompts tokenize
// into whole words; they map to </s>.
var bigramExtraWords = []string{"▁user", "▁assistant", "▁system", "Hi", "▁Hi"}

// Bigram model hyperparameters.
const (
	bigramHeads = 4
	bigramFF    = 64
	bigramLogit = 1 // output weight; times the RMS-normed one-hot sqrt(n_embd) ≈ 19
)

// bigramVocab builds the vocabulary and the next-token map.
func bigramVocab() (*vocab, map[int]int) {
	v := newVocab()
	for _, w := range bigramExtraWords {
		v.addWord(w)
	}
	return v, v.successors(bigramTable)
}

// successors adds the tokens of a next-token table (those not in the
// vocabulary yet, as words) and returns it by token id.
func (v *vocab) successors(table [][2]string) map[int]int {
	for _, e := range table {
		for _, tok := range e {
			if _, ok := v.ids[tok]; !ok {
				v.addWord(tok)
			}
		}
	}
	next := map[int]int{}
	for _, e := range table {
		next[v.id(e[0])] = v.id(e[1])
	}
	return next
}

// BigramTokens is the bigram model's vocabulary (tokenizer.ggml.tokens).
func BigramTokens() []string {
	v, _ := bigramVocab()
	return v.tokens
}

// Bigram returns the metadata and tensors of the bigram model (see the
// package documentation), for writing with gguf.Write.
func Bigram() ([]gguf.KV, []gguf.Tensor) {
	return bigramOf(1, 0, bigramFF, gguf.F32)
}

// BigramHeavy is the bigram model made as costly as a real one without
// changing a single answer: blocks blocks 1024 wide with feed-forward
// width 2816 (about 12.6 million F16 weights each), whose attention and
// feed-forward outputs are zero, so that the residual stream is the
// token's one-hot embedding as in Bigram. Decoding reads every weight,
// as a model of that size does; for benchmarks of speculative decoding,
// where the scripted answers make drafts predictable.
func BigramHeavy(blocks int) ([]gguf.KV, []gguf.Tensor) {
	return bigramOf(blocks, 1024, 2816, gguf.F16)
}

// WriteBigramHeavy writes BigramHeavy(blocks) to path.
func WriteBigramHeavy(path string, blocks int) error {
	kvs, tensors := BigramHeavy(blocks)
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write heavy bigram model: %w", err)
	}
	return nil
}

// bigramOf is the bigram model with blocks blocks of width width (0: the
// vocabulary rounded up to 64) and feed-forward width ff, block weights
// of type typ.
func bigramOf(blocks, width, ff int, typ gguf.TensorType) ([]gguf.KV, []gguf.Tensor) {
	v, next := bigramVocab()
	nVocab := len(v.tokens)
	nEmbd := (nVocab + 63) / 64 * 64 // >= nVocab, so one-hot embeddings fit
	nEmbd = max(nEmbd, width)

	kvs := oneBlockKVs(BigramName, "Deterministic bigram model for tests: greedy output depends only on the last token.",
		nVocab, BigramContextLength, nEmbd, 10000)
	for i := range kvs {
		switch kvs[i].Key {
		case "llama.block_count":
			kvs[i].Value = uint32(blocks)
		case "llama.feed_forward_length":
			kvs[i].Value = uint32(ff)
		}
	}
	kvs = append(kvs, v.kvs()...)

	e := uint64(nEmbd)
	embd := make([]float32, nVocab*nEmbd)
	out := make([]float32, nVocab*nEmbd)
	for i := range nVocab {
		embd[i*nEmbd+i] = 1
		n, ok := next[i]
		if !ok {
			n = EOSID
		}
		out[n*nEmbd+i] = bigramLogit
	}
	random := func(name string, rows, cols int) gguf.Tensor {
		r := tensorRNG(1, name)
		vals := make([]float32, rows*cols)
		for i := range vals {
			vals[i] = 0.05 * r.uniform()
		}
		return gguf.Tensor{Name: name, Dims: []uint64{uint64(cols), uint64(rows)}, Type: typ, Data: encodeF32(vals, typ)}
	}
	zeros := func(name string, rows, cols int) gguf.Tensor {
		return gguf.Tensor{Name: name, Dims: []uint64{uint64(cols), uint64(rows)}, Type: typ, Data: encodeF32(make([]float32, rows*cols), typ)}
	}
	ones := func(name string) gguf.Tensor {
		return gguf.Tensor{Name: name, Dims: []uint64{e}, Type: gguf.F32, Data: constF32(nEmbd, 1)}
	}
	tensors := []gguf.Tensor{
		{Name: "token_embd.weight", Dims: []uint64{e, uint64(nVocab)}, Type: gguf.F32, Data: encodeF32(embd, gguf.F32)},
	}
	for b := range blocks {
		p := fmt.Sprintf("blk.%d.", b)
		tensors = append(tensors,
			ones(p+"attn_norm.weight"),
			random(p+"attn_q.weight", nEmbd, nEmbd),
			random(p+"attn_k.weight", nEmbd, nEmbd),
			random(p+"attn_v.weight", nEmbd, nEmbd),
			zeros(p+"attn_output.weight", nEmbd, nEmbd),
			ones(p+"ffn_norm.weight"),
			random(p+"ffn_gate.weight", ff, nEmbd),
			random(p+"ffn_up.weight", ff, nEmbd),
			zeros(p+"ffn_down.weight", nEmbd, ff),
		)
	}
	tensors = append(tensors,
		ones("output_norm.weight"),
		gguf.Tensor{Name: "output.weight", Dims: []uint64{e, uint64(nVocab)}, Type: gguf.F32, Data: encodeF32(out, gguf.F32)},
	)
	return kvs, tensors
}

// oneBlockKVs is the llama metadata of a one-block F32 model with
// bigramHeads heads of nEmbd/bigramHeads dimensions, all rotary.
func oneBlockKVs(name, desc string, nVocab, ctxLen, nEmbd int, ropeBase float32) []gguf.KV {
	return []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: name},
		{Key: "general.description", Value: desc},
		{Key: "general.file_type", Value: uint32(gguf.FileTypeF32)},
		{Key: "llama.vocab_size", Value: uint32(nVocab)},
		{Key: "llama.context_length", Value: uint32(ctxLen)},
		{Key: "llama.embedding_length", Value: uint32(nEmbd)},
		{Key: "llama.block_count", Value: uint32(1)},
		{Key: "llama.feed_forward_length", Value: uint32(bigramFF)},
		{Key: "llama.attention.head_count", Value: uint32(bigramHeads)},
		{Key: "llama.attention.head_count_kv", Value: uint32(bigramHeads)},
		{Key: "llama.rope.dimension_count", Value: uint32(nEmbd / bigramHeads)},
		{Key: "llama.rope.freq_base", Value: ropeBase},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
	}
}

// WriteBigram writes the bigram model to path.
func WriteBigram(path string) error {
	kvs, tensors := Bigram()
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write bigram model: %w", err)
	}
	return nil
}
