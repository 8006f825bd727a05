package ollamaapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models"
)

// field returns the Options field holding the option name.
func field(t *testing.T, o *Options, name string) reflect.Value {
	t.Helper()
	v := reflect.ValueOf(o).Elem()
	for i := range v.NumField() {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ","); tag == name {
			return v.Field(i)
		}
	}
	t.Fatalf("Options has no field for option %s", name)
	return reflect.Value{}
}

// TestOptionTableFields checks that Options and the option table name the
// same options with the same types, and that DefaultOptions are the
// table's defaults (Ollama's).
func TestOptionTableFields(t *testing.T) {
	names := map[string]bool{}
	defaults := DefaultOptions()
	for _, spec := range models.OptionSpecs() {
		names[spec.Name] = true
		f := field(t, &defaults, spec.Name)
		want := map[models.OptionType][]reflect.Kind{
			models.OptionInt:        {reflect.Int},
			models.OptionFloat:      {reflect.Float32},
			models.OptionBool:       {reflect.Bool, reflect.Pointer},
			models.OptionStringList: {reflect.Slice},
		}[spec.Type]
		if !contains(want, f.Kind()) {
			t.Errorf("option %s is %s in the table but a %s field of Options", spec.Name, spec.Type, f.Type())
		}
		// The default, through JSON as a client would see it.
		got, _ := json.Marshal(f.Interface())
		def := spec.Default
		if def == nil {
			def = reflect.Zero(f.Type()).Interface()
		}
		wantJSON, _ := json.Marshal(def)
		if f.Kind() == reflect.Float32 {
			wantJSON, _ = json.Marshal(float32(reflect.ValueOf(def).Convert(reflect.TypeFor[float64]()).Float()))
		}
		if string(got) != string(wantJSON) {
			t.Errorf("DefaultOptions().%s = %s, the table's default is %s", spec.Name, got, wantJSON)
		}
	}
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !names[name] {
			t.Errorf("Options.%s (%s) is not in the option table", typ.Field(i).Name, name)
		}
	}
	// Ollama's defaults, written out once more so that a slip in the
	// table shows here; num_batch 0 is the runner's (runner.DefaultBatch),
	// draft_num_predict -1 the server's --draft-max (Ollama's is 4).
	want := Options{NumGPU: -1, NumKeep: 4, Seed: -1, NumPredict: -1, DraftNumPredict: -1, TopK: 40, TopP: 0.9, TypicalP: 1.0,
		RepeatLastN: 64, Temperature: 0.8, RepeatPenalty: 1.1, MirostatTau: 5.0, MirostatEta: 0.1}
	if !reflect.DeepEqual(defaults, want) {
		t.Errorf("DefaultOptions() = %+v\nwant %+v", defaults, want)
	}
}

func contains[T comparable](l []T, v T) bool {
	for _, e := range l {
		if e == v {
			return true
		}
	}
	return false
}

// wrongTyped are JSON values of the wrong type for each option type. A
// string holding a number is not among them: a Modelfile's PARAMETER is
// text, parsed as the option's type, while wire options are typed JSON.
var wrongTyped = map[models.OptionType][]any{
	models.OptionInt:        {1.5, true, "many", []any{1.0}, map[string]any{}},
	models.OptionFloat:      {true, "warm", []any{1.0}, map[string]any{}},
	models.OptionBool:       {1.0, "yes", []any{true}, map[string]any{}},
	models.OptionStringList: {1.0, true, []any{"a", 1.0}, map[string]any{}},
}

