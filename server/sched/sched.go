// Package sched decides which model instances are loaded and hands
// requests to them: a cache of runners keyed by model file and
// load-affecting options, with keep_alive expiry and least-recently-used
// eviction. It never evicts a model that has requests running; a request
// that needs room held by busy models waits for it.
package sched

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/gpu"
	"github.com/tadpole-llm/tadpole/engine/mtmd"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// Config are the server-wide settings of every model instance.
type Config struct {
	Parallel  int           // slots per instance
	NumCtx    int           // default per-slot context, at most a model's trained one (0: min(4096, model's))
	MaxLoaded int           // most instances loaded at once (0: as many as fit)
	KeepAlive time.Duration // default keep_alive: 0 unloads after each request, negative never
	Threads   int
	FlashAttn engine.FlashAttention
	KVType    string
	// MaxQueue bounds the requests waiting for a slot across every
	// instance (0: 512); past it requests are refused with ErrQueueFull
	// (infer.Service counts them, atomically with queuing them).
	MaxQueue int
	// GPUs is the GPU inventory (nil: NVML).
	GPUs gpu.Inventory
	// MemoryBytes is the host memory models may use (0: the machine's
	// total memory, from /proc/meminfo).
	MemoryBytes uint64
	// MaxCtx is the largest per-request context a client may ask for with
	// num_ctx (0: the model's training context, or NumCtx when that is
	// larger).
	MaxCtx int
	// AutoSlots and AutoCtx choose each model's slots (Parallel ignored)
	// and default context (NumCtx ignored) from free memory (sizing.go):
	// the server sets them when the operator did not set --parallel or
	// --context-length.
	AutoSlots, AutoCtx bool
	// FreeMemory is the host's free memory now, for sizing (nil:
	// /proc/meminfo MemAvailable).
	FreeMemory func() uint64
	// PromptCache keeps the KV state of prompts the slots give up, for
	// every instance (nil: none; see runner.PromptCache).
	PromptCache *runner.PromptCache
	// DraftMax bounds prompt-lookup drafting per step (runner.Config:
	// 0 the default, negative off).
	DraftMax int
	// SWAFull gives sliding-window models a full-size window cache
	// (runner.Config.SWAFull: what speculative decoding needs on them).
	SWAFull bool
}

// MinCtx is the smallest context window a request may ask for.
const MinCtx = 16

// MaxCtxCap bounds every context window, whatever a GGUF header or the
// operator says: 1M tokens per slot.
const MaxCtxCap = 1 << 20

// Key identifies a model instance: the file, its per-slot context and the
// operator's load options (the server's flags and the model's Modelfile
// PARAMETERs; a request cannot set them). Given to Acquire, NumCtx is the
// context window the request needs (0: the model's default); the
// instance Acquire returns has at least that much.
type Key struct {
	Path string
	// Projector is the multimodal projector loaded beside the model (its
	// mmproj GGUF; "" for a text-only model).
	Projector string
	// Draft is the draft model loaded beside the model for speculative
	// decoding (its GGUF; "" for none: prompt lookup drafts).
	Draft string
	// Version is the file's version (fileVersion); Acquire sets it.
	Version   string
	NumCtx    int
	NumBatch  int
	NumGPU    int
	MainGPU   int
	NoMMap    bool
	MLock     bool
	NumThread int
}

// KeyFor derives the instance key of a request from its options. A
// num_batch of 0 (the default) is keyed as the batch the runner uses, so
// that it and an explicit PARAMETER num_batch 512 share an instance.
func KeyFor(path string, o ollamaapi.Options) Key {
	return Key{
		Path: path, NumCtx: o.NumCtx, NumBatch: batchSize(Key{NumBatch: o.NumBatch}), NumGPU: o.NumGPU, MainGPU: o.MainGPU,
		NoMMap: o.UseMMap != nil && !*o.UseMMap, MLock: o.UseMLock, NumThread: o.NumThread,
	}
}

// Instance is a loaded model with its runner.
type Instance struct {
	Key    Key
	Name   string
	Model  *engine.Model
	Runner *runner.Runner
	// Projector encodes images and audio for the model (nil without
	// one, or when it failed to load: ProjectorError says why); loaded
	// and freed with it.
	Projector *mtmd.Projector
	// Draft drafts for the model (Key.Draft; nil without one); loaded and
	// freed with it.
	Draft        *engine.Model
	LoadDuration time.Duration
	LoadedAt     time.Time
	Placement    Placement
	NumCtx       int // per-slot context
	// DefaultCtx is the window of a request that sets no num_ctx.
	DefaultCtx int
	// Slots is the instance's slot count; Sizing how it and DefaultCtx
	// were chosen.
	Slots  int
	Sizing Sizing

	refs      int
	stale     bool      // its file changed on disk: unload when idle
	expiresAt time.Time // zero: never (while idle)
	lastUsed  time.Time
	timer     *time.Timer
	ready     chan struct{} // closed when the load finished
	err       error
}

