package api

import (
	"fmt"
	"math"
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
// window is window tokens. Load-time options are the operator's and are
// checked by CheckLoad.
func (o Options) CheckRequest(window int) error {
	errs := []error{
		intRange("num_predict", o.NumPredict, -2, math.MaxInt32),
		intRange("num_keep", o.NumKeep, -1, window),
		intRange("top_k", o.TopK, -1, math.MaxInt32),
		// Looking back past the window is harmless (and the default 64 may
		// exceed a small one); past both, llama.cpp would allocate for it.
		intRange("repeat_last_n", o.RepeatLastN, -1, max(window, DefaultOptions().RepeatLastN)),
		intRange("mirostat", o.Mirostat, 0, 2),
		intRange("stop", len(o.Stop), 0, MaxStops),
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, s := range o.Stop {
		if len(s) > MaxStopBytes {
			return &OptionError{Name: "stop", Value: fmt.Sprintf("a string of %d bytes", len(s)), Allowed: fmt.Sprintf("at most %d bytes each", MaxStopBytes)}
		}
	}
	floats := map[string]float32{
		"temperature": o.Temperature, "top_p": o.TopP, "min_p": o.MinP, "typical_p": o.TypicalP,
		"repeat_penalty": o.RepeatPenalty, "presence_penalty": o.PresencePenalty, "frequency_penalty": o.FrequencyPenalty,
		"mirostat_tau": o.MirostatTau, "mirostat_eta": o.MirostatEta,
	}
	for name, v := range floats {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return &OptionError{Name: name, Value: v, Allowed: "finite numbers"}
		}
	}
	return nil
}

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