// TestOptionTableAgreement walks the option table and checks that the
// Modelfile parser (models.NormalizeOption, as /api/create's parameters
// and params layers are checked) and the wire options (Apply, then
// CheckRequest or WithLoadOptions) refuse the same values: the wrong
// types, and each ranged integer's min-1 and max+1.
func TestOptionTableAgreement(t *testing.T) {
	// The largest window a model may give a request: num_ctx's bound.
	ctx, _ := models.LookupOptionSpec("num_ctx")
	window := ctx.Max
	for _, spec := range models.OptionSpecs() {
		for _, v := range wrongTyped[spec.Type] {
			if got, err := models.NormalizeOption(spec.Name, v); err == nil {
				t.Errorf("models.NormalizeOption(%s, %#v) = %v, want an error", spec.Name, v, got)
			}
			o := DefaultOptions()
			_, err := o.Apply(map[string]any{spec.Name: v})
			want := fmt.Sprintf("invalid option %q: expected %s", spec.Name, wireType(spec.Type))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Apply(%s: %#v) = %v, want %q", spec.Name, v, err, want)
			}
		}
		if spec.Type == models.OptionFloat && !spec.NoOp {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				if _, err := models.ParseOption(spec.Name, fmt.Sprint(bad)); err == nil {
					t.Errorf("models.ParseOption(%s, %v) accepted it", spec.Name, bad)
				}
				o := DefaultOptions()
				field(t, &o, spec.Name).SetFloat(bad)
				var oe *OptionError
				if err := o.CheckRequest(window); !errors.As(err, &oe) || oe.Name != spec.Name {
					t.Errorf("%s %v: CheckRequest = %v, want an OptionError naming it", spec.Name, bad, err)
				}
			}
		}
		if !spec.Ranged {
			continue
		}
		if spec.Type != models.OptionInt || spec.Min > spec.Max {
			t.Fatalf("option %s: a range needs an integer option and min <= max", spec.Name)
		}
		for _, n := range []int{spec.Min - 1, spec.Min, spec.Max, spec.Max + 1} {
			in := n >= spec.Min && n <= spec.Max
			_, modelErr := models.NormalizeOption(spec.Name, float64(n))
			if (modelErr == nil) != in {
				t.Errorf("models.NormalizeOption(%s, %d) = %v; in range %d..%d: %v", spec.Name, n, modelErr, spec.Min, spec.Max, in)
			}
			o := DefaultOptions()
			if _, err := o.Apply(map[string]any{spec.Name: float64(n)}); err != nil {
				t.Errorf("Apply(%s: %d) = %v; the type is right", spec.Name, n, err)
				continue
			}
			switch {
			case spec.Name == "num_ctx":
				// A request's num_ctx picks a window, checked by the
				// scheduler against the model and --max-ctx (sched.Window).
			case spec.LoadTime:
				// A request's load-time option never reaches the engine:
				// the operator's replaces it.
				operator := DefaultOptions()
				op := field(t, &operator, spec.Name).Int()
				got, differ := o.WithLoadOptions(operator)
				if field(t, &got, spec.Name).Int() != op || int64(n) != op && !contains(differ, spec.Name) {
					t.Errorf("WithLoadOptions kept the request's %s %d (ignored: %v)", spec.Name, n, differ)
				}
			default:
				err := o.CheckRequest(window)
				var oe *OptionError
				if in && err != nil || !in && (!errors.As(err, &oe) || oe.Name != spec.Name) {
					t.Errorf("CheckRequest(%s %d) = %v; in range %d..%d: %v", spec.Name, n, err, spec.Min, spec.Max, in)
				}
				if !in && oe != nil && oe.Allowed != fmt.Sprintf("%d..%d", spec.Min, spec.Max) {
					t.Errorf("CheckRequest(%s %d) allows %s, the table %d..%d", spec.Name, n, oe.Allowed, spec.Min, spec.Max)
				}
			}
		}
	}
}

// TestOptionTableEngineLimits checks the table's ranges against the
// engine's last-line checks (engine/limits.go): a value the table allows
// must not be one the engine refuses.
func TestOptionTableEngineLimits(t *testing.T) {
	within := map[string][2]int64{
		"num_ctx":       {0, engine.MaxContext},
		"num_batch":     {0, engine.MaxContext},
		"num_thread":    {0, engine.MaxThreads},
		"num_gpu":       {-1, math.MaxInt32},
		"main_gpu":      {0, math.MaxInt32},
		"top_k":         {math.MinInt32, math.MaxInt32},
		"repeat_last_n": {-1, engine.MaxRepeatLastN},
		"mirostat":      {0, 2},
	}
	for name, lim := range within {
		spec, ok := models.LookupOptionSpec(name)
		if !ok || !spec.Ranged {
			t.Errorf("option %s has no range in the table", name)
			continue
		}
		if int64(spec.Min) < lim[0] || int64(spec.Max) > lim[1] {
			t.Errorf("option %s: the table allows %d..%d, the engine %d..%d", name, spec.Min, spec.Max, lim[0], lim[1])
		}
	}
}

// TestCheckRequestWindow checks the bounds a request's window sets.
func TestCheckRequestWindow(t *testing.T) {
	tests := []struct {
		opts    map[string]any
		window  int
		allowed string
	}{
		{map[string]any{"num_keep": 101.0}, 100, "-1..100"},
		{map[string]any{"num_keep": 100.0}, 100, ""},
		{map[string]any{"repeat_last_n": 64.0}, 16, ""}, // the default past a small window
		{map[string]any{"repeat_last_n": 65.0}, 16, "-1..64"},
		{map[string]any{"repeat_last_n": 101.0}, 100, "-1..100"},
		{map[string]any{"stop": make([]any, MaxStops+1)}, 100, "0..64"},
	}
	for _, tt := range tests {
		o := DefaultOptions()
		if s, ok := tt.opts["stop"].([]any); ok {
			for i := range s {
				s[i] = "x"
			}
		}
		if _, err := o.Apply(tt.opts); err != nil {
			t.Fatal(err)
		}
		err := o.CheckRequest(tt.window)
		var oe *OptionError
		if tt.allowed == "" && err != nil || tt.allowed != "" && (!errors.As(err, &oe) || oe.Allowed != tt.allowed) {
			t.Errorf("CheckRequest(%v, window %d) = %v, want allowed %q", tt.opts, tt.window, err, tt.allowed)
		}
	}
}
