package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/openaisampling"
)

// maxCompletionLogprobs bounds the legacy logprobs field, as OpenAI does.
const maxCompletionLogprobs = 5

// defaultCompletionTokens is OpenAI's default max_tokens for completions.
const defaultCompletionTokens = 16

// promptInput is one prompt of a completions request: text, or token ids.
type promptInput struct {
	text   string
	tokens []int
}

// completions serves POST /v1/completions. Prompts are raw text: no chat
// template is applied.
func (h *Handler) completions(c echo.Context) error {
	var req CompletionRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Model != "" {
		c.Set("model", req.Model)
	}
	prompts, reqs, n, err := h.prepareCompletion(&req)
	if err != nil {
		return err
	}
	g, err := h.start(c.Request().Context(), req.Model, reqs, n)
	if err != nil {
		return err
	}
	defer g.close()
	a := &completionAnswer{g: g, id: dialect.NewID("cmpl-"), model: req.Model, created: time.Now().Unix(), logprobs: req.Logprobs != nil && *req.Logprobs > 0}
	a.withLogprobs = req.Logprobs != nil
	if req.Echo {
		for _, p := range prompts {
			text := p.text
			if p.tokens != nil {
				toks := make([]infer.Token, len(p.tokens))
				for i, t := range p.tokens {
					toks[i] = infer.Token(t)
				}
				text = g.in.Text(toks)
			}
			a.echo = append(a.echo, text)
		}
	}
	if req.Stream {
		return a.stream(c, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	}
	return a.respond(c)
}

func (h *Handler) prepareCompletion(req *CompletionRequest) ([]promptInput, []*infer.Request, int, error) {
	if req.Model == "" {
		return nil, nil, 0, invalid("model", "you must provide a model parameter")
	}
	prompts, err := parsePrompt(req.Prompt)
	if err != nil {
		return nil, nil, 0, err
	}
	if req.MaxTokens != nil && *req.MaxTokens < 0 {
		return nil, nil, 0, invalid("max_tokens", "Invalid 'max_tokens': %d. Expected a value >= 0.", *req.MaxTokens)
	}
	top := 0
	if req.Logprobs != nil {
		top = *req.Logprobs
		if top < 0 || top > maxCompletionLogprobs {
			return nil, nil, 0, invalid("logprobs", "Invalid 'logprobs': %d. Expected a value between 0 and %d.", top, maxCompletionLogprobs)
		}
		if req.Echo {
			return nil, nil, 0, notSupported("echo", "echo together with logprobs is not supported: prompt tokens have no log-probabilities here.")
		}
	}
	opts, err := h.options(req.Model, defaultCompletionTokens)
	if err != nil {
		return nil, nil, 0, err
	}
	smp := openaisampling.Fields{
		Temperature: req.Temperature, TopP: req.TopP, FrequencyPenalty: req.FrequencyPenalty, PresencePenalty: req.PresencePenalty,
		Stop: req.Stop, Seed: req.Seed, LogitBias: req.LogitBias,
	}
	n, err := sampling{Fields: smp, N: req.N}.apply(&opts)
	if err != nil {
		return nil, nil, 0, err
	}
	if req.BestOf != nil && *req.BestOf != 1 && *req.BestOf != n {
		return nil, nil, 0, notSupported("best_of", "best_of is not supported: ask for n choices instead.")
	}
	if req.MaxTokens != nil {
		opts.NumPredict = *req.MaxTokens
	}
	lora, err := infer.ParseLoRA(req.LoRA)
	if err != nil {
		return nil, nil, 0, invalid("lora", "%v", err)
	}
	var reqs []*infer.Request
	for _, p := range prompts {
		suffix := ""
		if req.Suffix != nil {
			suffix = *req.Suffix
		}
		base := &infer.Request{
			Truncate: &noTruncate, // as in chat.go
			Model:    req.Model, Raw: true, Prompt: p.text, Suffix: suffix, Context: p.tokens, Options: opts,
			LogitBias: smp.Bias(), LoRA: lora,
			Logprobs: req.Logprobs != nil, TopLogprobs: top,
		}
		reqs = append(reqs, choices(base, n)...)
	}
	return prompts, reqs, n, nil
}

// parsePrompt reads prompt: a string, an array of strings, an array of
// token ids or an array of such arrays.
func parsePrompt(raw json.RawMessage) ([]promptInput, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("prompt", "Missing required parameter: 'prompt'.")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []promptInput{{text: one}}, nil
	}
	bad := invalid("prompt", "Invalid type for 'prompt': expected a string, an array of strings, an array of token ids or an array of arrays of token ids.")
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, bad
	}
	if len(items) == 0 {
		return nil, invalid("prompt", "Invalid 'prompt': empty array.")
	}
	var tokens []int
	if json.Unmarshal(raw, &tokens) == nil {
		return []promptInput{{tokens: tokens}}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		out := make([]promptInput, len(texts))
		for i, t := range texts {
			out[i] = promptInput{text: t}
		}
		return out, nil
	}
	var lists [][]int
	if json.Unmarshal(raw, &lists) == nil {
		out := make([]promptInput, len(lists))
		for i, l := range lists {
			if len(l) == 0 {
				return nil, invalid("prompt", "Invalid 'prompt': token array %d is empty.", i)
			}
			out[i] = promptInput{tokens: l}
		}
		return out, nil
	}
	return nil, bad
}

