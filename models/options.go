package models

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// OptionType is the type of a model option's value.
type OptionType int

// The option types. A PARAMETER line's text is parsed as the option's
// type; in a params layer (JSON) an int is a number without fraction, a
// float any number, a bool true/false, a string list an array of strings.
const (
	OptionInt OptionType = iota + 1
	OptionFloat
	OptionBool
	OptionStringList // repeated PARAMETER lines accumulate ("stop")
)

// String describes the type for error messages ("an integer").
func (t OptionType) String() string {
	switch t {
	case OptionInt:
		return "an integer"
	case OptionFloat:
		return "a number"
	case OptionBool:
		return "a boolean"
	case OptionStringList:
		return "a string"
	}
	return "unknown"
}

// OptionSpec is one model option: its name, type, Ollama's default,
// whether it is load-time, and the range its integer values must be in.
// The option table is the one place these are written: the Modelfile
// PARAMETER parser and params layers (ParseOption, NormalizeOption,
// CheckParams) and the Ollama wire options (server/ollamaapi: DefaultOptions,
// Apply, CheckRequest) are all checked against it.
type OptionSpec struct {
	Name string
	Type OptionType
	// Default is Ollama's default (int, float64 or bool), nil for the
	// type's zero value. num_ctx 0 is the server's default context,
	// num_batch 0 the runner's default batch (engine/runner.DefaultBatch).
	Default any
	// LoadTime options need another model instance to change: they are
	// the operator's (server flags, Modelfile PARAMETER), and a request's
	// values for them are ignored (num_ctx only picks a window).
	LoadTime bool
	// NoOp options are accepted for compatibility and ignored: llama.cpp
	// has no such setting any more (vocab_only: the server never loads a
	// model without its weights).
	NoOp bool
	// Ranged integer options must be within Min..Max: what the engine
	// accepts (engine/limits.go), so that a Modelfile cannot store a
	// value every request to the model would then fail on — or, before
	// those checks, abort the server on. num_thread's bound is ggml's
	// hard limit; the server narrows it to four per CPU when it loads
	// the model.
	Ranged   bool
	Min, Max int
	// Window, for a per-request option, replaces Max in a request: the
	// bound then depends on the request's context window.
	Window WindowBound
}

// WindowBound is how a request's context window bounds an option.
type WindowBound int

const (
	// BoundMax: a request is bounded by Max, as a Modelfile is.
	BoundMax WindowBound = iota
	// BoundWindow: a request's value is at most its window.
	BoundWindow
	// BoundWindowOrDefault: at most the window or the default, whichever
	// is larger (looking back past the window is harmless, and the
	// default may exceed a small one; past both, llama.cpp would
	// allocate for it).
	BoundWindowOrDefault
)

// RequestMax is the upper bound of a per-request integer option in a
// request whose context window is window tokens.
func (o OptionSpec) RequestMax(window int) int {
	switch o.Window {
	case BoundWindow:
		return window
	case BoundWindowOrDefault:
		d, _ := o.Default.(int)
		return max(window, d)
	}
	return o.Max
}

