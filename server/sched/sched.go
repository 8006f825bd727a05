// Package sched decides which model instances are loaded and hands
// requests to them: a cache of runners keyed by model file and
// load-affecting options, with keep_alive expiry and least-recently-used
// eviction. It never evicts a model that has requests running; a request
// that needs room held by busy models waits for it.
package sched

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/api"
)

// Config are the server-wide settings of every model instance.
type Config struct {
	Parallel   int           // slots per instance
	NumCtx     int           // default per-slot context (0: min(4096, model's))
	MaxLoaded  int           // most instances loaded at once (0: 3)
	KeepAlive  time.Duration // default keep_alive: 0 unloads after each request, negative never
	Threads    int
	FlashAttn  engine.FlashAttention
	KVType     string
	BackendDir string
}

// Key identifies a model instance: the file and every option that changes
// how it is loaded.
type Key struct {
	Path      string
	NumCtx    int // 0: the default for the model
	NumBatch  int
	NumGPU    int
	MainGPU   int
	NoMMap    bool
	MLock     bool
	NumThread int
}

// KeyFor derives the instance key of a request from its options.
func KeyFor(path string, o api.Options) Key {
	return Key{
		Path: path, NumCtx: o.NumCtx, NumBatch: o.NumBatch, NumGPU: o.NumGPU, MainGPU: o.MainGPU,
		NoMMap: o.UseMMap != nil && !*o.UseMMap, MLock: o.UseMLock, NumThread: o.NumThread,
	}
}

// Instance is a loaded model with its runner.
type Instance struct {
	Key          Key
	Name         string
	Model        *engine.Model
	Runner       *runner.Runner
	LoadDuration time.Duration
	LoadedAt     time.Time

	refs      int
	expiresAt time.Time // zero: never (while idle)
	lastUsed  time.Time
	timer     *time.Timer
	ready     chan struct{} // closed when the load finished
	err       error

	embedMu  sync.Mutex
	embedCtx *engine.Context
}

// ExpiresAt is when an idle instance will be unloaded (zero: never or busy).
func (in *Instance) ExpiresAt() time.Time { return in.expiresAt }

// Scheduler is the model cache.
type Scheduler struct {
	cfg     Config
	mu      sync.Mutex
	loaded  map[Key]*Instance
	changed chan struct{} // closed and replaced whenever an instance is released or unloaded
}

// New creates a scheduler.
func New(cfg Config) *Scheduler {
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.MaxLoaded <= 0 {
		cfg.MaxLoaded = 3
	}
	return &Scheduler{cfg: cfg, loaded: map[Key]*Instance{}, changed: make(chan struct{})}
}

// Config is the scheduler's configuration.
func (s *Scheduler) Config() Config { return s.cfg }

// Acquire returns a loaded instance for key, loading it (and evicting idle
// instances to make room) when needed. The caller must Release it. The
// load duration is non-zero when this call loaded the model.
func (s *Scheduler) Acquire(ctx context.Context, name string, key Key) (*Instance, time.Duration, error) {
	for {
		s.mu.Lock()
		if in, ok := s.loaded[key]; ok {
			in.refs++
			s.stopTimer(in)
			s.mu.Unlock()
			select {
			case <-in.ready:
			case <-ctx.Done():
				s.Release(in, s.cfg.KeepAlive)
				return nil, 0, ctx.Err()
			}
			if in.err != nil {
				s.Release(in, 0)
				return nil, 0, in.err
			}
			return in, 0, nil
		}
		if len(s.loaded) >= s.cfg.MaxLoaded && !s.evictOneLocked() {
			// Every instance is busy: wait until one is released.
			ch := s.changed
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
		}
		in := &Instance{Key: key, Name: name, refs: 1, ready: make(chan struct{})}
		s.loaded[key] = in
		s.mu.Unlock()

		t0 := time.Now()
		in.Model, in.Runner, in.err = s.load(key)
		in.LoadDuration = time.Since(t0)
		in.LoadedAt = time.Now()
		close(in.ready)
		if in.err != nil {
			s.mu.Lock()
			delete(s.loaded, key)
			s.notifyLocked()
			s.mu.Unlock()
			return nil, 0, in.err
		}
		slog.Info("model loaded", "model", name, "path", key.Path, "num_ctx", in.Runner.Config().NumCtx,
			"parallel", in.Runner.Config().Parallel, "took", in.LoadDuration.Round(time.Millisecond))
		return in, in.LoadDuration, nil
	}
}

