package infer

import (
	"context"

	"github.com/tadpole-llm/tadpole/engine"
)

// CountTokens is the number of tokens of req's prompt, rendered and
// tokenized as Start would (the model's defaults, template, tools and
// thinking switch applied), without generating: for Anthropic's
// count_tokens. It acquires the model, which loads it if need be, and
// releases it at once.
func (s *Service) CountTokens(ctx context.Context, req *Request) (int, error) {
	in, err := s.Acquire(ctx, req.Model, req.Options, req.KeepAlive)
	if err != nil {
		return 0, err
	}
	defer in.Release()
	return in.CountTokens(req)
}

// CountTokens is the number of tokens of req's prompt on the instance's
// model, as Start would render it: a dialect that must tell the prompt's
// size before the first event (Anthropic's message_start) asks first.
func (in *Instance) CountTokens(req *Request) (int, error) {
	toks, _, err := render(in.Model, withModelDefaults(req, in.Entry))
	if err != nil {
		return 0, err
	}
	return len(toks), nil
}

// Text is the text of tokens of the instance's model, as the runner
// writes it (special tokens left out). A final Event's Tokens end with
// its Stats.EvalCount generated tokens: their text tells a dialect which
// stop string ended a generation, which the event does not say.
func (in *Instance) Text(tokens []engine.Token) string {
	return in.Model.Detokenize(tokens, false)
}