// optionTable holds the option names Ollama knows (its api.Options and
// api.Runner, plus ones older Ollama versions wrote into Modelfiles and
// params layers: mirostat*, tfs_z, penalize_newline, use_mlock, ...),
// which PARAMETER and params layers may hold. The per-request integer
// options come in the order a request's are checked.
var optionTable = []OptionSpec{
	// Load-time (runner) options.
	{Name: "num_ctx", Type: OptionInt, LoadTime: true, Ranged: true, Min: 0, Max: 1 << 20},
	{Name: "num_batch", Type: OptionInt, LoadTime: true, Ranged: true, Min: 0, Max: math.MaxInt32},
	{Name: "num_gpu", Type: OptionInt, Default: -1, LoadTime: true, Ranged: true, Min: -1, Max: math.MaxInt32},
	{Name: "main_gpu", Type: OptionInt, LoadTime: true, Ranged: true, Min: 0, Max: 255},
	{Name: "use_mmap", Type: OptionBool, LoadTime: true},
	{Name: "use_mlock", Type: OptionBool, LoadTime: true},
	{Name: "num_thread", Type: OptionInt, LoadTime: true, Ranged: true, Min: 0, Max: 512},
	{Name: "vocab_only", Type: OptionBool, LoadTime: true, NoOp: true}, // never read: whole models are loaded
	// Sampling and prediction.
	{Name: "num_predict", Type: OptionInt, Default: -1, Ranged: true, Min: -2, Max: math.MaxInt32},
	// Speculative drafting: at most this many draft tokens per step; -1
	// the server's --draft-max, 0 none; never more than the server's.
	// The bound is engine/runner.MaxDraft.
	{Name: "draft_num_predict", Type: OptionInt, Default: -1, Ranged: true, Min: -1, Max: 64},
	{Name: "num_keep", Type: OptionInt, Default: 4, Ranged: true, Min: -1, Max: 1 << 20, Window: BoundWindow},
	{Name: "top_k", Type: OptionInt, Default: 40, Ranged: true, Min: -1, Max: math.MaxInt32},
	{Name: "repeat_last_n", Type: OptionInt, Default: 64, Ranged: true, Min: -1, Max: 1 << 20, Window: BoundWindowOrDefault},
	{Name: "mirostat", Type: OptionInt, Ranged: true, Min: 0, Max: 2},
	{Name: "seed", Type: OptionInt, Default: -1},
	{Name: "top_p", Type: OptionFloat, Default: 0.9},
	{Name: "min_p", Type: OptionFloat},
	{Name: "typical_p", Type: OptionFloat, Default: 1.0},
	{Name: "temperature", Type: OptionFloat, Default: 0.8},
	{Name: "repeat_penalty", Type: OptionFloat, Default: 1.1},
	{Name: "presence_penalty", Type: OptionFloat},
	{Name: "frequency_penalty", Type: OptionFloat},
	{Name: "mirostat_tau", Type: OptionFloat, Default: 5.0},
	{Name: "mirostat_eta", Type: OptionFloat, Default: 0.1},
	{Name: "stop", Type: OptionStringList},
	// Accepted for compatibility; llama.cpp has no such setting any more.
	{Name: "tfs_z", Type: OptionFloat, NoOp: true},
	{Name: "penalize_newline", Type: OptionBool, NoOp: true},
	{Name: "f16_kv", Type: OptionBool, LoadTime: true, NoOp: true},
	{Name: "numa", Type: OptionBool, LoadTime: true, NoOp: true},
	{Name: "low_vram", Type: OptionBool, LoadTime: true, NoOp: true},
	{Name: "logits_all", Type: OptionBool, LoadTime: true, NoOp: true},
}

// options indexes optionTable by name.
var options = func() map[string]OptionSpec {
	m := make(map[string]OptionSpec, len(optionTable))
	for _, o := range optionTable {
		if _, dup := m[o.Name]; dup {
			panic("models: option " + o.Name + " listed twice")
		}
		m[o.Name] = o
	}
	return m
}()

// OptionSpecs returns the option table, in its order.
func OptionSpecs() []OptionSpec { return slices.Clone(optionTable) }

// LookupOptionSpec returns a known option's entry in the option table.
func LookupOptionSpec(name string) (OptionSpec, bool) {
	o, ok := options[name]
	return o, ok
}

func checkBounds(name string, n int) error {
	if o := options[name]; o.Ranged && (n < o.Min || n > o.Max) {
		return fmt.Errorf("parameter %s: %d is out of range (%d..%d)", name, n, o.Min, o.Max)
	}
	return nil
}