// AdapterBytes is the memory of the LoRA adapters loaded on the
// instance (0 while it loads).
func (in *Instance) AdapterBytes() uint64 {
	select {
	case <-in.ready: // Runner is set before ready closes
	default:
		return 0
	}
	if in.Runner == nil {
		return 0
	}
	return in.Runner.AdapterBytes()
}

// Status is a snapshot of a loaded instance for /api/ps.
type Status struct {
	*Instance
	Requests  int       // requests holding the instance
	ExpiresAt time.Time // when it unloads if it stays idle (zero: never, or busy)
}

// Status lists the loaded instances (not those still loading).
func (s *Scheduler) Status() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Status
	for _, in := range s.loaded {
		select {
		case <-in.ready:
			if in.err == nil {
				out = append(out, Status{Instance: in, Requests: in.refs, ExpiresAt: in.expiresAt})
			}
		default:
		}
	}
	return out
}

// Scheduler is the model cache.
type Scheduler struct {
	cfg  Config
	mu   sync.Mutex
	ctxs sync.Map // path → trainedCtx
	// sizes: sizeKey → Sizing, decided once per model file version.
	sizes sync.Map
	// projErrs: Key → why the projector of the instance loaded under it
	// failed (the instance serves text only).
	projErrs sync.Map
	loaded   map[Key]*Instance
	changed  chan struct{} // closed and replaced whenever an instance is released or unloaded
}

// ErrQueueFull is returned when MaxQueue requests already wait.
var ErrQueueFull = errors.New("too many requests waiting; try again later")

// New creates a scheduler.
func New(cfg Config) *Scheduler {
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 512
	}
	if cfg.GPUs == nil {
		cfg.GPUs = gpu.NVML()
	}
	if cfg.MemoryBytes == 0 {
		cfg.MemoryBytes = totalMemory()
	}
	return &Scheduler{cfg: cfg, loaded: map[Key]*Instance{}, changed: make(chan struct{})}
}

// Config is the scheduler's configuration.
func (s *Scheduler) Config() Config { return s.cfg }

