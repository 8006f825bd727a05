package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tadpole-llm/tadpole/engine"
)

// AdapterSet is a request's LoRA adapters (issue 38): adapters loaded for
// the runner's model, each with its scale. A llama.cpp context applies one
// set to a whole decode, so the runner decodes the slots of one set per
// step, and the sets in use take turns, step by step (no set starves).
// A slot's cached prefix, and the prompt cache's entries, are keyed by the
// set they were computed under: a prefix computed under one set is never
// reused under another.
type AdapterSet struct {
	adapters []*engine.Adapter
	scales   []float32
	key      string
}

// NewAdapterSet is the set of adapters with scales (the same length).
// Adapters with a scale of 0 are left out (llama.cpp leaves them out), so
// a set of only zeros is the empty set: the base model.
func NewAdapterSet(adapters []*engine.Adapter, scales []float32) (AdapterSet, error) {
	if len(adapters) != len(scales) {
		return AdapterSet{}, fmt.Errorf("%d adapters and %d scales", len(adapters), len(scales))
	}
	var s AdapterSet
	var parts []string
	for i, a := range adapters {
		if scales[i] == 0 {
			continue
		}
		s.adapters = append(s.adapters, a)
		s.scales = append(s.scales, scales[i])
		parts = append(parts, fmt.Sprintf("%s@%g", a.Path(), scales[i]))
	}
	sort.Strings(parts)
	s.key = strings.Join(parts, ",")
	return s, nil
}

// Key names the set ("" for the base model).
func (s AdapterSet) Key() string { return s.key }

// Empty reports the base model's set.
func (s AdapterSet) Empty() bool { return s.key == "" }

// useAdapters makes the context apply set, unless it already does.
func (r *Runner) useAdapters(set AdapterSet) error {
	if r.adapterKey == set.key && r.adaptersSet {
		return nil
	}
	if err := r.ctx.SetAdapters(set.adapters, set.scales); err != nil {
		return err
	}
	r.adapterKey, r.adaptersSet = set.key, true
	return nil
}

// turnSet picks the adapter set whose slots decode this step: with one
// set with work (the usual case, the base model's), that one; with
// several, each in turn, round robin in the order of their keys.
func (r *Runner) turnSet() (AdapterSet, bool) {
	var sets []AdapterSet
	seen := map[string]bool{}
	for _, s := range r.slots {
		// Sets with work this step: a token to decode, or prompt tokens
		// (not a span: spanStep decodes those).
		work := s.req != nil && (s.hasPending || !s.prompted && s.spanAt(len(s.cache)) < 0)
		if !work || seen[s.req.Adapters.key] {
			continue
		}
		seen[s.req.Adapters.key] = true
		sets = append(sets, s.req.Adapters)
	}
	if len(sets) <= 1 {
		if len(sets) == 1 {
			return sets[0], true
		}
		return AdapterSet{}, false
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].key < sets[j].key })
	// The last turn's set keeps the context for up to adapterTurnSteps
	// steps while it has work (a set change makes llama.cpp re-plan the
	// graph); then the first set after it, wrapping.
	if r.turnSteps < adapterTurnSteps {
		for _, s := range sets {
			if s.key == r.lastTurn {
				r.turnSteps++
				return s, true
			}
		}
	}
	i := sort.Search(len(sets), func(i int) bool { return sets[i].key > r.lastTurn })
	if i == len(sets) {
		i = 0
	}
	r.lastTurn, r.turnSteps = sets[i].key, 1
	return sets[i], true
}

// adapterTurnSteps is how many steps in a row one adapter set decodes
// while other sets wait, when several have work.
const adapterTurnSteps = 8

// cacheKeyFor is the prompt cache's key of a sequence computed under the
// adapter set named key.
func (r *Runner) cacheKeyFor(key string) string {
	if key == "" {
		return r.key
	}
	return r.key + "|lora=" + key
}

// MaxLoadedAdapters bounds the adapters one runner's model holds: each
// stays loaded (its memory counted) until the model unloads.
const MaxLoadedAdapters = 64

// LoadedAdapter is an adapter the runner's model holds, as
// llama-server's /lora-adapters lists it: its id (the order it was
// loaded in), file, and the scale a request that names no adapters gets
// (SetScales; 0 until set).
type LoadedAdapter struct {
	ID              int
	Path            string
	Scale           float32
	*engine.Adapter // its Bytes: the memory of its tensors
}

