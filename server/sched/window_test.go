package sched

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/gguf"
)

// A request's num_ctx is a window: windows up to the default context run
// on the default instance, larger ones on power-of-two instances, so many
// different num_ctx values load few instances (issue 19: 200 requests with
// 200 num_ctx values loaded 200 instances).
func TestContextWindowsShareInstances(t *testing.T) {
	s := newSched(t, Config{KeepAlive: time.Minute}) // default context 128, trained 2048
	var held []*Instance
	defer func() {
		for _, in := range held {
			s.Release(in, time.Minute)
		}
	}()
	for want := 16; want <= 2048; want += 37 {
		in, _, err := s.Acquire(context.Background(), "x", Key{Path: storiesPath, NumCtx: want, NumGPU: -1})
		if err != nil {
			t.Fatalf("num_ctx %d: %v", want, err)
		}
		held = append(held, in)
		if in.NumCtx < want {
			t.Fatalf("num_ctx %d ran on an instance of %d", want, in.NumCtx)
		}
		if in.DefaultCtx != 128 {
			t.Fatalf("default context %d", in.DefaultCtx)
		}
	}
	// 128 (default), 256, 512, 1024, 2048.
	if n := len(s.Loaded()); n != 5 {
		t.Fatalf("%d instances for 56 windows", n)
	}
	// A window the default instance covers reuses it.
	in, _, err := s.Acquire(context.Background(), "x", Key{Path: storiesPath, NumCtx: 100, NumGPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	held = append(held, in)
	if in.NumCtx != 128 {
		t.Fatalf("num_ctx 100 ran on an instance of %d", in.NumCtx)
	}
}

// num_ctx below MinCtx is the client's error naming the range; past the
// model's trained context (the default --max-ctx), or so large it would
// wrap around in the memory estimate, it is capped to that context
// (issue 41, as Ollama does) — never a 400, never an allocation past it
// (issue 19: 288230376151711800 wrapped the estimate, was truncated to
// uint32 and aborted llama.cpp).
func TestContextWindowOutOfRange(t *testing.T) {
	s := newSched(t, Config{KeepAlive: time.Minute})
	for _, want := range []int{-1, 1, MinCtx - 1} {
		_, _, err := s.Acquire(context.Background(), "x", Key{Path: storiesPath, NumCtx: want, NumGPU: -1})
		var re *engine.RangeError
		if !errors.As(err, &re) || re.Name != "num_ctx" || re.Min != MinCtx || re.Max != 2048 {
			t.Fatalf("num_ctx %d: %v", want, err)
		}
	}
	if len(s.Loaded()) != 0 {
		t.Fatal("a refused window loaded an instance")
	}
	for _, want := range []int{2049, 65536, 288230376151711800, math.MaxInt} {
		in, _, err := s.Acquire(context.Background(), "x", Key{Path: storiesPath, NumCtx: want, NumGPU: -1})
		if err != nil {
			t.Fatalf("num_ctx %d: %v", want, err)
		}
		s.Release(in, time.Minute)
		if in.NumCtx != 2048 {
			t.Fatalf("num_ctx %d ran on an instance of %d, want the trained 2048", want, in.NumCtx)
		}
	}
	if n := len(s.Loaded()); n != 1 {
		t.Fatalf("%d instances for the capped windows, want 1", n)
	}
	// The operator's --max-ctx narrows it.
	s2 := newSched(t, Config{KeepAlive: time.Minute, MaxCtx: 512})
	in, _, err := s2.Acquire(context.Background(), "x", Key{Path: storiesPath, NumCtx: 513, NumGPU: -1})
	if err != nil || in.NumCtx != 512 {
		t.Fatalf("num_ctx past --max-ctx: %v", err)
	}
	s2.Release(in, time.Minute)
}

// The server's --context-length is capped at each model's trained
// context (issue 41: a 2048-token embedding model under --context-length
// 65536 was sized 65536 × slots and refused "attempted to allocate
// 24641.75 MB").
func TestContextLengthCappedAtTrained(t *testing.T) {
	s := newSched(t, Config{KeepAlive: time.Minute, NumCtx: 65536, Parallel: 16})
	in, _, err := s.Acquire(context.Background(), "x", Key{Path: storiesPath, NumGPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(in, time.Minute)
	if in.NumCtx != 2048 || in.DefaultCtx != 2048 {
		t.Fatalf("instance of %d tokens per slot (default %d), want the trained 2048", in.NumCtx, in.DefaultCtx)
	}
}

// A model refused as too large does not first unload the idle instances
// (issue 19: the refusal unloaded the idle instance of the same model).
func TestTooLargeEvictsNothing(t *testing.T) {
	f, err := gguf.Open(storiesPath)
	if err != nil {
		t.Fatal(err)
	}
	small, err := EstimateMemory(f, 128*2, "", 512)
	if err != nil {
		t.Fatal(err)
	}
	s := newSched(t, Config{KeepAlive: time.Minute, MemoryBytes: small.Total() + small.Total()/4})
	s.Release(acquire(t, s, storiesPath), time.Minute)
	_, _, err = s.Acquire(context.Background(), "x", Key{Path: storiesPath, NumCtx: 2048, NumGPU: -1})
	if err == nil || !errors.Is(err, errNeverFits) {
		t.Fatalf("too large: %v", err)
	}
	if len(s.Loaded()) != 1 {
		t.Fatal("refusing a model that can never fit unloaded the idle instance")
	}
}

func TestMulInt(t *testing.T) {
	if n, err := mulInt(4096, 8); err != nil || n != 32768 {
		t.Fatal(n, err)
	}
	for _, c := range [][2]int{{math.MaxInt, 2}, {288230376151711800, 64}, {-1, 2}} {
		if _, err := mulInt(c[0], c[1]); err == nil {
			t.Fatalf("%d × %d did not overflow", c[0], c[1])
		}
	}
}

// The estimate refuses sizes that wrap around instead of reporting a
// few MiB for an impossible context.
func TestEstimateOverflow(t *testing.T) {
	f, err := gguf.Open(storiesPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ctx, batch int }{{math.MaxInt, 512}, {288230376151711800 * 8, 512}, {2048, math.MaxInt}, {-1, 512}} {
		if e, err := EstimateMemory(f, c.ctx, "", c.batch); err == nil {
			t.Errorf("context %d, batch %d: estimate %d bytes", c.ctx, c.batch, e.Total())
		}
	}
	e, err := EstimateMemory(f, 4096, "q8_0", 512)
	if err != nil || e.KVBytesPerLayer == 0 {
		t.Fatal(e, err)
	}
}
