package sched

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Estimate is the memory a model instance needs, computed from GGUF
// metadata alone, before loading.
type Estimate struct {
	Layers      int
	LayerBytes  []uint64 // weights of each repeating block
	OutputBytes uint64   // output layer (output.weight, output_norm): offloaded last
	InputBytes  uint64   // token embeddings and other tensors outside blocks: stay on the CPU
	// KVBytesPerLayer is one layer's K and V cache for the whole context
	// (every slot).
	KVBytesPerLayer uint64
	// ComputeBytes is a rough bound on the compute buffer: logits of one
	// micro-batch plus activations.
	ComputeBytes uint64
}

// WeightBytes is the size of all weights.
func (e Estimate) WeightBytes() uint64 {
	n := e.OutputBytes + e.InputBytes
	for _, b := range e.LayerBytes {
		n += b
	}
	return n
}

// KVBytes is the KV cache of every layer.
func (e Estimate) KVBytes() uint64 { return e.KVBytesPerLayer * uint64(e.Layers) }

// Total is everything the instance needs.
func (e Estimate) Total() uint64 { return e.WeightBytes() + e.KVBytes() + e.ComputeBytes }

// GPUBytes is what offloading n layers (n > Layers includes the output
// layer) puts on GPUs: their weights and KV cache, and the compute buffer.
func (e Estimate) GPUBytes(n int) uint64 {
	if n <= 0 {
		return 0
	}
	var b uint64
	for i := 0; i < n && i < e.Layers; i++ {
		b += e.LayerBytes[i] + e.KVBytesPerLayer
	}
	if n > e.Layers {
		b += e.OutputBytes
	}
	return b + e.ComputeBytes
}

var blockTensor = regexp.MustCompile(`^blk\.(\d+)\.`)

// kvTypeSizes are bytes per element of the KV cache types (block size 32
// for the quantized ones).
var kvTypeSizes = map[string]float64{
	"": 2, "f16": 2, "bf16": 2, "f32": 4,
	"q8_0": 34.0 / 32, "q4_0": 18.0 / 32, "q4_1": 20.0 / 32, "q5_0": 22.0 / 32, "q5_1": 24.0 / 32, "iq4_nl": 18.0 / 32,
}

// EstimateMemory estimates an instance of the model with ctxTokens tokens
// of KV cache (per-slot context × slots), cache type kvType and micro-
// batches of nBatch tokens.
func EstimateMemory(f *gguf.File, ctxTokens int, kvType string, nBatch int) (Estimate, error) {
	layers, _ := f.ArchUint("block_count")
	// Guard: block_count sizes an allocation here. The store refuses a
	// model whose header fails gguf.Validate, but this function must not
	// trust its input on its own: a crafted 2^37 once ran the process out
	// of memory on the next line.
	if layers > gguf.MaxBlockCount {
		return Estimate{}, fmt.Errorf("%s.block_count is %d, at most %d allowed", f.Architecture(), layers, gguf.MaxBlockCount)
	}
	e := Estimate{Layers: int(layers), LayerBytes: make([]uint64, layers)}
	for _, t := range f.Tensors {
		size := t.Size()
		switch m := blockTensor.FindStringSubmatch(t.Name); {
		case m != nil:
			i, _ := strconv.Atoi(m[1])
			if i >= int(layers) {
				return Estimate{}, fmt.Errorf("tensor %s is past block_count %d", t.Name, layers)
			}
			e.LayerBytes[i] += size
		case strings.HasPrefix(t.Name, "output"):
			e.OutputBytes += size
		default:
			e.InputBytes += size
		}
	}
	embd, _ := f.ArchUint("embedding_length")
	heads, _ := f.ArchUint("attention.head_count")
	headsKV, ok := f.ArchUint("attention.head_count_kv")
	if !ok {
		headsKV = heads
	}
	keyLen, ok := f.ArchUint("attention.key_length")
	if !ok && heads > 0 {
		keyLen = embd / heads
	}
	valLen, ok := f.ArchUint("attention.value_length")
	if !ok {
		valLen = keyLen
	}
	per, ok := kvTypeSizes[strings.ToLower(kvType)]
	if !ok {
		return Estimate{}, fmt.Errorf("unknown KV cache type %q", kvType)
	}
	e.KVBytesPerLayer = uint64(float64(uint64(ctxTokens)*(keyLen+valLen)*headsKV) * per)
	vocab := uint64(0)
	if toks, ok := f.Strings("tokenizer.ggml.tokens"); ok {
		vocab = uint64(len(toks))
	}
	ff, _ := f.ArchUint("feed_forward_length")
	nb := uint64(max(nBatch, 1))
	e.ComputeBytes = 4 * nb * (vocab + 4*max(embd, ff))
	return e, nil
}
