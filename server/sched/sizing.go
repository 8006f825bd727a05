package sched

import (
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"strings"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/gpu"
	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Sizing from memory (issue 24). When the operator sets neither
// --parallel nor --context-length (Config.AutoSlots, Config.AutoCtx),
// each model gets the slots and default per-slot context its memory
// allows, instead of one fixed pair for every model:
//
//   - Where: the memory the model would use with none of Tadpole's other
//     models loaded (they are unloaded to make room, as for any load):
//     the GPU with the most free memory when the whole model and one
//     slot of the minimum context fit there; else every GPU together
//     when the split fits; else the host (partial offload and the CPU:
//     the host then holds what the GPUs do not, so its free memory
//     bounds the whole model). GPU free memory is the inventory's (NVML:
//     what other processes leave) plus what Tadpole's own instances hold
//     there; host free memory is MemAvailable plus what Tadpole's own
//     instances hold, at most Config.MemoryBytes.
//   - Budget: 80% of that free memory (the rest is headroom for the
//     estimate's error and for other processes), less everything that
//     does not depend on the context: weights, compute buffer, projector.
//   - Context: the target AutoTargetCtx (8192), or the model's largest
//     window (its trained context, or --max-ctx) when smaller; when one
//     slot of it does not fit the budget, as much as fits, rounded down to
//     a multiple of 256; never below AutoMinCtx (2048) or the model's
//     largest window when that is smaller (a model trained on 1 token
//     gets MinCtx).
//   - Slots: as many slots of that context as the budget holds, 1 to
//     AutoMaxSlots (16) on GPUs, 1 to AutoMaxHostSlots (4) on the host: a
//     CPU's decoding gains little past a few streams, while every slot's
//     KV is paid in RAM (measured: smol135m, 16 × 8192 on the host, made
//     a 3.1 GiB process that took 7.4 s to load; 4 × 8192, 0.95 GiB
//     and 1.3 s). A window larger than the default (a request's num_ctx)
//     loads an instance with as many slots of that window as fit, at
//     least 1.
//
// A model that does not fit even with 1 slot of the minimum context is
// refused by placement as before (ErrTooLarge), or partially offloaded.
// Either flag set by the operator fixes that half and the other is still
// chosen; both set: Sizing.Mode "flags", today's behaviour. The choice is
// made once per model file version and load options (so every request
// keys the same instances) and logged then ("sizing from memory"); each
// load's log line and /api/ps (tadpole.sizing) show it.

const (
	// AutoTargetCtx is the per-slot context sizing aims for.
	AutoTargetCtx = 8192
	// AutoMinCtx is the least per-slot context sizing chooses (or the
	// model's largest window when smaller).
	AutoMinCtx = 2048
	// AutoMaxSlots bounds the slots sizing chooses on GPUs,
	// AutoMaxHostSlots on the host.
	AutoMaxSlots     = 16
	AutoMaxHostSlots = 4
	// autoSharePct is the share of the free memory sizing fills.
	autoSharePct = 80
)

// Sizing is how a model's slots and default context were chosen.
type Sizing struct {
	Mode string `json:"mode"` // "auto" (from memory; either half may come from a flag) or "flags"
	// Slots are the slots of an instance at the default context.
	Slots int `json:"slots"`
	// Context is the default per-slot context.
	Context int `json:"context_length"`
	// KVBytesPerToken is the KV cache of one token of one slot, every
	// layer; FreeBytes the free memory sizing saw where the model goes;
	// BudgetBytes what of it the context-dependent part may use.
	KVBytesPerToken uint64 `json:"kv_bytes_per_token,omitempty"`
	FreeBytes       uint64 `json:"free_bytes,omitempty"`
	BudgetBytes     uint64 `json:"budget_bytes,omitempty"`
	Where           string `json:"where,omitempty"` // "gpu 0", "gpus", "host"
	Reason          string `json:"reason"`

	in sizingInput // to size instances of other windows
}

// sizingInput is what the sizing rule needs, all in bytes but the
// contexts and slots.
type sizingInput struct {
	free        uint64 // free memory where the model goes
	fixed       uint64 // bytes that do not depend on the context
	kvPerToken  uint64 // KV of one token of one slot, every layer
	perCtxToken uint64 // per token of one slot's context, paid once per instance (embedding context, activations)
	target      int    // context aimed for
	floor       int    // least context
	slots, ctx  int    // set by the operator (0: choose)
	maxSlots    int    // the most slots to choose (0: AutoMaxSlots)
}

// most is the most slots sizing chooses.
func (in sizingInput) most() int {
	if in.maxSlots > 0 {
		return min(in.maxSlots, AutoMaxSlots)
	}
	return AutoMaxSlots
}

// budget is what the context-dependent part may use: autoSharePct of
// the free memory less the fixed part, never negative.
func (in sizingInput) budget() uint64 {
	b := in.free / 100 * autoSharePct // divides first: no overflow at MaxUint64
	return b - min(b, in.fixed)
}

// instanceBytes is the context-dependent part of an instance of n slots
// of c tokens; ok is false when it overflows.
func (in sizingInput) instanceBytes(n, c int) (uint64, bool) {
	var m sizeCalc
	per := m.add(m.mul(uint64(n), in.kvPerToken), in.perCtxToken)
	b := m.mul(uint64(c), per)
	return b, !m.overflow
}

// fitsMinimum is whether the least instance sizing may choose fits:
// the operator's slots (or 1) of the operator's context (or the floor).
func (in sizingInput) fitsMinimum() bool {
	c := in.ctx
	if c <= 0 {
		c = min(max(in.floor, MinCtx), max(in.target, MinCtx))
	}
	b, ok := in.instanceBytes(max(in.slots, 1), c)
	return ok && in.free/100*autoSharePct >= in.fixed && b <= in.budget()
}

// slotsAt is how many slots of c tokens fit the budget (0 to
// in.most()), bounded by llama.cpp's sequences and total context.
func (in sizingInput) slotsAt(c int) int {
	if c <= 0 {
		return 0
	}
	limit := min(in.most(), engine.MaxSeq, engine.MaxContext/c)
	avail := in.budget()
	var m sizeCalc
	once := m.mul(uint64(c), in.perCtxToken)
	per := m.mul(uint64(c), in.kvPerToken)
	if m.overflow || once > avail {
		return 0
	}
	if per == 0 {
		return limit
	}
	return int(min(uint64(limit), (avail-once)/per))
}

// ctxFor is the largest context n slots hold within the budget (at most
// MaxCtxCap).
func (in sizingInput) ctxFor(n int) int {
	var m sizeCalc
	per := m.add(m.mul(uint64(max(n, 1)), in.kvPerToken), in.perCtxToken)
	if m.overflow {
		return 0
	}
	if per == 0 {
		return MaxCtxCap
	}
	return int(min(uint64(MaxCtxCap), in.budget()/per))
}

// chooseSizing applies the rule (see the package's sizing comment).
func chooseSizing(in sizingInput) (slots, ctx int, why string) {
	in.target = min(max(in.target, MinCtx), MaxCtxCap)
	in.floor = min(max(in.floor, MinCtx), in.target)
	var parts []string
	switch {
	case in.ctx > 0:
		ctx = in.ctx
		parts = append(parts, "context from --context-length")
	default:
		ctx = in.target
		if fit := in.ctxFor(max(in.slots, 1)); fit < ctx {
			ctx = fit
			if ctx >= 512 {
				ctx -= ctx % 256 // llama.cpp pads the cache to 256 cells
			}
			if ctx < in.floor {
				ctx = in.floor
				parts = append(parts, fmt.Sprintf("context %d: the minimum (%d tokens fit)", ctx, fit))
			} else {
				parts = append(parts, fmt.Sprintf("context %d: as much as fits (target %d)", ctx, in.target))
			}
		} else {
			parts = append(parts, fmt.Sprintf("context %d: the target", ctx))
		}
	}
	switch {
	case in.slots > 0:
		slots = in.slots
		parts = append(parts, "slots from --parallel")
	default:
		fit := in.slotsAt(ctx)
		slots = min(max(fit, 1), in.most())
		switch {
		case fit < 1:
			parts = append(parts, "1 slot: the minimum (none fits the budget)")
		case slots == in.most():
			parts = append(parts, fmt.Sprintf("%d slots: the most", slots))
		default:
			parts = append(parts, fmt.Sprintf("%d slots: as many as fit", slots))
		}
	}
	return slots, ctx, strings.Join(parts, "; ")
}

// SlotsFor is the slots of an instance whose per-slot context is c: the
// default's slots, or for another window as many as fit (at least 1),
// or the operator's --parallel.
func (z Sizing) SlotsFor(c int) int {
	if c == z.Context || z.in.slots > 0 || z.Mode != "auto" {
		return z.Slots
	}
	return min(max(z.in.slotsAt(c), 1), z.in.most())
}

// sizeKey is what a sizing is cached under: the model file's version and
// the load options that change its memory.
type sizeKey struct {
	Path, Version, Projector, Draft string
	NumBatch, NumGPU                int
}

// sizingFor returns the sizing of key's model, deciding it on first use.
// def and maxCtx are the model's context limits (contextLimits).
func (s *Scheduler) sizingFor(key Key, def, maxCtx int) (Sizing, error) {
	if !s.cfg.AutoSlots && !s.cfg.AutoCtx {
		return Sizing{Mode: "flags", Slots: s.cfg.Parallel, Context: def, Reason: "--parallel and --context-length"}, nil
	}
	sk := sizeKey{Path: key.Path, Version: key.Version, Projector: key.Projector, Draft: key.Draft, NumBatch: batchSize(key), NumGPU: key.NumGPU}
	if v, ok := s.sizes.Load(sk); ok {
		return v.(Sizing), nil
	}
	f, err := gguf.Open(key.Path)
	if err != nil {
		return Sizing{}, fmt.Errorf("load: %w", err)
	}
	// The estimate of no context at all: its total is the fixed part.
	e0, err := EstimateMemory(f, 0, s.cfg.KVType, batchSize(key))
	if err == nil && key.Projector != "" {
		err = e0.AddProjector(key.Projector)
	}
	if err == nil && key.Draft != "" {
		err = addDraft(&e0, key.Draft, 0, s.cfg.KVType, batchSize(key))
	}
	if err != nil {
		return Sizing{}, fmt.Errorf("load %s: %w", key.Path, err)
	}
	in, err := perToken(e0, s.cfg.KVType)
	if err != nil {
		return Sizing{}, fmt.Errorf("load %s: %w", key.Path, err)
	}
	in.target, in.floor = min(AutoTargetCtx, maxCtx), min(AutoMinCtx, maxCtx)
	if !s.cfg.AutoSlots {
		in.slots = s.cfg.Parallel
	}
	if !s.cfg.AutoCtx {
		in.ctx = def
	}
	where := s.placeForSizing(e0, &in, key.NumGPU)
	slots, ctx, why := chooseSizing(in)
	ctx = min(ctx, maxCtx)
	z := Sizing{
		Mode: "auto", Slots: slots, Context: ctx, KVBytesPerToken: in.kvPerToken,
		FreeBytes: in.free, BudgetBytes: in.budget(), Where: where, Reason: why, in: in,
	}
	slog.Info("sizing from memory", "model", key.Path, "slots", z.Slots, "context", z.Context,
		"kv_bytes_per_token", z.KVBytesPerToken, "where", where, "free_mib", in.free>>20,
		"fixed_mib", in.fixed>>20, "budget_mib", z.BudgetBytes>>20, "reason", why)
	s.sizes.Store(sk, z)
	return z, nil
}

// perToken fills the per-token costs of e (an estimate of no context).
func perToken(e Estimate, kvType string) (sizingInput, error) {
	per, ok := kvTypeSizes[strings.ToLower(kvType)]
	if !ok {
		return sizingInput{}, fmt.Errorf("unknown KV cache type %q", kvType)
	}
	var m sizeCalc
	layers := uint64(e.Layers)
	// Bytes per block of 32 elements, rounded up to whole bytes per token.
	// With a draft model (Estimate.AddDraft), its KV grows with the slots
	// and context too.
	kv := m.mul(m.add(m.mul(e.kvPerToken, layers), e.draftKVPerToken), uint64(per*32))
	in := sizingInput{kvPerToken: m.add(kv, 31) / 32}
	// The embedding context: one slot's context of f16 KV and a
	// micro-batch of that many tokens (Estimate.AddEmbedding).
	in.perCtxToken = m.add(m.mul(m.mul(e.kvPerToken, uint64(kvTypeSizes["f16"])), layers), e.actPerToken)
	if m.overflow {
		return sizingInput{}, fmt.Errorf("memory estimate overflows (KV bytes per token)")
	}
	return in, nil
}

// placeForSizing picks where the model goes and sets in.free and in.fixed
// to that memory's view; it returns its name. It takes s.mu to read
// what the loaded instances hold.
func (s *Scheduler) placeForSizing(e0 Estimate, in *sizingInput, numGPU int) string {
	devs, err := s.cfg.GPUs.Devices()
	if err != nil {
		devs = nil
	}
	host := s.hostAvailable()
	s.mu.Lock()
	var cpuUsed uint64
	for _, inst := range s.loaded {
		p := inst.Placement
		cpuUsed = satAdd(cpuUsed, p.EstimatedBytes-min(p.EstimatedBytes, p.EstimatedGPUBytes))
		if len(p.GPUs) == 0 {
			continue
		}
		share := p.EstimatedGPUBytes / uint64(len(p.GPUs))
		for i := range devs {
			for _, g := range p.GPUs {
				if devs[i].Index == g {
					devs[i].FreeBytes = satAdd(devs[i].FreeBytes, share)
				}
			}
		}
	}
	s.mu.Unlock()
	hostFree := min(s.cfg.MemoryBytes, satAdd(host, cpuUsed))
	var best gpu.Device
	var sum uint64
	for i := range devs {
		devs[i].FreeBytes = min(devs[i].FreeBytes, devs[i].TotalBytes)
		sum = satAdd(sum, devs[i].FreeBytes)
		if i == 0 || devs[i].FreeBytes > best.FreeBytes {
			best = devs[i]
		}
	}
	all := e0.Layers + 1
	// num_gpu n ≤ the layers keeps the rest, and its KV, on the host.
	if (numGPU < 0 || numGPU > e0.Layers) && len(devs) > 0 {
		gpuFixed := e0.GPUBytes(all)
		try := *in
		try.free, try.fixed = best.FreeBytes, gpuFixed
		if try.fitsMinimum() {
			*in = try
			return fmt.Sprintf("gpu %d", best.Index)
		}
		if len(devs) > 1 {
			var sc sizeCalc
			try.free = sum
			try.fixed = sc.add(gpuFixed, sc.mul(uint64(len(devs)-1), e0.ComputeBytes))
			if !sc.overflow && try.fitsMinimum() {
				*in = try
				return "gpus"
			}
		}
	}
	in.free, in.fixed, in.maxSlots = hostFree, e0.Total(), AutoMaxHostSlots
	return "host"
}

// satAdd adds, saturating at the largest uint64: a free-memory view
// past it is as good as infinite.
func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// hostAvailable is the host's free memory now: Config.FreeMemory, else
// MemAvailable, else Config.MemoryBytes.
func (s *Scheduler) hostAvailable() uint64 {
	if s.cfg.FreeMemory != nil {
		return s.cfg.FreeMemory()
	}
	if n, ok := availableMemory(); ok {
		return n
	}
	return s.cfg.MemoryBytes
}