// Acquire returns a loaded instance for key, loading it when needed. To
// make room it unloads idle instances, least recently used first; when
// only busy instances are in the way it waits for them. The caller must
// Release the instance. The load duration is non-zero when this call
// loaded the model.
func (s *Scheduler) Acquire(ctx context.Context, name string, key Key) (*Instance, time.Duration, error) {
	def, maxCtx, version, err := s.contextLimits(key.Path)
	if err != nil {
		return nil, 0, err
	}
	key.Version = version
	size, err := s.sizingFor(key, def, maxCtx)
	if err != nil {
		return nil, 0, err
	}
	if s.cfg.AutoCtx {
		def = min(max(size.Context, MinCtx), maxCtx)
	}
	want := key.NumCtx
	if want == 0 {
		want = def
	}
	if want > maxCtx {
		// Past the model's largest window (its trained context, or
		// --max-ctx): capped, as Ollama does, never a 400 or an
		// allocation the model cannot use.
		slog.Warn("num_ctx is past the model's largest window (its trained context, or --max-ctx): capped to it",
			"model", name, "num_ctx", want, "capped", maxCtx)
		want = maxCtx
	}
	if err := engine.CheckRange("num_ctx", int64(want), MinCtx, int64(maxCtx)); err != nil {
		return nil, 0, err
	}
	key.NumCtx = instanceCtx(want, def, maxCtx)
	// The estimate is made once, and only when no instance fits.
	var est *Estimate
	for {
		s.mu.Lock()
		s.dropStaleLocked(key)
		if in := s.findLocked(key, want); in != nil {
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
		if est == nil {
			s.mu.Unlock()
			f, err := gguf.Open(key.Path)
			if err != nil {
				return nil, 0, fmt.Errorf("load: %w", err)
			}
			slots, err := mulInt(key.NumCtx, size.SlotsFor(key.NumCtx))
			if err != nil {
				return nil, 0, fmt.Errorf("load %s: %w", key.Path, err)
			}
			e, err := EstimateMemory(f, slots, s.cfg.KVType, batchSize(key))
			if err == nil {
				// The runner's embedding context, made on the first
				// embedding request: counted up front so that it never
				// pushes a loaded instance past the memory it was placed in.
				err = e.AddEmbedding(key.NumCtx)
			}
			if err == nil && key.Projector != "" {
				err = e.AddProjector(key.Projector)
			}
			if err == nil && key.Draft != "" {
				err = addDraft(&e, key.Draft, slots, s.cfg.KVType, batchSize(key))
			}
			if err != nil {
				return nil, 0, fmt.Errorf("load %s: %w", key.Path, err)
			}
			est = &e
			continue
		}
		place, fits, err := s.placeLocked(*est, key.NumGPU)
		if errors.Is(err, errNeverFits) {
			// Too large even with nothing else loaded: refuse without
			// unloading anything.
			s.mu.Unlock()
			return nil, 0, fmt.Errorf("load %s: %w", key.Path, err)
		}
		if !fits || (s.cfg.MaxLoaded > 0 && len(s.loaded) >= s.cfg.MaxLoaded) {
			if s.evictOneLocked() {
				s.mu.Unlock()
				continue
			}
			if s.busyLocked() {
				// Only busy instances are in the way: wait for one.
				ch := s.changed
				s.mu.Unlock()
				select {
				case <-ch:
					continue
				case <-ctx.Done():
					return nil, 0, ctx.Err()
				}
			}
			if err != nil {
				// Nothing else is loaded and it still does not fit.
				s.mu.Unlock()
				return nil, 0, fmt.Errorf("load %s: %w", key.Path, err)
			}
		}
		in := &Instance{Key: key, Name: name, refs: 1, ready: make(chan struct{}), Placement: place, NumCtx: key.NumCtx, DefaultCtx: def,
			Slots: size.SlotsFor(key.NumCtx), Sizing: size}
		s.loaded[key] = in
		s.mu.Unlock()

		t0 := time.Now()
		before := s.gpuFree(place.GPUs)
		in.Model, in.Runner, in.Projector, in.Draft, in.err = s.load(key, key.NumCtx, in.Slots, place)
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
		slog.Info("model loaded", "model", name, "path", key.Path, "num_ctx", key.NumCtx, "parallel", in.Slots, "sizing", size.Mode,
			"placement", place.Reason, "gpu_layers", place.GPULayers, "processor", place.Processor(),
			"estimated_mib", place.EstimatedBytes>>20, "weights_mib", in.Model.Meta.SizeBytes>>20,
			"took", in.LoadDuration.Round(time.Millisecond))
		if len(place.GPUs) > 0 {
			used := int64(before) - int64(s.gpuFree(place.GPUs))
			slog.Info("GPU memory after load", "model", name, "estimated_gpu_mib", place.EstimatedGPUBytes>>20,
				"nvml_used_mib", used>>20, "gpus", place.GPUs)
		}
		return in, in.LoadDuration, nil
	}
}

// batchSize is the decode batch the runner will use for key: the
// estimate must count the same compute buffer the runner allocates.
func batchSize(key Key) int {
	if key.NumBatch > 0 {
		return key.NumBatch
	}
	return runner.DefaultBatch
}

// placeLocked places an estimate in what the loaded instances leave free.
// fits is false when the model does not fit, or fits worse (fewer layers
// on GPUs) than it would with nothing else loaded.
func (s *Scheduler) placeLocked(e Estimate, numGPU int) (Placement, bool, error) {
	devs, err := s.cfg.GPUs.Devices()
	if err != nil {
		slog.Warn("GPU inventory failed; placing on the CPU", "error", err)
		devs = nil
	}
	empty := append([]gpu.Device(nil), devs...)
	for i := range empty {
		empty[i].FreeBytes = empty[i].TotalBytes
	}
	ideal, err := Place(e, empty, numGPU, s.cfg.MemoryBytes)
	if err != nil {
		return ideal, false, fmt.Errorf("%w: %w", errNeverFits, err)
	}
	cpuUsed := uint64(0)
	for _, in := range s.loaded {
		p := in.Placement
		cpuUsed += p.EstimatedBytes - min(p.EstimatedBytes, p.EstimatedGPUBytes)
		// LoRA adapters loaded since (issue 38) sit beside their
		// model's weights: on its GPUs when it has any, else in memory.
		adapters := in.AdapterBytes()
		if len(p.GPUs) == 0 {
			cpuUsed += adapters
		}
		// NVML's free memory already counts loaded models; a fake
		// inventory's does not: take the smaller of the two views.
		if len(p.GPUs) > 0 {
			share := (p.EstimatedGPUBytes + adapters) / uint64(len(p.GPUs))
			for i := range devs {
				for _, g := range p.GPUs {
					if devs[i].Index == g {
						left := devs[i].TotalBytes - min(devs[i].TotalBytes, share)
						devs[i].FreeBytes = min(devs[i].FreeBytes, left)
						devs[i].TotalBytes = left
					}
				}
			}
		}
	}
	cpuFree := s.cfg.MemoryBytes - min(s.cfg.MemoryBytes, cpuUsed)
	p, err := Place(e, devs, numGPU, cpuFree)
	return p, err == nil && p.GPULayers >= ideal.GPULayers, err
}

// gpuFree is the free memory of the given GPUs, summed, as the inventory
// reports it now.
func (s *Scheduler) gpuFree(indexes []int) uint64 {
	if len(indexes) == 0 {
		return 0
	}
	devs, _ := s.cfg.GPUs.Devices()
	var free uint64
	for _, d := range devs {
		for _, i := range indexes {
			if d.Index == i {
				free += d.FreeBytes
			}
		}
	}
	return free
}

func (s *Scheduler) busyLocked() bool {
	for _, in := range s.loaded {
		if in.refs > 0 {
			return true
		}
	}
	return false
}

// ProjectorError is why the instance's projector failed to load (nil when
// it loaded or there is none).
func (s *Scheduler) ProjectorError(in *Instance) error {
	if v, ok := s.projErrs.Load(in.Key); ok {
		return v.(error)
	}
	return nil
}

func (s *Scheduler) load(key Key, nctx, slots int, place Placement) (*engine.Model, *runner.Runner, *mtmd.Projector, *engine.Model, error) {
	m, err := engine.LoadModel(key.Path, engine.ModelParams{
		GPULayers: place.GPULayers, MainGPU: mainGPU(key, place), TensorSplit: place.TensorSplit,
		NoMMap: key.NoMMap, MLock: key.MLock,
	})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	threads := key.NumThread
	if threads <= 0 {
		threads = s.cfg.Threads
	}
	var proj *mtmd.Projector
	s.projErrs.Delete(key)
	if key.Projector != "" {
		// On the GPU when the model's layers are (mtmd falls back to the
		// CPU without a GPU backend).
		proj, err = mtmd.Load(key.Projector, m, mtmd.Options{Threads: threads, GPU: place.GPULayers != 0})
		if err != nil {
			// The model still serves text; image requests are told why
			// they cannot be served (ProjectorError).
			slog.Warn("projector not loaded: the model serves text only", "model", key.Path, "projector", key.Projector, "error", err)
			s.projErrs.Store(key, err)
			proj = nil
		}
	}
	var draft *engine.Model
	if key.Draft != "" {
		// Beside the model: on its GPU when its layers are there.
		draft, err = engine.LoadModel(key.Draft, engine.ModelParams{GPULayers: place.GPULayers, MainGPU: mainGPU(key, place)})
		if err == nil {
			if err = runner.CheckDraftVocab(m, draft); err != nil {
				draft.Close()
			}
		}
		if err != nil {
			proj.Close()
			m.Close()
			return nil, nil, nil, nil, fmt.Errorf("draft model %s cannot draft for %s: %w", key.Draft, key.Path, err)
		}
	}
	r, err := runner.New(m, runner.Config{
		Parallel: slots, NumCtx: nctx, NumBatch: key.NumBatch,
		Threads: threads, FlashAttn: s.cfg.FlashAttn, KVType: s.cfg.KVType,
		PromptCache: s.cfg.PromptCache, CacheKey: fileIdentity(key.Path), DraftMax: s.cfg.DraftMax, Draft: draft, SWAFull: s.cfg.SWAFull,
	})
	if err != nil {
		proj.Close()
		m.Close()
		if draft != nil {
			draft.Close()
		}
		return nil, nil, nil, nil, fmt.Errorf("load %s: %w", key.Path, err)
	}
	return m, r, proj, draft, nil
}

func mainGPU(key Key, p Placement) int {
	if key.MainGPU > 0 || len(p.GPUs) == 0 {
		return key.MainGPU
	}
	return p.GPUs[0]
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
	case keepAlive == 0, in.stale:
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
	in.Projector.Close() // nil-safe; before the model it encodes for
	if in.Model != nil {
		in.Model.Close()
	}
	if in.Draft != nil { // after the runner that drafts with it
		in.Draft.Close()
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
	// The prompts kept in RAM go to disk, for the next start.
	s.cfg.PromptCache.Flush()
}

// fileIdentity names a model file's contents for the prompt cache: its
// path, size and modification time (a store blob's path is its digest; a
// bare NAME.gguf rewritten in place gets another identity).
func fileIdentity(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return path
	}
	return fmt.Sprintf("%s|%d|%d", path, fi.Size(), fi.ModTime().UnixNano())
}
