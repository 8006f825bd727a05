package runner

import (
	"fmt"
	"sort"
	"strings"

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
	// The first set after the last turn's, wrapping.
	i := sort.Search(len(sets), func(i int) bool { return sets[i].key > r.lastTurn })
	if i == len(sets) {
		i = 0
	}
	r.lastTurn = sets[i].key
	return sets[i], true
}

// cacheKeyFor is the prompt cache's key of a sequence computed under the
// adapter set named key.
func (r *Runner) cacheKeyFor(key string) string {
	if key == "" {
		return r.key
	}
	return r.key + "|lora=" + key
}
