package infer

import (
	"errors"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
)

// What the Ollama dialect's model management reads of the engine and the
// scheduler (/api/ps, /api/delete, /api/create's architecture check,
// /api/version) goes through here: a dialect imports neither
// (TestDialectsAreThin). Quantization is models/quantize's.

// Loaded is a loaded model instance, as /api/ps lists it.
type Loaded struct {
	Name string // canonical model name
	Path string // its file
	// NumCtx is the per-slot context.
	NumCtx int
	// Requests are the requests holding it.
	Requests int
	// ExpiresAt is when it unloads if it stays idle (zero: busy, or
	// never).
	ExpiresAt time.Time
	LoadedAt  time.Time
	// Size and SizeVRAM are its estimated bytes, in all and on GPUs.
	Size, SizeVRAM int64
	// Processor is where it runs: "100% CPU", "48%/52% CPU/GPU".
	Processor string
	// Placement and Sizing are how it was placed and sized (their
	// JSON is the answer's).
	Placement, Sizing any
	SlotsBusy         int
	SlotsTotal        int
	// Adapters are the LoRA adapters loaded on it (lora.go), whose
	// memory Size counts.
	Adapters []LoRAAdapter
	// QueueDepth is the requests waiting for one of its slots.
	QueueDepth int
	// DraftModel is the file of the draft model drafting for it.
	DraftModel string
}

// Loaded lists the loaded instances (not those still loading).
func (s *Service) Loaded() []Loaded {
	var out []Loaded
	for _, in := range s.Sched.Status() {
		busy, total := in.Runner.Slots()
		p := in.Placement
		ab := int64(in.Runner.AdapterBytes())
		vram := int64(p.EstimatedGPUBytes)
		if vram > 0 {
			vram += ab
		}
		out = append(out, Loaded{
			Name: in.Name, Path: in.Key.Path, NumCtx: in.NumCtx, Requests: in.Requests, ExpiresAt: in.ExpiresAt,
			LoadedAt: in.LoadedAt, Size: int64(p.EstimatedBytes) + ab, SizeVRAM: vram, Adapters: in.Runner.Adapters(),
			Processor: p.Processor(), Placement: p, Sizing: in.Sizing, SlotsBusy: busy, SlotsTotal: total,
			QueueDepth: in.Runner.Waiting(), DraftModel: in.Key.Draft,
		})
	}
	return out
}

// KeepAlive is how long an idle model stays loaded by default (negative:
// forever).
func (s *Service) KeepAlive() time.Duration { return s.Sched.Config().KeepAlive }

// CacheStats are the prompt cache's sizes and counters.
type CacheStats = runner.CacheStats

// PromptCache is the prompt cache's statistics; false without one.
func (s *Service) PromptCache() (CacheStats, bool) {
	c := s.Sched.Config().PromptCache
	if c == nil {
		return CacheStats{}, false
	}
	return c.Stats(), true
}

// Unload unloads the idle instances of the model file at path. When
// requests hold one it unloads nothing and returns how many hold it.
func (s *Service) Unload(path string) (requests int) {
	for _, st := range s.Sched.Status() {
		if st.Key.Path == path && st.Requests > 0 {
			return st.Requests
		}
	}
	s.Sched.Unload(path)
	return 0
}

// UnsupportedArchitecture is the engine's refusal of the model GGUF at
// path for its architecture, or nil (other faults show when it loads).
func UnsupportedArchitecture(path string) error {
	var ae *engine.ArchitectureError
	if err := engine.CheckArchitecture(path); errors.As(err, &ae) {
		return ae
	}
	return nil
}

// Version is Tadpole's version (set at build time).
func Version() string { return engine.Version }
