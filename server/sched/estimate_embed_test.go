package sched

import (
	"math"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// The embedding context is counted: its f16 KV for one slot's context and
// a micro-batch of that many tokens, in Total and on the GPU; sizes that
// wrap around are refused.
func TestEstimateEmbedding(t *testing.T) {
	f, err := gguf.Open(storiesPath)
	if err != nil {
		t.Fatal(err)
	}
	e, err := EstimateMemory(f, 256*2, "q8_0", 512)
	if err != nil {
		t.Fatal(err)
	}
	before, gpu := e.Total(), e.GPUBytes(e.Layers+1)
	if err := e.AddEmbedding(256); err != nil {
		t.Fatal(err)
	}
	one, _ := EstimateMemory(f, 256, "f16", 512)
	if e.EmbedKVBytesPerLayer != one.KVBytesPerLayer || e.EmbedComputeBytes == 0 {
		t.Fatalf("embedding KV %d per layer (f16 context of 256: %d), compute %d", e.EmbedKVBytesPerLayer, one.KVBytesPerLayer, e.EmbedComputeBytes)
	}
	extra := e.EmbedKVBytesPerLayer*uint64(e.Layers) + e.EmbedComputeBytes
	if e.Total() != before+extra || e.GPUBytes(e.Layers+1) != gpu+extra {
		t.Fatalf("total %d → %d, GPU %d → %d, embedding %d", before, e.Total(), gpu, e.GPUBytes(e.Layers+1), extra)
	}
	for _, n := range []int{math.MaxInt, -1} {
		if err := e.AddEmbedding(n); err == nil {
			t.Errorf("embedding context of %d tokens: no error", n)
		}
	}
}
