package sched

import (
	"fmt"
	"math/bits"
	"os"
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
	// EmbedKVBytesPerLayer and EmbedComputeBytes are the embedding
	// context the runner makes on the first embedding request
	// (runner.EmbedParams): one layer's f16 K and V for one slot's
	// context, and a compute buffer for a micro-batch of that many tokens
	// (activations, no logits). Zero until AddEmbedding.
	EmbedKVBytesPerLayer uint64
	EmbedComputeBytes    uint64
	// DraftLayerBytes are a draft model's blocks (weights and KV) by the
	// model's block they are offloaded with (the draft loads with the
	// model's GPU layer count: its block i goes where block i does, its
	// blocks past the model's with the last); DraftOutputBytes its output
	// layer, DraftComputeBytes its compute buffer, DraftInputBytes its
	// embeddings (on the CPU). Zero until AddDraft.
	DraftLayerBytes                                      []uint64
	DraftOutputBytes, DraftComputeBytes, DraftInputBytes uint64
	draftKVPerToken                                      uint64 // all its layers' K and V elements per token

	kvPerToken  uint64 // one layer's K and V elements per token
	actPerToken uint64 // activation bytes per token of a micro-batch
}

// WeightBytes is the size of all weights (with a draft model's, and its
// KV cache, which goes with its blocks).
func (e Estimate) WeightBytes() uint64 {
	n := e.OutputBytes + e.InputBytes + e.DraftOutputBytes + e.DraftInputBytes
	for _, b := range e.LayerBytes {
		n += b
	}
	for _, b := range e.DraftLayerBytes {
		n += b
	}
	return n
}

// KVBytes is the KV cache of every layer (the embedding context's too).
func (e Estimate) KVBytes() uint64 {
	return (e.KVBytesPerLayer + e.EmbedKVBytesPerLayer) * uint64(e.Layers)
}

// Total is everything the instance needs.
func (e Estimate) Total() uint64 {
	return e.WeightBytes() + e.KVBytes() + e.ComputeBytes + e.EmbedComputeBytes + e.DraftComputeBytes
}

// GPUBytes is what offloading n layers (n > Layers includes the output
// layer) puts on GPUs: their weights and KV cache, and the compute buffer.
func (e Estimate) GPUBytes(n int) uint64 {
	if n <= 0 {
		return 0
	}
	var b uint64
	for i := 0; i < n && i < e.Layers; i++ {
		b += e.LayerBytes[i] + e.KVBytesPerLayer + e.EmbedKVBytesPerLayer
		if i < len(e.DraftLayerBytes) {
			b += e.DraftLayerBytes[i]
		}
	}
	if n > e.Layers {
		b += e.OutputBytes + e.DraftOutputBytes
	}
	return b + e.ComputeBytes + e.EmbedComputeBytes + e.DraftComputeBytes
}

// addDraft is AddDraft of the draft model's file at path.
func addDraft(e *Estimate, path string, ctxTokens int, kvType string, nBatch int) error {
	f, err := gguf.Open(path)
	if err != nil {
		return fmt.Errorf("draft model: %w", err)
	}
	return e.AddDraft(f, ctxTokens, kvType, nBatch)
}

// AddDraft adds a draft model (f) loaded beside the model, with the
// runner's draft context: ctxTokens tokens of kvType KV (every slot's
// window, as the model's) and micro-batches of nBatch tokens
// (runner.Config.Draft). Sizes that wrap around are refused like
// EstimateMemory's.
func (e *Estimate) AddDraft(f *gguf.File, ctxTokens int, kvType string, nBatch int) error {
	d, err := EstimateMemory(f, ctxTokens, kvType, nBatch)
	if err != nil {
		return fmt.Errorf("draft model: %w", err)
	}
	if e.Layers == 0 {
		return fmt.Errorf("draft model: the model has no blocks to offload it with")
	}
	var c sizeCalc
	layers := make([]uint64, e.Layers)
	for i, b := range d.LayerBytes {
		j := min(i, e.Layers-1)
		layers[j] = c.add(layers[j], c.add(b, d.KVBytesPerLayer))
	}
	c.add(e.Total(), d.Total()) // the most Total and GPUBytes add up to
	perToken := c.mul(d.kvPerToken, uint64(d.Layers))
	if c.overflow {
		return fmt.Errorf("memory estimate overflows (draft model, context of %d tokens)", ctxTokens)
	}
	e.DraftLayerBytes = layers
	e.DraftOutputBytes, e.DraftComputeBytes, e.DraftInputBytes = d.OutputBytes, d.ComputeBytes, d.InputBytes
	e.draftKVPerToken = perToken
	return nil
}

