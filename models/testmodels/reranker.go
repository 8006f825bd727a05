package testmodels

import (
	"fmt"
	"math"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// The reranker model: a one-layer BERT cross-encoder with rank pooling
// whose score is a known function of how often the keyword appears.
//
// [WriteReranker] writes a "bert" model (about 0.2 MB, all F32) with
// bert.pooling_type 4 (llama.cpp's LLAMA_POOLING_TYPE_RANK) and a
// classification head (cls.weight, cls.bias, cls.output.weight,
// cls.output.bias), as convert_hf_to_gguf writes BGE rerankers. Its
// SentencePiece vocabulary adds BOS and EOS (add_bos_token and
// add_eos_token true, no SEP), so a pair is tokenized, as llama-server
// does, to <s> query </s> document </s>.
//
// Its score for a pair of n tokens of which k are the keyword token
// "▁frog" (the word [RerankerKeyword] at the start of a text or after a
// space) is [RerankerScore](k, n) = tanh(m·√d/√(d+2m²)) with
// m = √(d/4)·k/n and d = [RerankerEmbd]: 0 with no keyword, rising
// strictly with the keyword's share k/n of the pair's tokens. So for a
// query "frog", "frog frog frog" outranks "frog pond", which outranks
// "the frog in the green pond", which outranks "a pond" (0).
//
// How it works (dimensions 0..5 of the d-wide residual stream):
//
//   - Every token embeds as (1, −1, 0, 0, 0, 0, …); the keyword as
//     (1, −1, 1, −1, 0, 0, …). Position embeddings are zero. The embedding
//     layer norm (weight 1, bias 0) keeps the mean at 0 and scales by
//     the standard deviation: dimension 2 becomes √(d/4) for the keyword
//     and 0 for any other token.
//   - Attention has zero Q and K weights and biases, so every token
//     attends uniformly to all tokens of its sequence (non-causal); V
//     copies dimension 2 to 4 and its negation to 5, and attn_output is
//     the identity on 4 and 5. The first token (<s>, which rank pooling
//     reads for BERT) gets m and −m there: √(d/4) times the keyword's
//     share of the sequence.
//   - The residual adds <s>'s normed embedding (√(d/2), −√(d/2), 0, …);
//     the attention output norm turns m into m·√d/√(d+2m²) (increasing
//     in m). The feed-forward weights are zero and the output layer norm
//     leaves the already normalised vector as it is.
//   - The head: cls puts dimension 4 into its output 0 (tanh of it), and
//     cls.output reads output 0 (n_cls_out 1): the score.
const (
	// RerankerName is the reranker model's general.name.
	RerankerName = "Tadpole reranker test model"
	// RerankerKeyword is the word whose share of a pair's tokens the
	// score measures.
	RerankerKeyword = "frog"
	// RerankerEmbd is the model's embedding width d.
	RerankerEmbd = 32
	// RerankerContextLength is the model's bert.context_length.
	RerankerContextLength = 512
)

// rerankerWords are whole-word tokens of the vocabulary (other text falls
// back to byte tokens, one per byte).
var rerankerWords = []string{"▁" + RerankerKeyword, "▁pond", "▁lily", "▁pad", "▁the", "▁a", "▁green",
	"▁jumps", "▁in", "▁on", "▁tree", "▁bird", "▁water", "▁sky"}

// RerankerScore is the reranker's score for a pair (with its <s> and two
// </s>) of n tokens of which k are the keyword; llama.cpp computes it in
// float32, equal to this within 1e-5.
func RerankerScore(k, n int) float64 {
	if n <= 0 {
		return 0
	}
	d := float64(RerankerEmbd)
	m := math.Sqrt(d/4) * float64(k) / float64(n)
	return math.Tanh(m * math.Sqrt(d) / math.Sqrt(d+2*m*m))
}

// RerankerKeywordToken is the keyword's token text.
const RerankerKeywordToken = "▁" + RerankerKeyword

// Reranker returns the metadata and tensors of the reranker model (see
// RerankerScore), for writing with gguf.Write.
func Reranker() ([]gguf.KV, []gguf.Tensor) {
	v := newVocab()
	for _, w := range rerankerWords {
		v.addWord(w)
	}
	nVocab, d := len(v.tokens), RerankerEmbd
	const heads, ff = 2, 16
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "bert"},
		{Key: "general.name", Value: RerankerName},
		{Key: "general.description", Value: "Deterministic reranker for tests: the score rises with the share of the word frog in the pair."},
		{Key: "general.file_type", Value: uint32(gguf.FileTypeF32)},
		{Key: "bert.vocab_size", Value: uint32(nVocab)},
		{Key: "bert.context_length", Value: uint32(RerankerContextLength)},
		{Key: "bert.embedding_length", Value: uint32(d)},
		{Key: "bert.block_count", Value: uint32(1)},
		{Key: "bert.feed_forward_length", Value: uint32(ff)},
		{Key: "bert.attention.head_count", Value: uint32(heads)},
		{Key: "bert.attention.layer_norm_epsilon", Value: float32(1e-12)},
		{Key: "bert.attention.causal", Value: false},
		{Key: "bert.pooling_type", Value: uint32(4)}, // LLAMA_POOLING_TYPE_RANK
		// BERT's token types (llama.cpp v0.5.0 refuses a BERT without the
		// count; convert_hf_to_gguf writes 2, the segment embeddings are
		// optional and left out).
		{Key: "tokenizer.ggml.token_type_count", Value: uint32(2)},
	}
	for _, kv := range v.kvs() {
		switch kv.Key {
		case "tokenizer.chat_template":
			continue // not a chat model
		case "tokenizer.ggml.add_eos_token":
			kv.Value = true
		}
		kvs = append(kvs, kv)
	}

	keyword := v.id(RerankerKeywordToken)
	embd := make([]float32, nVocab*d)
	for i := range nVocab {
		embd[i*d], embd[i*d+1] = 1, -1
		if i == keyword {
			embd[i*d+2], embd[i*d+3] = 1, -1
		}
	}
	// mat is a rows×cols matrix (GGUF dims {cols, rows}: rows outputs of
	// cols inputs) with the given (row, col, value) entries.
	mat := func(name string, rows, cols int, entries ...[3]float32) gguf.Tensor {
		vals := make([]float32, rows*cols)
		for _, e := range entries {
			vals[int(e[0])*cols+int(e[1])] = e[2]
		}
		return gguf.Tensor{Name: name, Dims: []uint64{uint64(cols), uint64(rows)}, Type: gguf.F32, Data: encodeF32(vals, gguf.F32)}
	}
	vec := func(name string, n int, v float32) gguf.Tensor {
		return gguf.Tensor{Name: name, Dims: []uint64{uint64(n)}, Type: gguf.F32, Data: constF32(n, v)}
	}
	tensors := []gguf.Tensor{
		{Name: "token_embd.weight", Dims: []uint64{uint64(d), uint64(nVocab)}, Type: gguf.F32, Data: encodeF32(embd, gguf.F32)},
		mat("position_embd.weight", RerankerContextLength, d),
		vec("token_embd_norm.weight", d, 1),
		vec("token_embd_norm.bias", d, 0),
		mat("blk.0.attn_q.weight", d, d),
		vec("blk.0.attn_q.bias", d, 0),
		mat("blk.0.attn_k.weight", d, d),
		vec("blk.0.attn_k.bias", d, 0),
		mat("blk.0.attn_v.weight", d, d, [3]float32{4, 2, 1}, [3]float32{5, 2, -1}),
		vec("blk.0.attn_v.bias", d, 0),
		mat("blk.0.attn_output.weight", d, d, [3]float32{4, 4, 1}, [3]float32{5, 5, 1}),
		vec("blk.0.attn_output.bias", d, 0),
		vec("blk.0.attn_output_norm.weight", d, 1),
		vec("blk.0.attn_output_norm.bias", d, 0),
		mat("blk.0.ffn_up.weight", ff, d),
		vec("blk.0.ffn_up.bias", ff, 0),
		mat("blk.0.ffn_down.weight", d, ff),
		vec("blk.0.ffn_down.bias", d, 0),
		vec("blk.0.layer_output_norm.weight", d, 1),
		vec("blk.0.layer_output_norm.bias", d, 0),
		mat("cls.weight", d, d, [3]float32{0, 4, 1}),
		vec("cls.bias", d, 0),
		mat("cls.output.weight", 1, d, [3]float32{0, 0, 1}),
		vec("cls.output.bias", 1, 0),
	}
	return kvs, tensors
}

// RerankerTokens is the reranker's vocabulary (tokenizer.ggml.tokens).
func RerankerTokens() []string {
	v := newVocab()
	for _, w := range rerankerWords {
		v.addWord(w)
	}
	return v.tokens
}

// WriteReranker writes the reranker model to path.
func WriteReranker(path string) error {
	kvs, tensors := Reranker()
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write reranker model: %w", err)
	}
	return nil
}
