package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// gen is a request's generations, running in parallel slots of one model
// instance: its n choices (n per prompt for several prompts). Read their
// events with next, tagged with the choice's index; close must be called
// once.
type gen struct {
	*infer.Generation
	in     *infer.Instance
	n      int // choices per prompt
	count  int // choices in all
	ended  []bool
	left   int // streams whose final event was not read yet
	notify chan struct{}
	evs    []infer.Event // reused by next
}

type indexed struct {
	i  int
	ev infer.Event
}

// start gets model's instance and starts every request on it (a prompt's
// n choices decode and encode their media once). Cancelling ctx (the
// client going away) or close ends the generations at the next decode
// step and frees their slots.
func (h *Handler) start(ctx context.Context, model string, reqs []*infer.Request, n int) (*gen, error) {
	notify := make(chan struct{}, 1)
	for _, r := range reqs {
		r.Notify = notify
	}
	g, err := h.Infer.Generate(ctx, reqs...)
	if err != nil {
		return nil, inferError(err, model)
	}
	return &gen{Generation: g, in: g.Instance(), n: n, count: len(reqs), notify: notify,
		ended: make([]bool, len(reqs)), left: len(reqs)}, nil
}

// next appends the events queued on every generation to buf, waiting for
// one if none is queued. It returns io.EOF once every final event has been
// read, or the context's error when the client went away.
func (g *gen) next(buf []indexed) ([]indexed, error) {
	for {
		n := len(buf)
		for i, st := range g.Streams() {
			if g.ended[i] {
				continue
			}
			var err error
			g.evs, err = st.TryNext(g.evs[:0])
			for _, ev := range g.evs {
				buf = append(buf, indexed{i, ev})
				if ev.Done {
					g.ended[i] = true
					g.left--
				}
			}
			if err != nil && !g.ended[i] { // io.EOF before a final event: cannot happen
				g.ended[i] = true
				g.left--
			}
		}
		if len(buf) > n {
			return buf, nil
		}
		if g.left == 0 {
			return buf, io.EOF
		}
		select {
		case <-g.notify:
		case <-g.Context().Done():
			return buf, g.Context().Err()
		}
	}
}

// close ends the generations that still run and hands the instance back.
func (g *gen) close() { g.Close() }

// result is one choice's output.
type result struct {
	out      chatparse.Delta // content, thinking and tool calls
	logprobs []infer.TokenLogprob
	final    infer.Event
	done     bool
}

// collect reads every generation to its end.
func (g *gen) collect() ([]*result, error) {
	res := make([]*result, g.count)
	for i := range res {
		res[i] = &result{}
	}
	var buf []indexed
	for {
		var err error
		buf, err = g.next(buf[:0])
		for _, x := range buf {
			r := res[x.i]
			r.out.Append(x.ev.Delta)
			r.logprobs = append(r.logprobs, x.ev.Logprobs...)
			if x.ev.Done {
				if x.ev.Err != nil {
					return nil, dialect.GenerationError(x.ev.Err)
				}
				r.final, r.done = x.ev, true
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, dialect.GenerationError(err)
		}
	}
	for _, r := range res {
		if !r.done {
			return nil, dialect.GenerationError(errEnded)
		}
	}
	return res, nil
}

var errEnded = errors.New("generation ended without a result")

// fingerprint is the system_fingerprint: it changes when the model does.
func (g *gen) fingerprint() string {
	d := g.in.Entry.Digest
	if len(d) < 12 {
		return "fp_tadpole"
	}
	return "fp_" + d[:12]
}

// finishReason is OpenAI's finish_reason for a runner's done reason.
func finishReason(ev infer.Event) string {
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

func (t *tally) add(g *gen, i int, ev infer.Event) {
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
func chatLogprobs(lps []infer.TokenLogprob) []TokenLogprob {
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
// (left is how many choices are still running). The events of all tokens
// queued since the last write go out in one write and one flush. It
// returns the tally, and false when the stream is over already: the
// client left, or an error event was sent.
func (g *gen) relay(s *sse, piece func(indexed) any, last func(i int, reason string, t *tally, left int) any) (*tally, bool) {
	var t tally
	left := g.count
	var buf []indexed
	for {
		var rerr error
		buf, rerr = g.next(buf[:0])
		for _, x := range buf {
			if p := piece(x); p != nil {
				if s.add(p) != nil {
					return nil, false
				}
			}
			if !x.ev.Done {
				continue
			}
			if x.ev.Err != nil {
				_ = s.fail(dialect.GenerationError(x.ev.Err))
				return nil, false
			}
			t.add(g, x.i, x.ev)
			left--
			if s.add(last(x.i, finishReason(x.ev), &t, left)) != nil {
				return nil, false
			}
		}
		if s.flush() != nil {
			return nil, false
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, false // the client went away
		}
	}
	if left > 0 {
		_ = s.fail(dialect.GenerationError(errEnded))
		return nil, false
	}
	return &t, true
}

// sse writes OpenAI's Server-Sent Events, each "data: <json>": add
// encodes an event into the pending write; flush sends what is pending
// (dialect.StreamWriter: one write, one flush, bounded by the write
// timeout).
type sse struct {
	w   *dialect.StreamWriter
	enc *json.Encoder
	js  bytes.Buffer // one event's JSON
}

func startSSE(c echo.Context) *sse {
	s := &sse{w: dialect.NewStreamWriter(c, "text/event-stream")}
	s.enc = json.NewEncoder(&s.js)
	s.enc.SetEscapeHTML(false)
	return s
}

// add queues one event with v as JSON.
func (s *sse) add(v any) error {
	s.js.Reset()
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	s.w.Event("", bytes.TrimSuffix(s.js.Bytes(), []byte("\n")))
	return nil
}

// flush writes the queued events; an error means the client left or
// stopped reading.
func (s *sse) flush() error { return s.w.Flush() }

// send writes one event with v as JSON at once; an error means the
// client left.
func (s *sse) send(v any) error {
	if err := s.add(v); err != nil {
		return err
	}
	return s.flush()
}

// done ends the stream as OpenAI does.
func (s *sse) done() error {
	s.w.Event("", []byte("[DONE]"))
	return s.flush()
}

// fail reports an error inside a stream that has begun, as OpenAI does:
// one event holding the error, and no [DONE].
func (s *sse) fail(e *Error) error {
	return s.send(e.OpenAI())
}