// AddEmbedding adds the embedding context of an instance whose slots hold
// numCtx tokens each (runner.EmbedParams: numCtx tokens of f16 KV, one
// micro-batch of numCtx tokens), refusing sizes that wrap around like
// EstimateMemory.
func (e *Estimate) AddEmbedding(numCtx int) error {
	if numCtx < 0 {
		return fmt.Errorf("negative context (%d)", numCtx)
	}
	var c sizeCalc
	kv := c.mul(c.mul(uint64(numCtx), e.kvPerToken), uint64(kvTypeSizes["f16"]))
	compute := c.mul(uint64(numCtx), e.actPerToken)
	total := c.add(c.add(e.OutputBytes, e.InputBytes), c.add(e.ComputeBytes, compute))
	for _, b := range e.LayerBytes {
		total = c.add(total, c.add(b, c.add(e.KVBytesPerLayer, kv)))
	}
	if c.overflow {
		return fmt.Errorf("memory estimate overflows (embedding context of %d tokens)", numCtx)
	}
	e.EmbedKVBytesPerLayer, e.EmbedComputeBytes = kv, compute
	return nil
}

// AddProjector counts a multimodal projector loaded beside the model:
// its weights (the file's size) and a compute allowance of a quarter of
// them for encoding one image. They are counted with the tensors that
// stay on the CPU: mtmd places the projector itself, on the GPU when the
// model's layers are, and the estimate errs towards the host. A rough
// bound, not a measurement.
func (e *Estimate) AddProjector(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("projector: %w", err)
	}
	var c sizeCalc
	size := uint64(fi.Size())
	in := c.add(e.InputBytes, c.add(size, size/4))
	if c.overflow {
		return fmt.Errorf("memory estimate overflows (projector of %d bytes)", size)
	}
	e.InputBytes = in
	return nil
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
	// Every size below comes from the file or the request: the arithmetic
	// refuses to wrap around (issue 19: a huge num_ctx once wrapped the
	// estimate to 3 MiB and the load went ahead).
	var c sizeCalc
	for _, t := range f.Tensors {
		size := t.Size()
		switch m := blockTensor.FindStringSubmatch(t.Name); {
		case m != nil:
			i, _ := strconv.Atoi(m[1])
			if i >= int(layers) {
				return Estimate{}, fmt.Errorf("tensor %s is past block_count %d", t.Name, layers)
			}
			e.LayerBytes[i] = c.add(e.LayerBytes[i], size)
		case strings.HasPrefix(t.Name, "output"):
			e.OutputBytes = c.add(e.OutputBytes, size)
		default:
			e.InputBytes = c.add(e.InputBytes, size)
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
	if ctxTokens < 0 || nBatch < 0 {
		return Estimate{}, fmt.Errorf("negative context (%d) or batch (%d)", ctxTokens, nBatch)
	}
	e.kvPerToken = c.mul(c.add(keyLen, valLen), headsKV)
	elems := c.mul(uint64(ctxTokens), e.kvPerToken)
	e.KVBytesPerLayer = c.mul(elems, uint64(per*32)) / 32 // per × 32 is whole: bytes per block of 32
	vocab := uint64(0)
	if toks, ok := f.Strings("tokenizer.ggml.tokens"); ok {
		vocab = uint64(len(toks))
	}
	ff, _ := f.ArchUint("feed_forward_length")
	nb := uint64(max(nBatch, 1))
	e.ComputeBytes = c.mul(c.mul(4, nb), c.add(vocab, c.mul(4, max(embd, ff))))
	e.actPerToken = c.mul(16, max(embd, ff))
	// The sums Total and GPUBytes make are at most this one.
	total := c.add(c.add(e.OutputBytes, e.InputBytes), e.ComputeBytes)
	for _, b := range e.LayerBytes {
		total = c.add(total, c.add(b, e.KVBytesPerLayer))
	}
	if c.overflow {
		return Estimate{}, fmt.Errorf("memory estimate overflows (context of %d tokens, batch of %d)", ctxTokens, nBatch)
	}
	return e, nil
}

// sizeCalc is size arithmetic that notes a wrap-around instead of
// wrapping silently.
type sizeCalc struct{ overflow bool }

func (c *sizeCalc) add(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	c.overflow = c.overflow || carry != 0
	return s
}

func (c *sizeCalc) mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	c.overflow = c.overflow || hi != 0
	return lo
}
