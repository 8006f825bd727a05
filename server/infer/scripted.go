package infer

import (
	"context"
	"io"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/chatparse"
)

// Scripted is a Generation on in whose streams deliver the events
// given, one stream per script, for the dialects' own tests
// (server/infer/infertest builds them): no model is loaded and nothing
// is generated. The events are as a dialect reads them, the model's
// output already split into content, thinking and tool calls; each read
// of a stream (Next, TryNext) gets the next one. A stream whose script
// ends without a final event (Done) ends there (io.EOF) as a runner's
// stream never does. in.Text is text when given (in has no engine
// model to detokenize with). Close cancels the generation's context; in
// is not released (it has no scheduler).
func Scripted(ctx context.Context, in *Instance, text func([]engine.Token) string, scripts ...[]Event) *Generation {
	ctx, cancel := context.WithCancel(ctx)
	in.text = text
	g := &Generation{in: in, ctx: ctx, cancel: cancel, acquired: time.Now()}
	for _, evs := range scripts {
		sc := &script{events: evs, ready: make(chan struct{})}
		close(sc.ready)
		st := newStream(ctx, sc, chatparse.Options{}, in.Name)
		st.script = sc
		for _, ev := range evs {
			if ev.Done {
				st.prompt = ev.Stats.PromptTokens
			}
		}
		g.streams = append(g.streams, st)
	}
	return g
}

// script is a scripted stream's source: each read takes one event, as
// the runner's event without its text (the delta comes from the script
// too, in convert).
type script struct {
	events []Event
	next   int // the next event Next hands over
	split  int // the next event whose delta convert takes
	ready  chan struct{}
}

func (s *script) TryNext(dst []runner.Event) ([]runner.Event, error) {
	if s.next == len(s.events) {
		return dst, io.EOF
	}
	ev := s.events[s.next]
	s.next++
	if ev.Done {
		s.events = s.events[:s.next] // nothing after the final event
	}
	return append(dst, runner.Event{Logprobs: ev.Logprobs, Done: ev.Done, DoneReason: ev.DoneReason,
		Err: ev.Err, Stats: ev.Stats, Tokens: ev.Tokens}), nil
}

func (s *script) Next(ctx context.Context, dst []runner.Event) ([]runner.Event, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	return s.TryNext(dst)
}

// Ready is always signalled: TryNext has an event or the end.
func (s *script) Ready() <-chan struct{} { return s.ready }

// delta is the split output of the event TryNext handed over next.
func (s *script) delta() chatparse.Delta {
	d := s.events[s.split].Delta
	s.split++
	return d
}
