package ollamaapi

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/tadpole-llm/tadpole/models"
)

// Request limits: the bounds every dialect's options are checked against
// before a request reaches the engine (see engine/limits.go for the
// llama.cpp asserts behind them). Out of range is the client's 400,
// naming the option and its range; nothing is clamped silently.
const (
	// MaxStops bounds the stop strings of one request, MaxStopBytes each
	// one's length: every generated piece is matched against all of them.
	MaxStops     = 64
	MaxStopBytes = 4096
)

// OptionError is an option outside its allowed range.
type OptionError struct {
	Name    string
	Value   any
	Allowed string // e.g. "-1..4096"
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("option %s: %v is out of range (allowed: %s)", e.Name, e.Value, e.Allowed)
}

func intRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return &OptionError{Name: name, Value: v, Allowed: fmt.Sprintf("%d..%d", lo, hi)}
	}
	return nil
}

// CheckRequest checks the per-request options of a request whose context
// window is window tokens against the option table's ranges
// (models.OptionSpec.RequestMax), the stop strings against MaxStops and
// MaxStopBytes, and the numbers for being finite. Load-time options are
// the operator's: a request's are replaced by WithLoadOptions.
func (o Options) CheckRequest(window int) error {
	v := reflect.ValueOf(o)
	fields := requestFields()
	for _, f := range fields.ints {
		if err := intRange(f.spec.Name, int(v.Field(f.index).Int()), f.spec.Min, f.spec.RequestMax(window)); err != nil {
			return err
		}
	}
	if err := intRange("stop", len(o.Stop), 0, MaxStops); err != nil {
		return err
	}
	for _, s := range o.Stop {
		if len(s) > MaxStopBytes {
			return &OptionError{Name: "stop", Value: fmt.Sprintf("a string of %d bytes", len(s)), Allowed: fmt.Sprintf("at most %d bytes each", MaxStopBytes)}
		}
	}
	for _, f := range fields.floats {
		x := float32(v.Field(f.index).Float())
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return &OptionError{Name: f.spec.Name, Value: x, Allowed: "finite numbers"}
		}
	}
	return nil
}

type optionField struct {
	spec  models.OptionSpec
	index int // of the Options field with the option's json name
}

// requestFields are the Options fields CheckRequest checks: the ranged
// integer and the float options of the table that a request sets.
var requestFields = sync.OnceValue(func() (out struct{ ints, floats []optionField }) {
	index := map[string]int{}
	t := reflect.TypeFor[Options]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		index[name] = i
	}
	for _, spec := range models.OptionSpecs() {
		i, ok := index[spec.Name]
		if !ok {
			panic("api: Options has no field for option " + spec.Name)
		}
		switch {
		case spec.LoadTime || spec.NoOp:
		case spec.Type == models.OptionInt && spec.Ranged:
			out.ints = append(out.ints, optionField{spec, i})
		case spec.Type == models.OptionFloat:
			out.floats = append(out.floats, optionField{spec, i})
		}
	}
	return out
})

// WithLoadOptions returns o with the load-time options of from (the
// operator's), and the names of those o had set differently.
func (o Options) WithLoadOptions(from Options) (Options, []string) {
	var differ []string
	note := func(name string, same bool) {
		if !same {
			differ = append(differ, name)
		}
	}
	note("num_batch", o.NumBatch == from.NumBatch)
	note("num_gpu", o.NumGPU == from.NumGPU)
	note("main_gpu", o.MainGPU == from.MainGPU)
	note("use_mmap", (o.UseMMap == nil) == (from.UseMMap == nil) && (o.UseMMap == nil || *o.UseMMap == *from.UseMMap))
	note("use_mlock", o.UseMLock == from.UseMLock)
	note("num_thread", o.NumThread == from.NumThread)
	o.NumBatch, o.NumGPU, o.MainGPU, o.UseMMap, o.UseMLock, o.NumThread =
		from.NumBatch, from.NumGPU, from.MainGPU, from.UseMMap, from.UseMLock, from.NumThread
	return o, differ
}
