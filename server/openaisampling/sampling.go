// Package openaisampling maps OpenAI's sampling fields (temperature,
// top_p, the frequency and presence penalties, stop, seed, logit_bias)
// onto the generation's options, and sets OpenAI's defaults where they
// differ from Ollama's: the same way for every door that takes
// OpenAI-style requests, so one request samples the same whichever door
// it came through: OpenAI's chat and completions (server/openai), the
// Responses API (server/responses), Anthropic's Messages
// (server/anthropic) and Anura's chat (server/anura). It was
// infer.OpenAISampling: server/infer speaks no API's vocabulary. Errors
// are infer.ParamErrors naming the field, in OpenAI's words.
package openaisampling

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

func paramErrorf(param, format string, args ...any) *infer.ParamError {
	return &infer.ParamError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// Defaults sets OpenAI's sampling defaults where they differ from
// Ollama's: temperature 1, top_p 1, no repeat penalty. top_k stays at
// Ollama's 40, as on Ollama's and llama-server's OpenAI endpoints. Every
// door that takes OpenAI-style requests starts from them (then the model's
// parameters, then the request's fields), so one request samples the same
// whichever door it came through.
func Defaults(o *ollamaapi.Options) {
	o.Temperature, o.TopP, o.RepeatPenalty = 1, 1, 1
}

// Fields are OpenAI's sampling fields, mapped onto Ollama's
// options the same way for OpenAI's chat and completions, Open WebUI's
// chat and Anura's chat.
type Fields struct {
	Temperature      *float64
	TopP             *float64
	FrequencyPenalty *float64
	PresencePenalty  *float64
	Stop             json.RawMessage // null, a string or an array of strings
	Seed             *int64
	LogitBias        map[string]float64 // token id → -100..100
}

// Apply checks the fields against OpenAI's ranges and sets them on opts.
// top_p 0 means "only the most likely token" (the engine reads 0 as off).
func (s Fields) Apply(opts *ollamaapi.Options) error {
	for _, r := range []struct {
		param  string
		v      *float64
		lo, hi float64
	}{
		{"temperature", s.Temperature, 0, 2}, {"top_p", s.TopP, 0, 1},
		{"frequency_penalty", s.FrequencyPenalty, -2, 2}, {"presence_penalty", s.PresencePenalty, -2, 2},
	} {
		if r.v != nil && (*r.v < r.lo || *r.v > r.hi) {
			return paramErrorf(r.param, "Invalid '%s': %g. Expected a value between %g and %g.", r.param, *r.v, r.lo, r.hi)
		}
	}
	stop, set, err := parseStop(s.Stop)
	if err != nil {
		return err
	}
	for k, v := range s.LogitBias {
		if _, err := tokenID(k); err != nil {
			return paramErrorf("logit_bias", "Invalid key in 'logit_bias': %q is not a token id.", k)
		}
		if v < -100 || v > 100 {
			return paramErrorf("logit_bias", "Invalid value for 'logit_bias' token %s: %g. Expected a value between -100 and 100.", k, v)
		}
	}
	if s.Temperature != nil {
		opts.Temperature = float32(*s.Temperature)
	}
	if s.TopP != nil {
		opts.TopP = float32(*s.TopP)
		if opts.TopP == 0 {
			opts.TopP = 1e-6
		}
	}
	if s.FrequencyPenalty != nil {
		opts.FrequencyPenalty = float32(*s.FrequencyPenalty)
	}
	if s.PresencePenalty != nil {
		opts.PresencePenalty = float32(*s.PresencePenalty)
	}
	if set {
		opts.Stop = stop
	}
	if s.Seed != nil {
		opts.Seed = int(*s.Seed)
	}
	return nil
}

// Bias is logit_bias (checked by Apply) for the sampler; ids outside the
// model's vocabulary are refused when the sampler is built.
func (s Fields) Bias() map[infer.Token]float32 {
	if len(s.LogitBias) == 0 {
		return nil
	}
	out := make(map[infer.Token]float32, len(s.LogitBias))
	for k, v := range s.LogitBias {
		id, _ := tokenID(k)
		out[id] = float32(v)
	}
	return out
}

// tokenID reads a logit_bias key: a token id, 0 to 2^31-1 (infer.Token's
// range; a larger number must not wrap onto another token).
func tokenID(k string) (infer.Token, error) {
	id, err := strconv.ParseInt(k, 10, 32)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("%q is not a token id", k)
	}
	return infer.Token(id), nil
}

// parseStop reads stop: null, a string or an array of strings. set tells
// whether the request gave it (an empty array clears the model's stops).
func parseStop(raw json.RawMessage) (stop []string, set bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, true, nil
		}
		return []string{one}, true, nil
	}
	if json.Unmarshal(raw, &stop) != nil {
		return nil, false, paramErrorf("stop", "Invalid type for 'stop': expected a string or an array of strings.")
	}
	out := stop[:0]
	for _, s := range stop {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, true, nil
}
