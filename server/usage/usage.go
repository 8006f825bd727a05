package usage

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
)

// Counters are one key's usage; safe for concurrent use.
type Counters struct {
	requests, limited, tokensIn, tokensOut atomic.Int64
}

// Request counts one request.
func (c *Counters) Request() { c.requests.Add(1) }

// Limited counts one request refused by a rate limit.
func (c *Counters) Limited() { c.limited.Add(1) }

// Tokens adds prompt (in) and generated (out) tokens.
func (c *Counters) Tokens(in, out int) {
	c.tokensIn.Add(int64(in))
	c.tokensOut.Add(int64(out))
}

// Snapshot is one key's usage at a moment.
type Snapshot struct {
	Key         string `json:"key"` // the key's id, never the key
	Requests    int64  `json:"requests"`
	RateLimited int64  `json:"rate_limited"`
	TokensIn    int64  `json:"tokens_in"`
	TokensOut   int64  `json:"tokens_out"`
}

// Reader is what an exporter needs: every key's usage so far.
type Reader interface {
	Snapshot() []Snapshot
}

// Table holds the counters of every key by id. The zero value is ready to
// use. Shared (Share), its Snapshot is the totals of every server that
// shares the sink.
type Table struct {
	mu sync.Mutex
	m  map[string]*Counters
	// sharing (share.go)
	sink    Sink
	flushMu sync.Mutex          // one Flush at a time
	flushed map[string]Snapshot // this server's counts the sink has
	totals  map[string]Snapshot // every server's totals, as last read
	pending *batch              // sent, not acknowledged (under mu)
	replica string              // random: batch ids are replica-n
	batches int
}

// For returns the counters of the key with this id, creating them.
func (t *Table) For(key string) *Counters {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*Counters{}
	}
	c := t.m[key]
	if c == nil {
		c = &Counters{}
		t.m[key] = c
	}
	return c
}

// Snapshot returns every key's usage, sorted by key id: this server's
// counts, or with a sink every server's (share.go).
func (t *Table) Snapshot() []Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sink != nil {
		return t.sharedLocked()
	}
	return t.localLocked()
}

// localLocked is this server's counts, sorted by key id.
func (t *Table) localLocked() []Snapshot {
	out := make([]Snapshot, 0, len(t.m))
	for k, c := range t.m {
		out = append(out, Snapshot{
			Key: k, Requests: c.requests.Load(), RateLimited: c.limited.Load(),
			TokensIn: c.tokensIn.Load(), TokensOut: c.tokensOut.Load(),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

type ctxKey struct{}

// NewContext returns ctx carrying c: tokens processed for requests
// made with the context are added to c.
func NewContext(ctx context.Context, c *Counters) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext returns the counters ctx carries, or nil.
func FromContext(ctx context.Context) *Counters {
	c, _ := ctx.Value(ctxKey{}).(*Counters)
	return c
}

// AddTokens adds tokens to the counters ctx carries, if any.
func AddTokens(ctx context.Context, in, out int) {
	if c := FromContext(ctx); c != nil {
		c.Tokens(in, out)
	}
}

// Streams bounds how many requests one key has on models at once (a
// generation, n choices of one request or an embedding request each
// count once, from the moment they ask for their model until they hand
// it back). infer decides it, with the queue bound, when a request
// acquires its model (infer/admission.go); the zero or a nil Streams has
// no bound.
type Streams struct {
	max int64
	n   atomic.Int64
}

// NewStreams makes a bound of max requests in flight (0: none).
func NewStreams(max int) *Streams { return &Streams{max: int64(max)} }

// Max is the bound (0: none).
func (s *Streams) Max() int {
	if s == nil {
		return 0
	}
	return int(s.max)
}

// Enter takes a place, or reports that all max are taken. leave gives it
// back; it may be called more than once.
func (s *Streams) Enter() (leave func(), ok bool) {
	if s == nil || s.max <= 0 {
		return func() {}, true
	}
	if s.n.Add(1) > s.max {
		s.n.Add(-1)
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { s.n.Add(-1) }) }, true
}

type streamsKey struct{}

// WithStreams returns ctx carrying a key's stream bound.
func WithStreams(ctx context.Context, s *Streams) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, streamsKey{}, s)
}

// StreamsFrom is the stream bound ctx carries, or nil.
func StreamsFrom(ctx context.Context) *Streams {
	s, _ := ctx.Value(streamsKey{}).(*Streams)
	return s
}
