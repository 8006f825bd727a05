package infer

import (
	"context"
	"sync"
	"time"
)

// Generation is a request's work on its model, shaped like database/sql's
// Rows: Service.Generate acquires the model's instance and starts every
// request on it, and Close ends what still runs and then hands the
// instance back. The order is the one rule every dialect used to keep by
// hand: a generation frees its slot before its instance may unload.
//
// The dialects call Generate and defer Close, and read the Streams; none
// of them acquires, starts or releases on its own.
type Generation struct {
	in       *Instance
	streams  []*Stream
	ctx      context.Context
	cancel   context.CancelFunc
	acquired time.Time
	once     sync.Once
}

// Generate acquires the model of reqs[0] (every request must name the
// same model and load options: OpenAI's n choices, a prompt list) and
// starts each request on it, in order. Consecutive requests that share
// one Media slice (copies of a request that differ only in sampling, as
// OpenAI's n choices are) decode and encode their media once
// (PrepareMedia). The generations run under a context of their own,
// derived from ctx: cancelling ctx, or Close, ends them at the next decode
// step. On an error nothing is left running and the instance is back.
func (s *Service) Generate(ctx context.Context, reqs ...*Request) (*Generation, error) {
	if len(reqs) == 0 {
		return nil, Errorf(BadRequest, "no request to generate")
	}
	g, err := s.acquire(ctx, reqs[0])
	if err != nil {
		return nil, err
	}
	if err := g.start(s, reqs); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// start starts reqs on g's instance (Generate).
func (g *Generation) start(s *Service, reqs []*Request) error {
	for i := 0; i < len(reqs); {
		j := i + 1
		for j < len(reqs) && sharesMedia(reqs[i], reqs[j]) {
			j++
		}
		if j-i > 1 {
			release, err := s.PrepareMedia(g.ctx, g.in, reqs[i:j]...)
			if err != nil {
				return err
			}
			defer release() // the pixels, once every choice has started
		}
		i = j
	}
	for _, r := range reqs {
		st, err := s.Start(g.ctx, g.in, r)
		if err != nil {
			return err
		}
		g.streams = append(g.streams, st)
	}
	return nil
}

// Load is Generate without a generation: it gets req's model loaded (an
// Ollama request without a prompt) and holds its instance until Close.
func (s *Service) Load(ctx context.Context, req *Request) (*Generation, error) {
	return s.acquire(ctx, req)
}

func (s *Service) acquire(ctx context.Context, req *Request) (*Generation, error) {
	ctx, cancel := context.WithCancel(ctx)
	in, err := s.AcquireFor(ctx, req)
	if err != nil {
		cancel()
		return nil, err
	}
	return &Generation{in: in, ctx: ctx, cancel: cancel, acquired: time.Now()}, nil
}

// sharesMedia reports whether b is a copy of a that shares its media.
func sharesMedia(a, b *Request) bool {
	return len(a.Media) > 0 && len(a.Media) == len(b.Media) && &a.Media[0] == &b.Media[0]
}

// Instance is the model instance the generation runs on.
func (g *Generation) Instance() *Instance { return g.in }

// Acquired is when the instance was ready (loaded or not): the end of
// Ollama's load_duration.
func (g *Generation) Acquired() time.Time { return g.acquired }

// Streams are the started requests' streams, in the order given.
func (g *Generation) Streams() []*Stream { return g.streams }

// Stream is the first request's stream (the only one, for most dialects);
// nil after Load.
func (g *Generation) Stream() *Stream {
	if len(g.streams) == 0 {
		return nil
	}
	return g.streams[0]
}

// Context is the generations' context: done once Close is called or the
// context given to Generate ends.
func (g *Generation) Context() context.Context { return g.ctx }

// Close ends the generations that still run, then hands the instance
// back. A second Close does nothing.
func (g *Generation) Close() {
	g.once.Do(func() {
		g.cancel()
		g.in.Release()
	})
}
