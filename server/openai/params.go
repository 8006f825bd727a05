package openai

import (
	"errors"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/openaisampling"
)

// sampling are the sampling fields chat and completions share: OpenAI's
// fields, mapped by openaisampling (as for Open WebUI, Anura, Responses
// and Anthropic), and n.
type sampling struct {
	openaisampling.Fields
	N *int
}

// maxChoices bounds n, as OpenAI does.
const maxChoices = 128

// apply checks the fields and sets them on opts; it returns n.
func (s sampling) apply(opts *ollamaapi.Options) (int, error) {
	if err := s.Fields.Apply(opts); err != nil {
		return 0, paramError(err)
	}
	n := 1
	if s.N != nil {
		n = *s.N
		if n < 1 || n > maxChoices {
			return 0, invalid("n", "Invalid 'n': %d. Expected a value between 1 and %d.", n, maxChoices)
		}
	}
	return n, nil
}

// paramError answers infer's field errors as OpenAI's invalid_request_error.
func paramError(err error) error {
	var pe *infer.ParamError
	if errors.As(err, &pe) {
		return dialect.FromInfer(err)
	}
	return err
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