// OptionNames lists every option name PARAMETER accepts, sorted.
func OptionNames() []string {
	out := make([]string, 0, len(options))
	for k := range options {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// LookupOption returns the type of a known option.
func LookupOption(name string) (OptionType, bool) {
	o, ok := options[name]
	return o.Type, ok
}

func unknownOption(name string) error {
	return fmt.Errorf("unknown parameter %q (known: %s)", name, strings.Join(OptionNames(), ", "))
}

// ParseOption parses the text of a PARAMETER value as the option's type:
// int, float64, bool or, for a string list, the string itself.
func ParseOption(name, value string) (any, error) {
	o, ok := options[name]
	if !ok {
		return nil, unknownOption(name)
	}
	v := strings.TrimSpace(value)
	switch o.Type {
	case OptionInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n != int64(int(n)) {
			return nil, fmt.Errorf("parameter %s: %q is not an integer", name, value)
		}
		if err := checkBounds(name, int(n)); err != nil {
			return nil, err
		}
		return int(n), nil
	case OptionFloat:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("parameter %s: %q is not a number", name, value)
		}
		return f, nil
	case OptionBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not a boolean (true or false)", name, value)
		}
		return b, nil
	}
	return value, nil
}

// NormalizeOption checks a value given as JSON (a params layer, the
// "parameters" of /api/create) and returns it typed as ParseOption does:
// int, float64, bool, or []string for a string list (a single string is a
// list of one). Strings holding a number or boolean are accepted for
// numeric and boolean options, as a Modelfile would write them.
func NormalizeOption(name string, v any) (any, error) {
	o, ok := options[name]
	if !ok {
		return nil, unknownOption(name)
	}
	t := o.Type
	bad := func() error { return fmt.Errorf("parameter %s: want %s, got %v (%T)", name, t, v, v) }
	if s, ok := v.(string); ok && t != OptionStringList {
		return ParseOption(name, s)
	}
	switch t {
	case OptionInt:
		switch n := v.(type) {
		case int:
			return n, checkBounds(name, n)
		case int64:
			return int(n), checkBounds(name, int(n))
		case float64:
			if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
				return nil, bad()
			}
			return int(n), checkBounds(name, int(n))
		}
	case OptionFloat:
		switch n := v.(type) {
		case float64:
			return n, nil
		case float32:
			// Through the shortest decimal text, so 0.7 stays 0.7.
			f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(n), 'g', -1, 32), 64)
			return f, nil
		case int:
			return float64(n), nil
		case int64:
			return float64(n), nil
		}
	case OptionBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case OptionStringList:
		switch l := v.(type) {
		case string:
			return []string{l}, nil
		case []string:
			return append([]string(nil), l...), nil
		case []any:
			out := make([]string, 0, len(l))
			for _, e := range l {
				s, ok := e.(string)
				if !ok {
					return nil, bad()
				}
				out = append(out, s)
			}
			return out, nil
		}
	}
	return nil, bad()
}

// CheckParams checks the known options of a stored model's parameters
// against their types and bounds; names it does not know are left to the
// caller (a manifest may carry parameters of a newer Ollama).
func CheckParams(m map[string]any) error {
	for _, k := range sortedKeys(m) {
		if _, known := options[k]; !known {
			continue
		}
		if _, err := NormalizeOption(k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

// NormalizeOptions applies NormalizeOption to every entry of m.
func NormalizeOptions(m map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for _, k := range sortedKeys(m) {
		v, err := NormalizeOption(k, m[k])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// FormatOption writes one option value as PARAMETER text; a string list
// gives one text per element.
func FormatOption(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			out = append(out, FormatOption(e)...)
		}
		return out
	case float64:
		return []string{strconv.FormatFloat(v, 'g', -1, 64)}
	case float32:
		return []string{strconv.FormatFloat(float64(v), 'g', -1, 32)}
	}
	return []string{fmt.Sprint(v)}
}

// ParamCommands turns options given as JSON (the "parameters" of
// /api/create) into PARAMETER commands, sorted by name, after checking
// them with NormalizeOption.
func ParamCommands(params map[string]any) ([]Command, error) {
	var out []Command
	for _, k := range sortedKeys(params) {
		v, err := NormalizeOption(k, params[k])
		if err != nil {
			return nil, err
		}
		for _, s := range FormatOption(v) {
			out = append(out, Command{Name: CmdParameter, Key: k, Value: s})
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
