package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// gen is a request's generations, running in parallel slots of one model
// instance: its n choices (n per prompt for several prompts). Their
// events come merged on out, tagged with the choice's index; close must
// be called once.
type gen struct {
	in     *infer.Instance
	n      int // choices per prompt
	count  int // choices in all
	out    chan indexed
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type indexed struct {
	i  int
	ev runner.Event
}

// start gets model's instance and starts every request on it. Cancelling
// ctx (the client going away) or close ends the generations at the next
// decode step and frees their slots.
func (h *Handler) start(ctx context.Context, model string, reqs []*infer.Request, n int) (*gen, error) {
	ctx, cancel := context.WithCancel(ctx)
	in, err := h.Infer.Acquire(ctx, model, reqs[0].Options, reqs[0].KeepAlive)
	if err != nil {
		cancel()
		return nil, inferError(err, model)
	}
	chans := make([]<-chan runner.Event, 0, len(reqs))
	for _, r := range reqs {
		ch, err := h.Infer.Start(ctx, in, r)
		if err != nil {
			cancel()
			for _, ch := range chans {
				for range ch {
				}
			}
			in.Release()
			return nil, inferError(err, model)
		}
		chans = append(chans, ch)
	}
	g := &gen{in: in, n: n, count: len(chans), out: make(chan indexed), ctx: ctx, cancel: cancel}
	for i, ch := range chans {
		g.wg.Add(1)
		go g.forward(i, ch)
	}
	go func() {
		g.wg.Wait()
		close(g.out)
	}()
	return g, nil
}

// forward passes one generation's events to out until its channel
// closes; once the generations are cancelled it drops them, so that
// nothing upstream blocks on a reader that left.
func (g *gen) forward(i int, ch <-chan runner.Event) {
	defer g.wg.Done()
	for ev := range ch {
		select {
		case g.out <- indexed{i, ev}:
		case <-g.ctx.Done():
		}
	}
}

// close ends the generations that still run, waits for their channels to
// close and hands the instance back.
func (g *gen) close() {
	g.cancel()
	g.wg.Wait()
	g.in.Release()
}

// result is one choice's output.
type result struct {
	text     strings.Builder
	logprobs []runner.TokenLogprob
	final    runner.Event
	done     bool
}

// collect reads every generation to its end.
func (g *gen) collect() ([]*result, error) {
	res := make([]*result, g.count)
	for i := range res {
		res[i] = &result{}
	}
	for x := range g.out {
		r := res[x.i]
		r.text.WriteString(x.ev.Text)
		r.logprobs = append(r.logprobs, x.ev.Logprobs...)
		if x.ev.Done {
			if x.ev.Err != nil {
				return nil, generationError(x.ev.Err)
			}
			r.final, r.done = x.ev, true
		}
	}
	for _, r := range res {
		if !r.done {
			return nil, generationError(errEnded)
		}
	}
	return res, nil
}

var errEnded = errors.New("generation ended without a result")

func generationError(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: "server_error", Message: "generation failed: " + err.Error()}
}

// fingerprint is the system_fingerprint: it changes when the model does.
func (g *gen) fingerprint() string {
	d := g.in.Entry.Digest
	if len(d) < 12 {
		return "fp_tadpole"
	}
	return "fp_" + d[:12]
}

// finishReason is OpenAI's finish_reason for a runner's done reason.
func finishReason(ev runner.Event) string {
	if ev.DoneReason == "length" {
		return "length"
	}
	return "stop"
}

// tally adds up the statistics of a request's generations. The prompt is
// counted once per prompt (its n choices share it); durations are the
// longest choice's, since the choices run together.
type tally struct {
	prompt, completion, cached, promptEval int
	promptEvalDur, evalDur                 time.Duration
}

func (t *tally) add(g *gen, i int, ev runner.Event) {
	st := ev.Stats
	if i%g.n == 0 {
		t.prompt += st.PromptTokens
		t.cached += st.CachedTokens
	}
	t.completion += st.EvalCount
	t.promptEval += st.PromptEvalCount
	t.promptEvalDur = max(t.promptEvalDur, st.PromptEvalDuration)
	t.evalDur = max(t.evalDur, st.EvalDuration)
}

func (t *tally) usage() *Usage {
	return &Usage{
		PromptTokens: t.prompt, CompletionTokens: t.completion, TotalTokens: t.prompt + t.completion,
		PromptTokensDetails: PromptTokensDetails{CachedTokens: t.cached},
	}
}

// chatLogprobs converts the runner's log-probabilities.
func chatLogprobs(lps []runner.TokenLogprob) []TokenLogprob {
	out := make([]TokenLogprob, len(lps))
	for i, lp := range lps {
		out[i] = TokenLogprob{Token: lp.Token, Logprob: float64(lp.Logprob), Bytes: tokenBytes(lp.Token), TopLogprobs: []TopLogprob{}}
		for _, t := range lp.Top {
			out[i].TopLogprobs = append(out[i].TopLogprobs, TopLogprob{Token: t.Token, Logprob: float64(t.Logprob), Bytes: tokenBytes(t.Token)})
		}
	}
	return out
}

// tokenBytes are a token's UTF-8 bytes as numbers (a token may hold part
// of a character; its bytes tell the whole story).
func tokenBytes(s string) []int {
	out := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int(s[i])
	}
	return out
}

// relay streams the generations' events as SSE events: piece builds the
// event of each event that carries text or log-probabilities (nil: send
// nothing), last the event that ends choice i with its finish_reason
// (left is how many choices are still running). It returns the tally, and
// false when the stream is over already: the client left, or an error
// event was sent.
func (g *gen) relay(s *sse, piece func(indexed) any, last func(i int, reason string, t *tally, left int) any) (*tally, bool) {
	var t tally
	left := g.count
	for x := range g.out {
		if p := piece(x); p != nil {
			if s.send(p) != nil {
				return nil, false
			}
		}
		if !x.ev.Done {
			continue
		}
		if x.ev.Err != nil {
			_ = s.fail(generationError(x.ev.Err))
			return nil, false
		}
		t.add(g, x.i, x.ev)
		left--
		if s.send(last(x.i, finishReason(x.ev), &t, left)) != nil {
			return nil, false
		}
	}
	if left > 0 {
		_ = s.fail(generationError(errEnded))
		return nil, false
	}
	return &t, true
}

// sse writes Server-Sent Events: each event "data: <json>\n\n", flushed at
// once.
type sse struct{ w *echo.Response }

func startSSE(c echo.Context) *sse {
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Flush()
	return &sse{w: w}
}

func (s *sse) data(b []byte) error {
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return err
	}
	s.w.Flush()
	return nil
}

// send writes one event with v as JSON; an error means the client left.
func (s *sse) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.data(b)
}

// done ends the stream as OpenAI does.
func (s *sse) done() error { return s.data([]byte("[DONE]")) }

// fail reports an error inside a stream that has begun, as OpenAI does:
// one event holding the error, and no [DONE].
func (s *sse) fail(e *Error) error {
	return s.send(dialect.OpenAIError{Error: dialect.OpenAIErrorBody{Message: e.Message, Type: e.Type, Param: nullable(e.Param), Code: nullable(e.Code)}})
}
