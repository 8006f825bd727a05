package sched

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine/gpu"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

const mib = uint64(1) << 20

// The rule alone, on made-up sizes, worst values included: never fewer
// than 1 slot, never more than AutoMaxSlots, never a context below the
// floor or past the target, never a panic.
func TestChooseSizing(t *testing.T) {
	const kv = 128 << 10 // an 8B llama's f16 KV per token
	for _, tc := range []struct {
		name       string
		in         sizingInput
		slots, ctx int
	}{
		{"plenty", sizingInput{free: 80 * gib, fixed: 5 * gib, kvPerToken: kv, target: 8192, floor: 2048}, 16, 8192},
		{"plenty on the host", sizingInput{free: 80 * gib, fixed: 5 * gib, kvPerToken: kv, target: 8192, floor: 2048, maxSlots: AutoMaxHostSlots}, 4, 8192},
		{"a bound past AutoMaxSlots", sizingInput{free: 80 * gib, kvPerToken: kv, target: 8192, floor: 2048, maxSlots: 1000}, 16, 8192},
		// 80% of 8 GiB is 6.4 GiB; less 1 GiB of weights, 5.4 GiB hold 5
		// slots of 8192 tokens × 128 KiB (1 GiB each).
		{"five slots", sizingInput{free: 8 * gib, fixed: gib, kvPerToken: kv, target: 8192, floor: 2048}, 5, 8192},
		// 600 MiB hold 4800 tokens of one slot: 4608, a multiple of 256.
		{"context shrinks", sizingInput{free: 1000 * mib, fixed: 200 * mib, kvPerToken: kv, target: 8192, floor: 2048}, 1, 4608},
		{"below the floor", sizingInput{free: 400 * mib, fixed: 200 * mib, kvPerToken: kv, target: 8192, floor: 2048}, 1, 2048},
		{"weights alone do not fit", sizingInput{free: gib, fixed: 2 * gib, kvPerToken: kv, target: 8192, floor: 2048}, 1, 2048},
		{"0 bytes free", sizingInput{free: 0, fixed: gib, kvPerToken: kv, perCtxToken: 64, target: 8192, floor: 2048}, 1, 2048},
		{"max uint64 free", sizingInput{free: math.MaxUint64, fixed: gib, kvPerToken: kv, perCtxToken: 64, target: 8192, floor: 2048}, 16, 8192},
		{"max int64 free", sizingInput{free: math.MaxInt64, fixed: gib, kvPerToken: kv, target: 8192, floor: 2048}, 16, 8192},
		{"huge KV per token", sizingInput{free: math.MaxUint64, kvPerToken: math.MaxUint64 / 3, perCtxToken: math.MaxUint64 / 3, target: 8192, floor: 2048}, 1, 2048},
		{"no KV at all", sizingInput{free: 0, target: 8192, floor: 2048}, 16, 8192},
		{"trained context of 1", sizingInput{free: 80 * gib, kvPerToken: kv, target: 1, floor: 1}, 16, MinCtx},
		{"target past the cap", sizingInput{free: math.MaxUint64, kvPerToken: 1, target: math.MaxInt, floor: math.MaxInt}, 16, MaxCtxCap},
		// Either half set by the operator: the other fills the budget.
		{"--context-length 4096", sizingInput{free: 8 * gib, fixed: gib, kvPerToken: kv, target: 8192, floor: 2048, ctx: 4096}, 10, 4096},
		{"--parallel 8", sizingInput{free: 8 * gib, fixed: gib, kvPerToken: kv, target: 8192, floor: 2048, slots: 8}, 8, 5376},
		{"both flags", sizingInput{free: 0, kvPerToken: kv, target: 8192, floor: 2048, slots: 3, ctx: 300}, 3, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slots, ctx, why := chooseSizing(tc.in)
			if slots != tc.slots || ctx != tc.ctx {
				t.Fatalf("%d slots of %d tokens (%s), want %d of %d", slots, ctx, why, tc.slots, tc.ctx)
			}
			t.Logf("%d × %d: %s", slots, ctx, why)
		})
	}
}

// sizingModel is the fixed part and per-token costs of a model file as
// sizing sees them on the host (the test's expectations are built from
// them, not from the scheduler's answer).
func sizingModel(t *testing.T, path string) (Estimate, sizingInput) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	e0, err := EstimateMemory(f, 0, "", 512)
	if err != nil {
		t.Fatal(err)
	}
	in, err := perToken(e0, "")
	if err != nil {
		t.Fatal(err)
	}
	// Cross-check the per-token costs against the estimate of a real
	// context: one slot of 1000 tokens costs 1000 tokens of each.
	e1, err := EstimateMemory(f, 1000, "", 512)
	if err != nil {
		t.Fatal(err)
	}
	if err := e1.AddEmbedding(1000); err != nil {
		t.Fatal(err)
	}
	if got, want := e1.Total()-e0.Total(), 1000*(in.kvPerToken+in.perCtxToken); got != want {
		t.Fatalf("1000 tokens cost %d bytes in the estimate, %d by the per-token costs", got, want)
	}
	return e0, in
}

