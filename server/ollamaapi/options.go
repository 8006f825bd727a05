package ollamaapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tadpole-llm/tadpole/models"
)

// Options are Ollama's model options, with defaults applied. Their names,
// types, defaults and ranges are the option table's (models.OptionSpecs),
// which has an entry for each field's json name. Options llama.cpp no
// longer has (tfs_z, penalize_newline, f16_kv, numa, low_vram,
// logits_all) are accepted and ignored.
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
	DraftNumPredict  int      `json:"draft_num_predict"`
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

// DefaultOptions are Ollama's defaults, as the option table
// (models.OptionSpecs) gives them. NumCtx 0 means "the server's default
// context" (see the serve flags), NumBatch 0 "the runner's default batch"
// (engine/runner.DefaultBatch).
func DefaultOptions() Options { return defaultOptions() }

var defaultOptions = sync.OnceValue(func() Options {
	defaults := map[string]any{}
	for _, spec := range models.OptionSpecs() {
		if spec.Default != nil {
			defaults[spec.Name] = spec.Default
		}
	}
	var o Options
	if _, err := o.Apply(defaults); err != nil {
		panic("api: the option table's defaults do not fit Options: " + err.Error())
	}
	return o
})

// Apply sets the options present in m (an "options" object) on o.
// A value of the wrong type is an error naming the option; unknown
// options are returned so the caller can log them.
func (o *Options) Apply(m map[string]any) (unknown []string, err error) {
	if len(m) == 0 {
		return nil, nil
	}
	for k, v := range m {
		spec, known := models.LookupOptionSpec(k)
		if !known {
			unknown = append(unknown, k)
			continue
		}
		if v == nil {
			continue
		}
		if str, ok := v.(string); ok && spec.Type == models.OptionStringList {
			v = []string{str} // one stop string given without a list
		}
		b, _ := json.Marshal(map[string]any{k: v})
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if err := dec.Decode(o); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fmt.Errorf("invalid option %q: expected %s, got %s", k, wireType(spec.Type), te.Value)
			}
			return nil, fmt.Errorf("invalid option %q: %v", k, err)
		}
	}
	sort.Strings(unknown)
	return unknown, nil
}

// wireType describes an option's JSON type for error messages.
func wireType(t models.OptionType) string {
	if t == models.OptionStringList {
		return "an array of strings"
	}
	return t.String()
}
