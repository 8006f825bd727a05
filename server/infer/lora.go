package infer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// MaxLoRAScale bounds a LoRA adapter's scale (engine.MaxAdapterScale).
const MaxLoRAScale = engine.MaxAdapterScale

// LoRA names a LoRA adapter and its scale for one request (issue 38): by
// ID, the adapter's id on the model's instance (GET /lora-adapters, as
// llama-server numbers them), or by Name, a model of the store made with
// ADAPTER over the same base model (its adapters, each at Scale). Scale 0
// turns an adapter off for the request.
type LoRA struct {
	ID    *int
	Name  string
	Scale float32
}

// adapterSet resolves the adapters a request runs with on in: the
// requested model's own (its Modelfile's ADAPTER lines, at scale 1), then
// the request's LoRA list over them; with neither, the scales set for the
// instance (POST /lora-adapters; none until set). Adapters load on the
// instance's model on first use and stay loaded with it, shared by every
// model of that base.
func (s *Service) adapterSet(ctx context.Context, in *Instance, req *Request) (runner.AdapterSet, error) {
	if len(in.Entry.Adapters) == 0 && req.LoRA == nil {
		return in.si.Runner.DefaultAdapterSet(), nil
	}
	var order []*engine.Adapter
	scale := map[*engine.Adapter]float32{}
	add := func(a *engine.Adapter, sc float32) {
		if _, ok := scale[a]; !ok {
			order = append(order, a)
		}
		scale[a] = sc
	}
	load := func(path string) (*engine.Adapter, error) {
		a, err := in.si.Runner.LoadAdapter(ctx, path)
		if errors.Is(err, engine.ErrAdapter) {
			return nil, Errorf(BadRequest, "model %q: %v", req.Model, err)
		}
		if err != nil {
			return nil, Errorf(LoadFailed, "model %q: LoRA adapter: %v", req.Model, err)
		}
		return a.Adapter, nil
	}
	for _, p := range in.Entry.Adapters {
		a, err := load(p)
		if err != nil {
			return runner.AdapterSet{}, err
		}
		add(a, 1)
	}
	for i, l := range req.LoRA {
		if math.IsNaN(float64(l.Scale)) || math.Abs(float64(l.Scale)) > engine.MaxAdapterScale {
			return runner.AdapterSet{}, paramErrorf("lora", "lora[%d].scale %v is out of range (-%d..%d)", i, l.Scale, engine.MaxAdapterScale, engine.MaxAdapterScale)
		}
		switch {
		case l.ID != nil && l.Name != "":
			return runner.AdapterSet{}, paramErrorf("lora", "lora[%d] names both an id and a name; give one", i)
		case l.ID != nil:
			a, ok := in.si.Runner.AdapterByID(*l.ID)
			if !ok {
				return runner.AdapterSet{}, paramErrorf("lora", "lora[%d]: model %q has no LoRA adapter with id %d (%d loaded: GET /lora-adapters)", i, req.Model, *l.ID, len(in.si.Runner.Adapters()))
			}
			add(a.Adapter, l.Scale)
		case l.Name != "":
			e, err := s.resolve(l.Name)
			if err != nil {
				return runner.AdapterSet{}, paramErrorf("lora", "lora[%d]: %v", i, err)
			}
			if len(e.Adapters) == 0 {
				return runner.AdapterSet{}, paramErrorf("lora", "lora[%d]: model %q has no LoRA adapter (ADAPTER)", i, l.Name)
			}
			if e.Path != in.Entry.Path {
				return runner.AdapterSet{}, paramErrorf("lora", "lora[%d]: the adapter of %q is for another base model than %q's", i, l.Name, req.Model)
			}
			for _, p := range e.Adapters {
				a, err := load(p)
				if err != nil {
					return runner.AdapterSet{}, err
				}
				add(a, l.Scale)
			}
		default:
			return runner.AdapterSet{}, paramErrorf("lora", "lora[%d] names no adapter: give an id or a name", i)
		}
	}
	if len(order) > engine.MaxAdapters {
		return runner.AdapterSet{}, paramErrorf("lora", "%d LoRA adapters at once; at most %d", len(order), engine.MaxAdapters)
	}
	scales := make([]float32, len(order))
	for i, a := range order {
		scales[i] = scale[a]
	}
	return runner.NewAdapterSet(order, scales)
}

