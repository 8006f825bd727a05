package infer

import (
	"context"

	"github.com/tadpole-llm/tadpole/engine"
)

// CountTokens is the number of positions req's prompt takes, rendered
// and tokenized as Start would (the model's defaults, template, tools and
// thinking switch applied; each image or audio clip as many positions as
// the projector gives it, without encoding it), without generating: for
// Anthropic's count_tokens. It acquires the model, which loads it if need
// be, and releases it at once.
func (s *Service) CountTokens(ctx context.Context, req *Request) (int, error) {
	in, err := s.AcquireFor(ctx, req)
	if err != nil {
		return 0, err
	}
	defer in.Release()
	releaseMedia, err := s.checkMedia(ctx, in, req)
	if err != nil {
		return 0, err
	}
	defer releaseMedia()
	req = withModelDefaults(req, in.Entry)
	if len(req.Media) > 0 {
		return mediaPromptSize(in, req)
	}
	toks, _, err := render(in.si.Model, req)
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
	if in.text != nil {
		return in.text(tokens)
	}
	return in.si.Model.Detokenize(tokens, false)
}

// ApplyTemplate is the text of req's prompt, rendered as Start would
// render it (the model's defaults, template, tools, thinking switch and
// variables applied; each image as the projector's marker) but not
// tokenized: llama-server's /apply-template. It acquires the model, which
// loads it if need be, and releases it at once.
func (s *Service) ApplyTemplate(ctx context.Context, req *Request) (string, error) {
	in, err := s.Acquire(ctx, req.Model, req.Options, req.KeepAlive)
	if err != nil {
		return "", err
	}
	defer in.Release()
	req = withModelDefaults(req, in.Entry)
	if len(req.Media) > 0 {
		// mtmd's marker where each image or clip goes, as the
		// generation's prompt has it (and llama-server's answer, whose
		// marker is mtmd's with LLAMA_MEDIA_MARKER=<__media__>).
		var l *literals
		if !req.Raw {
			l = newLiterals(in.si.Model)
		}
		marked, _ := withMarkers(req, l)
		text, _, _, err := renderLiterals(in.si.Model, marked, l)
		return text, err
	}
	text, _, _, err := renderClient(in.si.Model, req)
	return text, err
}