// freeFor is the free memory that holds exactly n slots of c tokens
// (and not n+1) after fixed bytes, at the autoSharePct share.
func freeFor(fixed uint64, in sizingInput, n, c int) uint64 {
	need := fixed + uint64(c)*(uint64(n)*in.kvPerToken+in.perCtxToken) + uint64(c)*in.kvPerToken/2
	return need/autoSharePct*100 + 100
}

func autoSched(t *testing.T, cfg Config) *Scheduler {
	t.Helper()
	cfg.AutoSlots, cfg.AutoCtx = true, true
	if cfg.MemoryBytes == 0 {
		cfg.MemoryBytes = 64 * gib
	}
	return newSched(t, cfg)
}

func acquireSized(t *testing.T, s *Scheduler, path string, numCtx int) *Instance {
	t.Helper()
	in, _, err := s.Acquire(context.Background(), "m", Key{Path: path, NumGPU: -1, NumCtx: numCtx})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Release(in, time.Minute) })
	return in
}

// checkInstance checks an instance's slots and context against its
// runner's: what /api/ps shows is what was loaded.
func checkInstance(t *testing.T, in *Instance, slots, ctx int, where string) {
	t.Helper()
	_, total := in.Runner.Slots()
	if in.Slots != slots || total != slots || in.NumCtx != ctx || in.Runner.Config().NumCtx != ctx || in.Sizing.Where != where || in.Sizing.Mode != "auto" {
		t.Fatalf("instance: %d slots (runner %d) of %d tokens (runner %d) on %q, want %d of %d on %q; sizing %+v",
			in.Slots, total, in.NumCtx, in.Runner.Config().NumCtx, in.Sizing.Where, slots, ctx, where, in.Sizing)
	}
}

// The scheduler sizes a real model from the host's free memory (the
// FreeMemory reader faked): the runner it loads has the chosen slots.
func TestAutoSizingHost(t *testing.T) {
	e0, per := sizingModel(t, storiesPath) // trained on 2048 tokens
	for _, tc := range []struct {
		name       string
		free       uint64
		memory     uint64
		slots, ctx int
	}{
		{"three slots fit", freeFor(e0.Total(), per, 3, 2048), 0, 3, 2048},
		{"plenty", 64 * gib, 0, AutoMaxHostSlots, 2048},
		{"0 bytes free: the minimum", 0, 0, 1, 2048},
		{"absurd free memory", math.MaxUint64, math.MaxUint64, AutoMaxHostSlots, 2048},
		// MemoryBytes bounds what MemAvailable says.
		{"limited by MemoryBytes", 64 * gib, freeFor(e0.Total(), per, 2, 2048), 2, 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := autoSched(t, Config{KeepAlive: time.Minute, MemoryBytes: tc.memory, FreeMemory: func() uint64 { return tc.free }})
			in := acquireSized(t, s, storiesPath, 0)
			checkInstance(t, in, tc.slots, tc.ctx, "host")
			if in.Sizing.KVBytesPerToken != per.kvPerToken || in.DefaultCtx != tc.ctx {
				t.Fatalf("sizing %+v, default context %d", in.Sizing, in.DefaultCtx)
			}
			if got := generate(t, in, "Once upon a time"); got == "" {
				t.Fatal("no text")
			}
		})
	}
}

// On a (fake) GPU with room for the model, the GPU's free memory sizes
// it, not the host's; a GPU too small for the weights leaves it to the
// host.
func TestAutoSizingGPU(t *testing.T) {
	e0, per := sizingModel(t, storiesPath)
	gpuFixed := e0.GPUBytes(e0.Layers + 1)
	free := freeFor(gpuFixed, per, 5, 2048)
	fake := &gpu.Fake{List: []gpu.Device{{Index: 0, Name: "fake", TotalBytes: free, FreeBytes: free}}}
	s := autoSched(t, Config{KeepAlive: time.Minute, GPUs: fake, FreeMemory: func() uint64 { return 0 }})
	in := acquireSized(t, s, storiesPath, 0)
	checkInstance(t, in, 5, 2048, "gpu 0")
	if in.Placement.GPULayers != e0.Layers+1 {
		t.Fatalf("placement %+v", in.Placement)
	}

	tiny := &gpu.Fake{List: []gpu.Device{{Index: 0, Name: "tiny", TotalBytes: gpuFixed / 2, FreeBytes: gpuFixed / 2}}}
	s = autoSched(t, Config{KeepAlive: time.Minute, GPUs: tiny, FreeMemory: func() uint64 { return 64 * gib }})
	checkInstance(t, acquireSized(t, s, storiesPath, 0), AutoMaxHostSlots, 2048, "host")

	// A GPU reporting the largest sizes there are.
	huge := &gpu.Fake{List: []gpu.Device{{Index: 0, Name: "huge", TotalBytes: math.MaxUint64, FreeBytes: math.MaxUint64}}}
	s = autoSched(t, Config{KeepAlive: time.Minute, GPUs: huge, FreeMemory: func() uint64 { return 0 }})
	checkInstance(t, acquireSized(t, s, storiesPath, 0), AutoMaxSlots, 2048, "gpu 0")
}