// adapterRegistry is a runner's loaded adapters (under mu).
type adapterRegistry struct {
	mu     sync.Mutex
	loaded []*LoadedAdapter
	byPath map[string]*LoadedAdapter
}

// LoadAdapter returns the adapter at path for the runner's model,
// loading it on the loop the first time (llama.cpp registers an adapter
// with its model, which a decode reads: never beside one).
func (r *Runner) LoadAdapter(ctx context.Context, path string) (*LoadedAdapter, error) {
	r.adapterReg.mu.Lock()
	if a, ok := r.adapterReg.byPath[path]; ok {
		r.adapterReg.mu.Unlock()
		return a, nil
	}
	r.adapterReg.mu.Unlock()
	var la *LoadedAdapter
	var lerr error
	if err := r.Do(ctx, func() {
		reg := &r.adapterReg
		reg.mu.Lock()
		defer reg.mu.Unlock()
		if a, ok := reg.byPath[path]; ok { // loaded meanwhile
			la = a
			return
		}
		if len(reg.loaded) >= MaxLoadedAdapters {
			lerr = fmt.Errorf("the model already holds %d LoRA adapters, the most it may (unload it to free them)", MaxLoadedAdapters)
			return
		}
		a, err := r.model.LoadAdapter(path)
		if err != nil {
			lerr = err
			return
		}
		la = &LoadedAdapter{ID: len(reg.loaded), Path: path, Adapter: a}
		reg.loaded = append(reg.loaded, la)
		if reg.byPath == nil {
			reg.byPath = map[string]*LoadedAdapter{}
		}
		reg.byPath[path] = la
	}); err != nil {
		return nil, err
	}
	return la, lerr
}

// Adapters lists the loaded adapters by id.
func (r *Runner) Adapters() []LoadedAdapter {
	r.adapterReg.mu.Lock()
	defer r.adapterReg.mu.Unlock()
	out := make([]LoadedAdapter, len(r.adapterReg.loaded))
	for i, a := range r.adapterReg.loaded {
		out[i] = *a
	}
	return out
}

// AdapterByID is the loaded adapter with id.
func (r *Runner) AdapterByID(id int) (*LoadedAdapter, bool) {
	r.adapterReg.mu.Lock()
	defer r.adapterReg.mu.Unlock()
	if id < 0 || id >= len(r.adapterReg.loaded) {
		return nil, false
	}
	return r.adapterReg.loaded[id], true
}

// SetScales sets the scales of the adapters that requests naming none
// get (llama-server's POST /lora-adapters): id → scale, each id loaded,
// each scale finite within ±engine.MaxAdapterScale. Ids not named get 0
// (off), as llama-server's list replaces the whole set.
func (r *Runner) SetScales(scales map[int]float32) error {
	reg := &r.adapterReg
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for id, s := range scales {
		if id < 0 || id >= len(reg.loaded) {
			return fmt.Errorf("no LoRA adapter with id %d (%d loaded)", id, len(reg.loaded))
		}
		if s != s || s > engine.MaxAdapterScale || s < -engine.MaxAdapterScale {
			return fmt.Errorf("scale %v of adapter %d is out of range (-%d..%d)", s, id, engine.MaxAdapterScale, engine.MaxAdapterScale)
		}
	}
	for id, a := range reg.loaded {
		a.Scale = scales[id]
	}
	return nil
}

// DefaultAdapterSet is the set a request naming no adapters gets: every
// loaded adapter at its SetScales scale (none, until scales are set).
func (r *Runner) DefaultAdapterSet() AdapterSet {
	reg := &r.adapterReg
	reg.mu.Lock()
	var as []*engine.Adapter
	var ss []float32
	for _, a := range reg.loaded {
		as, ss = append(as, a.Adapter), append(ss, a.Scale)
	}
	reg.mu.Unlock()
	s, _ := NewAdapterSet(as, ss)
	return s
}

// AdapterBytes is the memory of the loaded adapters' tensors.
func (r *Runner) AdapterBytes() uint64 {
	r.adapterReg.mu.Lock()
	defer r.adapterReg.mu.Unlock()
	var n uint64
	for _, a := range r.adapterReg.loaded {
		n += a.Bytes
	}
	return n
}
