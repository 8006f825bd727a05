package testmodels

import (
	"fmt"
	"sort"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// LoRA adapters for the bigram model (issue 38): each rewires some of its
// next-token table through a low-rank change of output.weight, so that a
// test knows the exact text the adapted model says.
//
// The change is exact at scale 1: for each rewired token t (its one-hot
// embedding dimension t), lora_a has a row selecting dimension t and
// lora_b a column that adds 2·bigramLogit to the new successor's logit
// and takes bigramLogit from the old one's (rank = the number of rewired
// tokens). At scale 0 the adapter is off; at scale 0.25 the old successor
// still wins (0.75 against 0.5 of the logit), so the answer is the base's.
var (
	// AdapterColors makes "from" continue with "red": the chat answer
	// becomes AdapterColorsAnswer.
	AdapterColors = map[string]string{"▁from": "▁red"}
	// AdapterColorsAnswer is the bigram model's chat answer with
	// AdapterColors at scale 1 (then </s>).
	AdapterColorsAnswer = "Hello from red green blue"

	// AdapterCount makes the answer to a chat start counting: the chat
	// answer becomes AdapterCountAnswer.
	AdapterCount = map[string]string{"<0x0A>": "▁one"}
	// AdapterCountAnswer is the chat answer with AdapterCount at scale 1.
	AdapterCountAnswer = " one two three four five six seven eight nine ten"

	// AdapterColorsAndCountAnswer is the chat answer with both adapters
	// at scale 1: counting first, as AdapterCount rewires the first token.
	AdapterColorsAndCountAnswer = AdapterCountAnswer
)

// BigramAdapter returns the metadata and tensors of a LoRA adapter for the
// bigram model that rewires next(from) to to for each entry of changes
// (tokens of the bigram vocabulary, e.g. "▁from" → "▁red").
func BigramAdapter(name string, changes map[string]string) ([]gguf.KV, []gguf.Tensor, error) {
	v, next := bigramVocab()
	nVocab := len(v.tokens)
	nEmbd := (nVocab + 63) / 64 * 64 // as bigramOf
	froms := make([]string, 0, len(changes))
	for f := range changes {
		froms = append(froms, f)
	}
	sort.Strings(froms)
	rank := len(froms)
	if rank == 0 {
		return nil, nil, fmt.Errorf("bigram adapter %q: no changes", name)
	}
	a := make([]float32, rank*nEmbd)  // ne = [n_embd, rank]: row j selects dimension from_j
	b := make([]float32, nVocab*rank) // ne = [rank, n_vocab]: row v, column j
	for j, f := range froms {
		from, ok := v.ids[f]
		if !ok {
			return nil, nil, fmt.Errorf("bigram adapter %q: %q is not in the vocabulary", name, f)
		}
		to, ok := v.ids[changes[f]]
		if !ok {
			return nil, nil, fmt.Errorf("bigram adapter %q: %q is not in the vocabulary", name, changes[f])
		}
		old, ok := next[from]
		if !ok {
			old = EOSID
		}
		a[j*nEmbd+from] = 1
		b[to*rank+j] += 2 * bigramLogit
		b[old*rank+j] -= bigramLogit
	}
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.type", Value: "adapter"},
		{Key: "general.name", Value: name},
		{Key: "adapter.type", Value: "lora"},
	}
	tensors := []gguf.Tensor{
		{Name: "output.weight.lora_a", Dims: []uint64{uint64(nEmbd), uint64(rank)}, Type: gguf.F32, Data: encodeF32(a, gguf.F32)},
		{Name: "output.weight.lora_b", Dims: []uint64{uint64(rank), uint64(nVocab)}, Type: gguf.F32, Data: encodeF32(b, gguf.F32)},
	}
	return kvs, tensors, nil
}

// WriteBigramAdapter writes BigramAdapter(name, changes) to path.
func WriteBigramAdapter(path, name string, changes map[string]string) error {
	kvs, tensors, err := BigramAdapter(name, changes)
	if err != nil {
		return err
	}
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write bigram adapter: %w", err)
	}
	return nil
}

// RandomAdapter returns a LoRA adapter of rank rank for the model whose
// GGUF header is f: random F16 low-rank factors for every tensor of f
// whose name ends in one of targets (e.g. "attn_q.weight",
// "attn_v.weight", the usual PEFT targets), scaled so that the change is
// small. For benchmarks: what the adapter says is not known, what it
// costs is a real adapter's.
func RandomAdapter(f *gguf.File, rank int, seed int64, targets ...string) ([]gguf.KV, []gguf.Tensor, error) {
	if rank <= 0 {
		return nil, nil, fmt.Errorf("random adapter: rank %d", rank)
	}
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: f.Architecture()},
		{Key: "general.type", Value: "adapter"},
		{Key: "general.name", Value: fmt.Sprintf("random rank-%d adapter %d", rank, seed)},
		{Key: "adapter.type", Value: "lora"},
		{Key: "adapter.lora.alpha", Value: float32(rank)},
	}
	var tensors []gguf.Tensor
	for _, t := range f.Tensors {
		hit := false
		for _, suf := range targets {
			hit = hit || len(t.Name) >= len(suf) && t.Name[len(t.Name)-len(suf):] == suf
		}
		if !hit || len(t.Dims) != 2 {
			continue
		}
		in, out := t.Dims[0], t.Dims[1]
		r := tensorRNG(seed, t.Name)
		a := make([]float32, uint64(rank)*in)
		for i := range a {
			a[i] = 0.01 * r.uniform()
		}
		b := make([]float32, out*uint64(rank))
		for i := range b {
			b[i] = 0.01 * r.uniform()
		}
		tensors = append(tensors,
			gguf.Tensor{Name: t.Name + ".lora_a", Dims: []uint64{in, uint64(rank)}, Type: gguf.F16, Data: encodeF32(a, gguf.F16)},
			gguf.Tensor{Name: t.Name + ".lora_b", Dims: []uint64{uint64(rank), out}, Type: gguf.F16, Data: encodeF32(b, gguf.F16)})
	}
	if len(tensors) == 0 {
		return nil, nil, fmt.Errorf("random adapter: no tensor of the model ends in %v", targets)
	}
	return kvs, tensors, nil
}