// A model trained on a long context gets the target context; a request
// for a larger window loads an instance with fewer slots of it. A model
// trained on 1 token gets MinCtx.
func TestAutoSizingWindows(t *testing.T) {
	dir := t.TempDir()
	long, one := filepath.Join(dir, "long.gguf"), filepath.Join(dir, "one.gguf")
	shape := testmodels.Tiny
	shape.Context = 32768
	if err := testmodels.WriteRandomLlama(long, shape, gguf.F32, 1); err != nil {
		t.Fatal(err)
	}
	shape.Context = 1
	if err := testmodels.WriteRandomLlama(one, shape, gguf.F32, 1); err != nil {
		t.Fatal(err)
	}
	e0, per := sizingModel(t, long)
	free := freeFor(e0.Total(), per, 3, AutoTargetCtx)
	s := autoSched(t, Config{KeepAlive: time.Minute, FreeMemory: func() uint64 { return free }})
	checkInstance(t, acquireSized(t, s, long, 0), 3, AutoTargetCtx, "host")
	// 16384 tokens: the budget of 3 slots of 8192 holds fewer of 16384.
	big := acquireSized(t, s, long, 16384)
	wantBig := min(max(per.withFree(free, e0.Total()).slotsAt(16384), 1), AutoMaxHostSlots)
	if wantBig >= 3 || wantBig < 1 {
		t.Fatalf("bad expectation %d", wantBig)
	}
	checkInstance(t, big, wantBig, 16384, "host")

	s = autoSched(t, Config{KeepAlive: time.Minute, FreeMemory: func() uint64 { return 64 * gib }})
	checkInstance(t, acquireSized(t, s, one, 0), AutoMaxHostSlots, MinCtx, "host")
}

func (in sizingInput) withFree(free, fixed uint64) sizingInput {
	in.free, in.fixed, in.maxSlots = free, fixed, AutoMaxHostSlots
	return in
}

// One flag set: that half is the operator's, the other is sized.
func TestAutoSizingOneFlag(t *testing.T) {
	e0, per := sizingModel(t, storiesPath)
	free := freeFor(e0.Total(), per, 3, 2048)
	s := newSched(t, Config{KeepAlive: time.Minute, Parallel: 7, AutoCtx: true, MemoryBytes: 64 * gib, FreeMemory: func() uint64 { return free }})
	in := acquireSized(t, s, storiesPath, 0)
	// 7 slots do not fit 2048 tokens each: the context shrinks to what
	// they hold, rounded to 256, or the floor of 2048 (the trained
	// context) when less: here the floor.
	if in.Slots != 7 || in.NumCtx != 2048 || in.Sizing.Mode != "auto" {
		t.Fatalf("--parallel 7: %d slots of %d, %+v", in.Slots, in.NumCtx, in.Sizing)
	}
	s = newSched(t, Config{KeepAlive: time.Minute, NumCtx: 512, AutoSlots: true, MemoryBytes: 64 * gib, FreeMemory: func() uint64 { return free }})
	in = acquireSized(t, s, storiesPath, 0)
	// The budget of 3½ slots of 2048 holds more slots of 512.
	want := min(per.withFree(free, e0.Total()).slotsAt(512), AutoMaxHostSlots)
	if want <= 3 {
		t.Fatalf("bad expectation %d", want)
	}
	if _, total := in.Runner.Slots(); in.Slots != want || total != want || in.NumCtx != 512 {
		t.Fatalf("--context-length 512: %d slots (runner %d) of %d, %+v", in.Slots, total, in.NumCtx, in.Sizing)
	}
	// Both set: today's behaviour, whatever the memory.
	s = newSched(t, Config{KeepAlive: time.Minute, Parallel: 3, NumCtx: 256, FreeMemory: func() uint64 { return 0 }})
	in = acquireSized(t, s, storiesPath, 0)
	if in.Slots != 3 || in.NumCtx != 256 || in.Sizing.Mode != "flags" {
		t.Fatalf("flags: %d slots of %d, %+v", in.Slots, in.NumCtx, in.Sizing)
	}
}

// A model whose weights alone exceed the memory is refused as before.
func TestAutoSizingTooLarge(t *testing.T) {
	s := autoSched(t, Config{KeepAlive: time.Minute, MemoryBytes: 100 << 10, FreeMemory: func() uint64 { return math.MaxUint64 }})
	_, _, err := s.Acquire(context.Background(), "x", Key{Path: storiesPath, NumGPU: -1})
	if err == nil || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error %v", err)
	}
}
