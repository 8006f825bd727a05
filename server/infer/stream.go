package infer

import (
	"context"
	"log/slog"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/flight"
)

// TokenLogprob is a generated token's log-probability, with the most
// likely alternatives when they were asked for.
type TokenLogprob = runner.TokenLogprob

// Stats are a generation's counters and timings, in Ollama's terms.
type Stats = runner.Stats

// Event is one piece of a generation as a dialect encodes it: the new
// text split into content, thinking and tool calls (the model's output
// parsed once, here, for every dialect), the log-probabilities of its
// tokens and, on the final event (Done), how it ended: DoneReason
// ("stop", "length", "cancel") or Err, the statistics, and the whole token
// sequence (prompt and output) for Ollama's context.
type Event struct {
	chatparse.Delta
	Logprobs   []TokenLogprob
	Done       bool
	DoneReason string
	Err        error
	Stats      Stats
	Tokens     []engine.Token
}

// Stream is a started generation. Read it with Next (or TryNext and
// Ready, to wait on several); the events queued since the last read come
// together, so a writer slower than the model sends them in one write.
// Cancelling the context given to Start ends the generation; nothing needs
// to drain a stream.
type Stream struct {
	gen    source
	ctx    context.Context
	parser *chatparse.Parser
	model  string
	raw    []runner.Event
	// done records the generation's metrics and usage (once, shared with
	// the runner's OnDone); called before the final event is handed over.
	done func(runner.Event)
	// prompt is the positions of the rendered prompt (images included).
	prompt int
	// decoding: the first event came (the in-flight phase is decode).
	decoding bool
	// script gives the deltas of a scripted stream (Scripted), already
	// split; nil on the runner's.
	script *script
}

// PromptTokens is the number of positions of the rendered prompt, its
// images and audio included, before any truncation: what a dialect that
// tells the prompt's size before the first event (Anthropic's
// message_start) reports.
func (s *Stream) PromptTokens() int { return s.prompt }

// source is what a Stream reads the generation's events from: the
// runner's stream (*runner.Stream), or a script (Scripted) in the
// dialects' own tests. One call per batch of events goes through it.
type source interface {
	Next(ctx context.Context, dst []runner.Event) ([]runner.Event, error)
	TryNext(dst []runner.Event) ([]runner.Event, error)
	Ready() <-chan struct{}
}

var _ source = (*runner.Stream)(nil)

func newStream(ctx context.Context, gen source, out chatparse.Options, model string) *Stream {
	return &Stream{gen: gen, ctx: ctx, parser: chatparse.NewParser(out), model: model}
}

// Next appends the generation's next events to dst, waiting for one if
// none is queued. It returns io.EOF after the final event, or the error
// of Start's context if that ends first.
func (s *Stream) Next(dst []Event) ([]Event, error) {
	var err error
	s.raw, err = s.gen.Next(s.ctx, s.raw[:0])
	return s.convert(dst), err
}

// TryNext is Next without waiting: it may return no events.
func (s *Stream) TryNext(dst []Event) ([]Event, error) {
	var err error
	s.raw, err = s.gen.TryNext(s.raw[:0])
	return s.convert(dst), err
}

// Ready is signalled when events may be queued (TryNext tells).
func (s *Stream) Ready() <-chan struct{} { return s.gen.Ready() }

// generated reports whether events carry generation: a token, text, or an
// end that is not an error. A request cancelled while queued gets one
// event, its end with the cancellation's error, and stays in its phase (a
// client gone before its first token is a 499, not an answered 200).
func generated(evs []runner.Event) bool {
	for _, ev := range evs {
		if len(ev.Tokens) > 0 || ev.Text != "" || ev.Done && ev.Err == nil {
			return true
		}
	}
	return false
}

// convert splits the text of the events read into deltas; at the final
// event the parser gives up what it held back and its warnings are logged.
func (s *Stream) convert(dst []Event) []Event {
	if !s.decoding && generated(s.raw) {
		s.decoding = true
		flight.Mark(s.ctx, flight.Decode, "")
	}
	for _, ev := range s.raw {
		var d chatparse.Delta
		if s.script != nil {
			d = s.script.delta()
		} else {
			d = s.parser.Next(ev.Text, ev.Done)
		}
		if ev.Done {
			if s.done != nil {
				s.done(ev)
			}
			for _, w := range s.parser.Warnings() {
				slog.Warn("model output", "model", s.model, "warning", w)
			}
		}
		dst = append(dst, Event{Delta: d, Logprobs: ev.Logprobs, Done: ev.Done, DoneReason: ev.DoneReason,
			Err: ev.Err, Stats: ev.Stats, Tokens: ev.Tokens})
	}
	return dst
}
