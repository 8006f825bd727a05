package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Options are Ollama's model options, with defaults applied. Options
// llama.cpp no longer has (tfs_z, penalize_newline, f16_kv, numa,
// low_vram, logits_all) are accepted and ignored.
type Options struct {
	// Load-time options: a different value needs another model instance.
	NumCtx    int   `json:"num_ctx"`
	NumBatch  int   `json:"num_batch"`
	NumGPU    int   `json:"num_gpu"`
	MainGPU   int   `json:"main_gpu"`
	UseMMap   *bool `json:"use_mmap,omitempty"`
	UseMLock  bool  `json:"use_mlock"`
	NumThread int   `json:"num_thread"`
	VocabOnly bool  `json:"vocab_only"`

	// Per-request options.
	NumKeep          int      `json:"num_keep"`
	Seed             int      `json:"seed"`
	NumPredict       int      `json:"num_predict"`
	TopK             int      `json:"top_k"`
	TopP             float32  `json:"top_p"`
	MinP             float32  `json:"min_p"`
	TypicalP         float32  `json:"typical_p"`
	RepeatLastN      int      `json:"repeat_last_n"`
	Temperature      float32  `json:"temperature"`
	RepeatPenalty    float32  `json:"repeat_penalty"`
	PresencePenalty  float32  `json:"presence_penalty"`
	FrequencyPenalty float32  `json:"frequency_penalty"`
	Mirostat         int      `json:"mirostat"`
	MirostatTau      float32  `json:"mirostat_tau"`
	MirostatEta      float32  `json:"mirostat_eta"`
	Stop             []string `json:"stop"`

	// Accepted for compatibility; llama.cpp has no such setting any more.
	TFSZ            float32 `json:"tfs_z"`
	PenalizeNewline bool    `json:"penalize_newline"`
	F16KV           bool    `json:"f16_kv"`
	Numa            bool    `json:"numa"`
	LowVRAM         bool    `json:"low_vram"`
	LogitsAll       bool    `json:"logits_all"`
}

// DefaultOptions are Ollama's defaults. NumCtx 0 means "the server's
// default context" (see the serve flags).
func DefaultOptions() Options {
	return Options{
		NumBatch:      512,
		NumGPU:        -1,
		NumKeep:       4,
		Seed:          -1,
		NumPredict:    -1,
		TopK:          40,
		TopP:          0.9,
		TypicalP:      1.0,
		RepeatLastN:   64,
		Temperature:   0.8,
		RepeatPenalty: 1.1,
		MirostatTau:   5.0,
		MirostatEta:   0.1,
	}
}

// noOps are the options that are accepted and ignored.
var noOps = map[string]bool{"tfs_z": true, "penalize_newline": true, "f16_kv": true, "numa": true, "low_vram": true, "logits_all": true}

// Apply sets the options present in m (an "options" object) on o.
// A value of the wrong type is an error naming the option; unknown
// options are returned so the caller can log them.
func (o *Options) Apply(m map[string]any) (unknown []string, err error) {
	if len(m) == 0 {
		return nil, nil
	}
	known := map[string]bool{}
	for _, f := range jsonFields(o) {
		known[f] = true
	}
	for k, v := range m {
		if !known[k] {
			unknown = append(unknown, k)
			continue
		}
		if v == nil {
			continue
		}
		if str, ok := v.(string); ok && k == "stop" {
			v = []string{str} // one stop string given without a list
		}
		b, _ := json.Marshal(map[string]any{k: v})
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if err := dec.Decode(o); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fmt.Errorf("invalid option %q: expected %s, got %s", k, kindName(te.Type.Kind().String()), te.Value)
			}
			return nil, fmt.Errorf("invalid option %q: %v", k, err)
		}
	}
	sort.Strings(unknown)
	return unknown, nil
}

func kindName(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "bool", k == "ptr":
		return "a boolean"
	case k == "slice":
		return "an array of strings"
	}
	return k
}

// IsNoOp reports whether an option is accepted only for compatibility.
func IsNoOp(name string) bool { return noOps[name] }

func jsonFields(v any) []string {
	b, _ := json.Marshal(v)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	out := make([]string, 0, len(m)+1)
	for k := range m {
		out = append(out, k)
	}
	return append(out, "use_mmap")
}
