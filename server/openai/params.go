package openai

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// sampling are the sampling fields chat and completions share.
type sampling struct {
	Temperature      *float64
	TopP             *float64
	FrequencyPenalty *float64
	PresencePenalty  *float64
	Stop             json.RawMessage
	Seed             *int64
	N                *int
	LogitBias        map[string]float64
}

// maxChoices bounds n, as OpenAI does.
const maxChoices = 128

// apply checks the fields and sets them on opts; it returns n.
func (s sampling) apply(opts *api.Options) (int, error) {
	if err := inRange("temperature", s.Temperature, 0, 2); err != nil {
		return 0, err
	}
	if err := inRange("top_p", s.TopP, 0, 1); err != nil {
		return 0, err
	}
	if err := inRange("frequency_penalty", s.FrequencyPenalty, -2, 2); err != nil {
		return 0, err
	}
	if err := inRange("presence_penalty", s.PresencePenalty, -2, 2); err != nil {
		return 0, err
	}
	n := 1
	if s.N != nil {
		n = *s.N
		if n < 1 || n > maxChoices {
			return 0, invalid("n", "Invalid 'n': %d. Expected a value between 1 and %d.", n, maxChoices)
		}
	}
	stop, set, err := parseStop(s.Stop)
	if err != nil {
		return 0, err
	}
	if err := checkLogitBias(s.LogitBias); err != nil {
		return 0, err
	}
	if s.Temperature != nil {
		opts.Temperature = float32(*s.Temperature)
	}
	if s.TopP != nil {
		opts.TopP = float32(*s.TopP)
		if opts.TopP == 0 {
			// The engine reads top_p 0 as "off"; OpenAI means "only the
			// most likely token".
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
	return n, nil
}

func inRange(param string, v *float64, lo, hi float64) error {
	if v != nil && (*v < lo || *v > hi) {
		return invalid(param, "Invalid '%s': %g. Expected a value between %g and %g.", param, *v, lo, hi)
	}
	return nil
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
		return nil, false, invalid("stop", "Invalid type for 'stop': expected a string or an array of strings.")
	}
	out := stop[:0]
	for _, s := range stop {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, true, nil
}

// checkLogitBias checks logit_bias (token ids to biases from -100 to
// 100); ids outside the model's vocabulary are refused when the sampler
// is built.
func checkLogitBias(m map[string]float64) error {
	for k, v := range m {
		if id, err := strconv.Atoi(k); err != nil || id < 0 {
			return invalid("logit_bias", "Invalid key in 'logit_bias': %q is not a token id.", k)
		}
		if v < -100 || v > 100 {
			return invalid("logit_bias", "Invalid value for 'logit_bias' token %s: %g. Expected a value between -100 and 100.", k, v)
		}
	}
	return nil
}

// logitBias converts a checked logit_bias for the sampler.
func logitBias(m map[string]float64) map[engine.Token]float32 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[engine.Token]float32, len(m))
	for k, v := range m {
		id, _ := strconv.Atoi(k)
		out[engine.Token(id)] = float32(v)
	}
	return out
}

// choices makes the n requests of one prompt. With a seed, choice i uses
// seed+i, so the choices differ and a request is reproducible; without
// one each draws its own random seed. At temperature 0 every choice is
// the same greedy answer.
func choices(base *infer.Request, n int) []*infer.Request {
	out := make([]*infer.Request, n)
	for i := range out {
		r := *base
		if r.Options.Seed >= 0 {
			r.Options.Seed += i
		}
		out[i] = &r
	}
	return out
}