func (s *Scheduler) load(key Key) (*engine.Model, *runner.Runner, error) {
	m, err := engine.LoadModel(key.Path, engine.ModelParams{
		GPULayers: key.NumGPU, MainGPU: key.MainGPU, NoMMap: key.NoMMap, MLock: key.MLock,
	})
	if err != nil {
		return nil, nil, err
	}
	nctx := key.NumCtx
	if nctx <= 0 {
		nctx = s.cfg.NumCtx
	}
	if nctx <= 0 {
		nctx = min(4096, m.Meta.ContextLength)
		if nctx <= 0 {
			nctx = 2048
		}
	}
	threads := key.NumThread
	if threads <= 0 {
		threads = s.cfg.Threads
	}
	r, err := runner.New(m, runner.Config{
		Parallel: s.cfg.Parallel, NumCtx: nctx, NumBatch: key.NumBatch,
		Threads: threads, FlashAttn: s.cfg.FlashAttn, KVType: s.cfg.KVType,
	})
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("load %s: %w", key.Path, err)
	}
	return m, r, nil
}

// Release returns an instance after a request. keepAlive is how long it
// stays loaded once idle: 0 unloads it now, negative keeps it forever.
func (s *Scheduler) Release(in *Instance, keepAlive time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in.refs--
	in.lastUsed = time.Now()
	if in.refs > 0 || in.err != nil {
		return
	}
	switch {
	case keepAlive == 0:
		s.unloadLocked(in)
	case keepAlive < 0:
		in.expiresAt = time.Time{}
	default:
		in.expiresAt = time.Now().Add(keepAlive)
		in.timer = time.AfterFunc(keepAlive, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.loaded[in.Key] == in && in.refs == 0 && !in.expiresAt.IsZero() && !time.Now().Before(in.expiresAt) {
				s.unloadLocked(in)
			}
		})
	}
	s.notifyLocked()
}

func (s *Scheduler) stopTimer(in *Instance) {
	if in.timer != nil {
		in.timer.Stop()
		in.timer = nil
	}
	in.expiresAt = time.Time{}
}

// evictOneLocked unloads the least recently used idle instance.
func (s *Scheduler) evictOneLocked() bool {
	var victim *Instance
	for _, in := range s.loaded {
		if in.refs == 0 && (victim == nil || in.lastUsed.Before(victim.lastUsed)) {
			victim = in
		}
	}
	if victim == nil {
		return false
	}
	s.unloadLocked(victim)
	return true
}

func (s *Scheduler) unloadLocked(in *Instance) {
	s.stopTimer(in)
	delete(s.loaded, in.Key)
	if in.Runner != nil {
		in.Runner.Close()
	}
	in.embedMu.Lock()
	in.embedCtx.Close()
	in.embedMu.Unlock()
	if in.Model != nil {
		in.Model.Close()
	}
	slog.Info("model unloaded", "model", in.Name)
	s.notifyLocked()
}

func (s *Scheduler) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Unload unloads every idle instance of a model file now (keep_alive 0 on
// a load-only request). Busy instances unload when their requests end.
func (s *Scheduler) Unload(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.loaded {
		if in.Key.Path == path && in.refs == 0 {
			s.unloadLocked(in)
		}
	}
}

// Loaded lists the loaded instances.
func (s *Scheduler) Loaded() []*Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Instance, 0, len(s.loaded))
	for _, in := range s.loaded {
		out = append(out, in)
	}
	return out
}

// Close unloads everything, waiting for nothing: running requests end
// with an error.
func (s *Scheduler) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.loaded {
		select {
		case <-in.ready:
			s.unloadLocked(in)
		default:
		}
	}
}

// Embed returns the pooled, normalised embedding of each text, and the
// number of tokens evaluated. It uses a second context of the instance,
// made on first use and shared by embedding requests one at a time. A
// text longer than the context is cut to fit when truncate is set, else it
// is an error.
func (in *Instance) Embed(texts []string, truncate bool) ([][]float32, int, error) {
	in.embedMu.Lock()
	defer in.embedMu.Unlock()
	if in.embedCtx == nil {
		nctx := in.Runner.Config().NumCtx
		ctx, err := in.Model.NewContext(engine.ContextParams{
			NumCtx: nctx, NumBatch: nctx, NumUBatch: nctx, Threads: in.Runner.Config().Threads, Embeddings: true,
		})
		if err != nil {
			return nil, 0, err
		}
		in.embedCtx = ctx
	}
	ctx := in.embedCtx
	out := make([][]float32, len(texts))
	total := 0
	b := engine.NewBatch(ctx.NumCtx())
	defer b.Close()
	for i, text := range texts {
		toks, err := in.Model.Tokenize(text, true, false)
		if err != nil {
			return nil, 0, err
		}
		if len(toks) > ctx.NumCtx() {
			if !truncate {
				return nil, 0, fmt.Errorf("input %d has %d tokens, more than the context of %d", i, len(toks), ctx.NumCtx())
			}
			toks = toks[:ctx.NumCtx()]
		}
		if len(toks) == 0 {
			return nil, 0, fmt.Errorf("input %d is empty", i)
		}
		ctx.ClearMemory()
		b.Clear()
		for p, t := range toks {
			b.Add(t, p, 0, true)
		}
		if err := ctx.Decode(b); err != nil {
			return nil, 0, err
		}
		if out[i], err = ctx.Embeddings(0); err != nil {
			return nil, 0, err
		}
		total += len(toks)
	}
	return out, total, nil
}
