package models

import (
	"fmt"
	"math"
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

// options are the option names Ollama knows (its api.Options and
// api.Runner, plus ones older Ollama versions wrote into Modelfiles and
// params layers: mirostat*, tfs_z, penalize_newline, use_mlock, ...),
// which PARAMETER and params layers may hold.
var options = map[string]OptionType{
	// Load-time (runner) options.
	"num_ctx":    OptionInt,
	"num_batch":  OptionInt,
	"num_gpu":    OptionInt,
	"main_gpu":   OptionInt,
	"num_thread": OptionInt,
	"use_mmap":   OptionBool,
	"use_mlock":  OptionBool,
	"vocab_only": OptionBool,
	"numa":       OptionBool,
	"low_vram":   OptionBool,
	"f16_kv":     OptionBool,
	"logits_all": OptionBool,
	// Sampling and prediction.
	"num_keep":          OptionInt,
	"seed":              OptionInt,
	"num_predict":       OptionInt,
	"top_k":             OptionInt,
	"top_p":             OptionFloat,
	"min_p":             OptionFloat,
	"typical_p":         OptionFloat,
	"tfs_z":             OptionFloat,
	"repeat_last_n":     OptionInt,
	"temperature":       OptionFloat,
	"repeat_penalty":    OptionFloat,
	"presence_penalty":  OptionFloat,
	"frequency_penalty": OptionFloat,
	"mirostat":          OptionInt,
	"mirostat_tau":      OptionFloat,
	"mirostat_eta":      OptionFloat,
	"penalize_newline":  OptionBool,
	"stop":              OptionStringList,
}

// intBounds are the ranges of integer options a model may set: what the
// engine accepts (engine/limits.go), so that a Modelfile cannot store a
// value every request to the model would then fail on — or, before those
// checks, abort the server on. num_thread's bound here is ggml's hard
// limit; the server narrows it to four per CPU when it loads the model.
var intBounds = map[string][2]int{
	"num_ctx":       {0, 1 << 20},
	"num_batch":     {0, math.MaxInt32},
	"num_gpu":       {-1, math.MaxInt32},
	"main_gpu":      {0, 255},
	"num_thread":    {0, 512},
	"num_keep":      {-1, 1 << 20},
	"num_predict":   {-2, math.MaxInt32},
	"top_k":         {-1, math.MaxInt32},
	"repeat_last_n": {-1, 1 << 20},
	"mirostat":      {0, 2},
}

func checkBounds(name string, n int) error {
	if b, ok := intBounds[name]; ok && (n < b[0] || n > b[1]) {
		return fmt.Errorf("parameter %s: %d is out of range (%d..%d)", name, n, b[0], b[1])
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
	t, ok := options[name]
	return t, ok
}

func unknownOption(name string) error {
	return fmt.Errorf("unknown parameter %q (known: %s)", name, strings.Join(OptionNames(), ", "))
}

// ParseOption parses the text of a PARAMETER value as the option's type:
// int, float64, bool or, for a string list, the string itself.
func ParseOption(name, value string) (any, error) {
	t, ok := options[name]
	if !ok {
		return nil, unknownOption(name)
	}
	v := strings.TrimSpace(value)
	switch t {
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
	t, ok := options[name]
	if !ok {
		return nil, unknownOption(name)
	}
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