// completionAnswer encodes a completions request's generations.
type completionAnswer struct {
	g            *gen
	id, model    string
	created      int64
	echo         []string // per prompt, when echo is set
	withLogprobs bool     // logprobs asked for (0 or more)
	logprobs     bool     // top alternatives asked for
}

func (a *completionAnswer) echoed(i int) string {
	if a.echo == nil {
		return ""
	}
	return a.echo[i/a.g.n]
}

func (a *completionAnswer) completion(choices ...CompletionChoice) Completion {
	if choices == nil {
		choices = []CompletionChoice{}
	}
	return Completion{ID: a.id, Object: "text_completion", Created: a.created, Model: a.model, SystemFingerprint: a.g.fingerprint(), Choices: choices}
}

// logprobsOf converts the runner's log-probabilities; offset is where the
// first token's text begins in the choice's text (in bytes).
func (a *completionAnswer) logprobsOf(lps []infer.TokenLogprob, offset int) *CompletionLogprobs {
	if !a.withLogprobs {
		return nil
	}
	out := &CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TextOffset: []int{}}
	if a.logprobs {
		out.TopLogprobs = []map[string]float64{}
	}
	for _, lp := range lps {
		out.Tokens = append(out.Tokens, lp.Token)
		out.TokenLogprobs = append(out.TokenLogprobs, float64(lp.Logprob))
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(lp.Token)
		if a.logprobs {
			top := make(map[string]float64, len(lp.Top))
			for _, t := range lp.Top {
				top[t.Token] = float64(t.Logprob)
			}
			out.TopLogprobs = append(out.TopLogprobs, top)
		}
	}
	return out
}

func (a *completionAnswer) respond(c echo.Context) error {
	res, err := a.g.collect()
	if err != nil {
		return err
	}
	out := a.completion(make([]CompletionChoice, len(res))...)
	var t tally
	for i, r := range res {
		t.add(a.g, i, r.final)
		reason := finishReason(r.final)
		out.Choices[i] = CompletionChoice{Text: a.echoed(i) + r.out.Content, Index: i, Logprobs: a.logprobsOf(r.logprobs, 0), FinishReason: &reason}
	}
	out.Usage = t.usage()
	return c.JSON(http.StatusOK, out)
}

// stream answers with Server-Sent Events: the echoed prompt first when
// asked for, one event per piece of text, a last event per choice with
// its finish_reason, the usage event when asked for, then [DONE].
func (a *completionAnswer) stream(c echo.Context, includeUsage bool) error {
	s := startSSE(c)
	offsets := make([]int, a.g.count)
	for i := 0; i < a.g.count && a.echo != nil; i++ {
		if s.send(a.completion(CompletionChoice{Text: a.echoed(i), Index: i})) != nil {
			return nil
		}
	}
	t, ok := a.g.relay(s, func(x indexed) any {
		if x.ev.Content == "" && (!a.withLogprobs || len(x.ev.Logprobs) == 0) {
			return nil
		}
		ch := CompletionChoice{Text: x.ev.Content, Index: x.i, Logprobs: a.logprobsOf(x.ev.Logprobs, offsets[x.i])}
		for _, lp := range x.ev.Logprobs {
			offsets[x.i] += len(lp.Token)
		}
		return a.completion(ch)
	}, func(i int, reason string, _ *tally, _ int) any {
		return a.completion(CompletionChoice{Index: i, FinishReason: &reason})
	})
	if !ok {
		return nil
	}
	if includeUsage {
		u := a.completion()
		u.Usage = t.usage()
		if s.send(u) != nil {
			return nil
		}
	}
	_ = s.done()
	return nil
}
