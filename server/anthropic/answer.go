package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// messages serves POST /v1/messages.
func (h *Handler) messages(c echo.Context) error {
	var r MessagesRequest
	if err := decode(c, &r); err != nil {
		return err
	}
	if r.Model != "" {
		c.Set("model", r.Model)
	}
	p, err := h.prepare(c.Request().Context(), &r, false)
	if err != nil {
		return err
	}
	g, err := h.Infer.Generate(c.Request().Context(), p.req)
	if err != nil {
		return inferError(err)
	}
	defer g.Close()
	a := &answer{in: g.Instance(), stops: p.stops, model: r.Model, id: dialect.NewID("msg_"), ctx: g.Context()}
	st := g.Stream()
	if r.Stream {
		// message_start tells the prompt's size before the first token.
		return a.stream(c, st, st.PromptTokens())
	}
	return a.respond(c, st)
}

// countTokens serves POST /v1/messages/count_tokens: the tokens of the
// prompt the same request to /v1/messages would run (system, messages,
// tools and thinking switch rendered by the model's template).
func (h *Handler) countTokens(c echo.Context) error {
	var r MessagesRequest
	if err := decode(c, &r); err != nil {
		return err
	}
	if r.Model != "" {
		c.Set("model", r.Model)
	}
	p, err := h.prepare(c.Request().Context(), &r, true)
	if err != nil {
		return err
	}
	if p.req.Options, err = h.Infer.ModelOptions(r.Model); err != nil {
		return inferError(err)
	}
	n, err := h.Infer.CountTokens(c.Request().Context(), p.req)
	if err != nil {
		return inferError(err)
	}
	return c.JSON(http.StatusOK, CountTokensResponse{InputTokens: n})
}

// answer encodes one request's generation.
type answer struct {
	in    *infer.Instance
	stops []string // the request's stop sequences
	model string   // as the request named it
	id    string
	ctx   context.Context
}

var errEnded = errors.New("generation ended without a result")

// respond answers with the whole message as JSON.
func (a *answer) respond(c echo.Context, st *infer.Stream) error {
	col := &collector{content: []ContentBlock{}}
	b := &blocks{out: col}
	var evs []infer.Event
	for {
		var err error
		evs, err = st.Next(evs[:0])
		for _, ev := range evs {
			b.add(ev.Delta)
			if !ev.Done {
				continue
			}
			if ev.Err != nil {
				return dialect.GenerationError(ev.Err)
			}
			b.end()
			return c.JSON(http.StatusOK, a.message(col.content, ev, b.calls))
		}
		if err == io.EOF {
			return dialect.GenerationError(errEnded)
		}
		if err != nil {
			return nil // the client went away: nobody to answer
		}
	}
}

// message is the answer as its final event ends it.
func (a *answer) message(content []ContentBlock, ev infer.Event, calls int) Message {
	reason, seq := a.stopReason(ev, calls)
	return Message{
		ID: a.id, Type: "message", Role: "assistant", Model: a.model, Content: content,
		StopReason: &reason, StopSequence: seq, Usage: usage(ev),
	}
}

// usage is Anthropic's usage of a final event: the prompt's tokens
// split into those read from the slot's cache and the rest.
func usage(ev infer.Event) Usage {
	st := ev.Stats
	return Usage{InputTokens: st.PromptTokens - st.CachedTokens, OutputTokens: st.EvalCount, CacheReadInputTokens: st.CachedTokens}
}

// stopReason is Anthropic's stop_reason: max_tokens when the limit (or
// the context) ended the answer, tool_use when it called a tool,
// stop_sequence with the sequence when one of the request's stop
// sequences ended it, end_turn when the model ended its turn.
func (a *answer) stopReason(ev infer.Event, calls int) (string, *string) {
	switch {
	case ev.DoneReason == "length":
		return "max_tokens", nil
	case calls > 0:
		return "tool_use", nil
	}
	if s, ok := a.matchedStop(ev); ok {
		return "stop_sequence", &s
	}
	return "end_turn", nil
}

// matchedStop tells which stop sequence ended a generation. The runner
// stops at the first occurrence of any stop string and does not say
// which, or whether a stop string or an end-of-turn token ended it; the
// generated tokens' text does: it holds a stop sequence only if one
// ended it (the generation would have ended there), and the one that
// did is the earliest (the first listed on a tie, as the runner looks).
func (a *answer) matchedStop(ev infer.Event) (string, bool) {
	if len(a.stops) == 0 || ev.DoneReason != "stop" {
		return "", false
	}
	n := min(ev.Stats.EvalCount, len(ev.Tokens))
	return firstStop(a.in.Text(ev.Tokens[len(ev.Tokens)-n:]), a.stops)
}

// firstStop is the stop string that occurs first in text.
func firstStop(text string, stops []string) (string, bool) {
	best, at := "", -1
	for _, s := range stops {
		if i := strings.Index(text, s); s != "" && i >= 0 && (at < 0 || i < at) {
			best, at = s, i
		}
	}
	return best, at >= 0
}
