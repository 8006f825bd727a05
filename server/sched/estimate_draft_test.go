package sched

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// A draft model is counted: its weights, its KV for the same context and
// its compute buffer, in Total and (block by block with the model's
// blocks) on the GPU, and its KV per token in sizing; a draft with more
// blocks than the model goes with its last block; sizes that wrap around
// are refused.
func TestEstimateDraft(t *testing.T) {
	open := func(p string) *gguf.File {
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	model, draft := open(storiesPath), open(testmodels.Testdata("llama-2-tiny-random.gguf"))
	e, err := EstimateMemory(model, 1000, "", 512)
	if err != nil {
		t.Fatal(err)
	}
	d, err := EstimateMemory(draft, 1000, "", 512)
	if err != nil {
		t.Fatal(err)
	}
	with := e
	if err := with.AddDraft(draft, 1000, "", 512); err != nil {
		t.Fatal(err)
	}
	all := e.Layers + 1
	if with.Total() != e.Total()+d.Total() || with.GPUBytes(all) != e.GPUBytes(all)+d.GPUBytes(d.Layers+1) || with.GPUBytes(0) != 0 {
		t.Fatalf("total %d → %d (draft %d); on the GPU %d → %d (draft %d)", e.Total(), with.Total(), d.Total(), e.GPUBytes(all), with.GPUBytes(all), d.GPUBytes(d.Layers+1))
	}
	// Offloading the first block takes the draft's first with it.
	if got, want := with.GPUBytes(1)-e.GPUBytes(1), d.LayerBytes[0]+d.KVBytesPerLayer+d.ComputeBytes; got != want {
		t.Errorf("one block offloaded: the draft adds %d, want %d", got, want)
	}
	// The model as the draft of a model with one block: all its blocks
	// go with that one.
	one := Estimate{Layers: 1, LayerBytes: []uint64{10}}
	if err := one.AddDraft(model, 100, "", 512); err != nil {
		t.Fatal(err)
	}
	m100, _ := EstimateMemory(model, 100, "", 512)
	if got, want := one.DraftLayerBytes[0], m100.KVBytes()+m100.WeightBytes()-m100.InputBytes-m100.OutputBytes; got != want {
		t.Errorf("a draft of %d blocks on a model of 1: %d bytes with its block, want %d", m100.Layers, got, want)
	}
	// Sizing: a token of context costs the model's KV and the draft's.
	e0, _ := EstimateMemory(model, 0, "", 512)
	d0, _ := EstimateMemory(draft, 0, "", 512)
	in, _ := perToken(e0, "")
	din, _ := perToken(d0, "")
	if err := e0.AddDraft(draft, 0, "", 512); err != nil {
		t.Fatal(err)
	}
	both, _ := perToken(e0, "")
	if both.kvPerToken != in.kvPerToken+din.kvPerToken {
		t.Errorf("KV per token with a draft %d, want %d + %d", both.kvPerToken, in.kvPerToken, din.kvPerToken)
	}
	for _, n := range []int{math.MaxInt, -1} {
		x := e
		if err := x.AddDraft(draft, n, "", 512); err == nil {
			t.Errorf("draft context of %d tokens: no error", n)
		}
	}
}

// The scheduler counts a draft in what it places: an instance with one
// is estimated larger by the draft's estimate.
func TestPlacementCountsDraft(t *testing.T) {
	s := newSched(t, Config{KeepAlive: time.Minute})
	plain, _, err := s.Acquire(context.Background(), "m", Key{Path: storiesPath, NumCtx: 256})
	if err != nil {
		t.Fatal(err)
	}
	s.Release(plain, time.Minute)
	drafted, _, err := s.Acquire(context.Background(), "m", Key{Path: storiesPath, NumCtx: 256, Draft: storiesPath})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(drafted, time.Minute)
	f, _ := gguf.Open(storiesPath)
	d, err := EstimateMemory(f, 256*drafted.Slots, "", batchSize(Key{Path: storiesPath, NumCtx: 256}))
	if err != nil {
		t.Fatal(err)
	}
	if drafted.Draft == nil || drafted.Placement.EstimatedBytes != plain.Placement.EstimatedBytes+d.Total() {
		t.Fatalf("estimated %d with a draft, %d without, draft %d", drafted.Placement.EstimatedBytes, plain.Placement.EstimatedBytes, d.Total())
	}
}