// loraJSON is one element of a request's "lora" list, as llama-server
// takes it ({"id": 0, "scale": 0.5}) or by name ({"name": "pirate",
// "scale": 1}); a missing scale is 1.
type loraJSON struct {
	ID    *int     `json:"id"`
	Name  string   `json:"name"`
	Scale *float64 `json:"scale"`
}

// ParseLoRA reads a request's "lora" field (absent or null: nil, the
// model's defaults; [] runs with no adapter at all).
func ParseLoRA(raw json.RawMessage) ([]LoRA, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []loraJSON
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, paramErrorf("lora", `lora must be a list of {"id": N, "scale": S} or {"name": "model", "scale": S}: %v`, err)
	}
	if len(list) > engine.MaxAdapters {
		return nil, paramErrorf("lora", "lora names %d adapters; at most %d", len(list), engine.MaxAdapters)
	}
	out := make([]LoRA, 0, len(list))
	for i, l := range list {
		sc := 1.0
		if l.Scale != nil {
			sc = *l.Scale
		}
		if math.IsNaN(sc) || math.Abs(sc) > engine.MaxAdapterScale {
			return nil, paramErrorf("lora", "lora[%d].scale %v is out of range (-%d..%d)", i, sc, engine.MaxAdapterScale, engine.MaxAdapterScale)
		}
		out = append(out, LoRA{ID: l.ID, Name: l.Name, Scale: float32(sc)})
	}
	return out, nil
}

// LoRAFromOptions takes "lora" out of an Ollama options object (Ollama
// has no field for per-request adapters; Tadpole reads it there): the
// options without it, and the list.
func LoRAFromOptions(m map[string]any) (map[string]any, []LoRA, error) {
	v, ok := m["lora"]
	if !ok {
		return m, nil, nil
	}
	rest := make(map[string]any, len(m)-1)
	for k, x := range m {
		if k != "lora" {
			rest[k] = x
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, nil, paramErrorf("lora", "options.lora: %v", err)
	}
	l, err := ParseLoRA(raw)
	return rest, l, err
}

// LoRAAdapter is an adapter loaded on a model's instance, as
// /lora-adapters lists it.
type LoRAAdapter = runner.LoadedAdapter

// LoRAAdapters lists the adapters loaded on model's instance (loading
// the model if it is not), by id.
func (s *Service) LoRAAdapters(ctx context.Context, model string) ([]LoRAAdapter, error) {
	in, err := s.Acquire(ctx, model, ollamaapi.DefaultOptions(), nil)
	if err != nil {
		return nil, err
	}
	defer in.Release()
	return in.si.Runner.Adapters(), nil
}

// SetLoRAScales sets the scales requests to model that name no adapters
// get (id → scale; llama-server's POST /lora-adapters).
func (s *Service) SetLoRAScales(ctx context.Context, model string, scales map[int]float32) ([]LoRAAdapter, error) {
	in, err := s.Acquire(ctx, model, ollamaapi.DefaultOptions(), nil)
	if err != nil {
		return nil, err
	}
	defer in.Release()
	if err := in.si.Runner.SetScales(scales); err != nil {
		return nil, paramErrorf("lora", "%v", err)
	}
	return in.si.Runner.Adapters(), nil
}

// LoadLoRA loads the adapters of the store's model name (made with
// ADAPTER over model's base) onto model's instance while it serves, and
// lists the instance's adapters.
func (s *Service) LoadLoRA(ctx context.Context, model, name string) ([]LoRAAdapter, error) {
	in, err := s.Acquire(ctx, model, ollamaapi.DefaultOptions(), nil)
	if err != nil {
		return nil, err
	}
	defer in.Release()
	req := &Request{Model: model, LoRA: []LoRA{{Name: name, Scale: 1}}}
	if _, err := s.adapterSet(ctx, in, req); err != nil {
		return nil, err
	}
	return in.si.Runner.Adapters(), nil
}
