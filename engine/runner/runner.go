package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

// DefaultBatch is the tokens of one decode step when Config.NumBatch is
// 0: the one owner of num_batch's default (Ollama's 512), which the
// scheduler's memory estimate uses too.
const DefaultBatch = 512

// Config sizes a runner.
type Config struct {
	// SWAFull keeps a full-size cache for a sliding-window model's window
	// layers (llama.cpp's swa_full, the memory of a model without a
	// window), which speculative decoding needs to roll back exactly:
	// without it such a model does not speculate.
	SWAFull bool
	// Parallel is the number of slots (sequences decoded together).
	Parallel int
	// NumCtx is each slot's context in tokens; the KV cache holds
	// Parallel × NumCtx tokens.
	NumCtx int
	// NumBatch bounds the tokens of one decode step (0: DefaultBatch).
	NumBatch  int
	Threads   int
	FlashAttn engine.FlashAttention
	KVType    string
	// KVUnified puts every slot's tokens in one KV buffer instead of a
	// stream of NumCtx cells per slot. Off by default: with a unified
	// buffer each step attends over every cell in use, including the
	// prefixes idle slots keep for reuse, so one stream slows down as
	// the other slots fill (measured: per-slot streams are 8% faster at 8
	// streams, 17% at 16, and a fresh 512-token prompt is 1.2–1.4×
	// quicker to its first token once slots hold cached prefixes).
	KVUnified bool
	// PromptCache, when set, keeps the KV state of the prompts slots give
	// up, for the requests that return to them (see PromptCache); CacheKey
	// names the model (its file's identity: the runner adds its KV type
	// and window), so that a state is restored only where it fits.
	PromptCache *PromptCache
	CacheKey    string
	// DraftMax bounds the tokens a generating slot drafts by prompt
	// lookup per step (speculate.go): 0 DefaultDraftMax, negative off,
	// at most MaxDraft.
	DraftMax int
	// Draft, when set, drafts instead of prompt lookup (draftmodel.go): a
	// model of the same vocabulary (CheckDraftVocab), which the caller
	// keeps loaded while the runner lives.
	Draft *engine.Model
	// PriorityStep is what one level of Request.Priority is worth in
	// waiting time (0: DefaultPriorityStep): a waiting request is
	// overtaken by a request of a higher priority only if that one queued
	// less than PriorityStep × the difference after it. So background
	// work gives way to interactive requests but never starves under a
	// steady stream of them.
	PriorityStep time.Duration
}

// DefaultPriorityStep is Config.PriorityStep's default: a job (priority
// -1) lets interactive requests that arrive up to 2 s after it go first.
const DefaultPriorityStep = 2 * time.Second

// MaxPriority bounds Request.Priority either way.
const MaxPriority = 100

// Request is one generation. Prompt holds the already templated and
// tokenized prompt.
type Request struct {
	Prompt []engine.Token
	// Embeds are spans of Prompt fed as embeddings instead of tokens (an
	// image or audio clip), in order and not overlapping. Prompt holds a
	// placeholder token at each of their positions (callers derive them
	// from the media's hash, e.g. negative values), which the prefix
	// cache compares like any token, so a cached prefix with an image is
	// reused only for the same image. See Embeds for truncation and
	// context shifts.
	Embeds   []Embeds
	Sampling engine.SamplerParams
	// NumPredict limits the generated tokens: -1 (or 0 before defaults
	// are applied by the caller) unlimited, -2 until the context is full.
	NumPredict int
	// DraftMax bounds the draft tokens per step for this request, within
	// the runner's Config.DraftMax: 0 the runner's, negative none.
	DraftMax int
	// NumCtx is the request's context window in tokens (0: the runner's
	// Config.NumCtx; never more): the prompt is truncated and generation
	// shifts or stops at it, as on an instance loaded with that context.
	NumCtx int
	// NumKeep is how many tokens from the start survive truncation and
	// context shifts.
	NumKeep int
	Stop    []string
	// Print are control tokens the output writes out as text: a chat
	// format's markup that the model's vocabulary marks CONTROL (Mistral's
	// [TOOL_CALLS] and [THINK]), which the output parser must see, as
	// llama-server writes a format's preserved tokens. Other control
	// tokens are left out of the text.
	Print []engine.Token
	// NoTruncate refuses a prompt longer than the context instead of
	// dropping tokens from its front.
	NoTruncate bool
	// NoShift ends generation with "length" when the context is full
	// instead of dropping the oldest half.
	NoShift bool
	// Logprobs reports each generated token's log-probability (under the
	// model's distribution, before sampling transforms), with the
	// TopLogprobs most likely alternatives.
	Logprobs    bool
	TopLogprobs int
	// Priority orders waiting requests: higher first, FIFO within a
	// priority, each level worth Config.PriorityStep of waiting time.
	// Background work (jobs) uses a negative priority so that interactive
	// requests overtake it for free slots, for a bounded time.
	Priority int
	// Notify, if set, is signalled (without blocking) whenever the
	// request's stream gets events, besides the stream's own Ready: one
	// reader can wait on several streams with one channel of capacity 1.
	Notify chan struct{}
	// OnDone, if set, is called with the final event in a goroutine of
	// its own, whether or not anyone reads the stream (metrics, spans).
	OnDone func(Event)
	// Adapters is the request's LoRA adapter set (adapters.go): the zero
	// value is the base model.
	Adapters AdapterSet
	// Lazy, when set, holds the output to a grammar from a trigger token
	// on (lazy.go).
	Lazy *Lazy
	// OnAdmit, if set, is called once, by the loop, when the request
	// stops waiting: it got a slot, or it ended before getting one
	// (cancelled, runner closed). Admission control counts waiting
	// requests with it.
	OnAdmit func()
}

// TokenLogprob is a token's log-probability and, if asked for, the most
// likely tokens at its position.
type TokenLogprob struct {
	Token   string // the token's text (may be part of a UTF-8 character)
	ID      engine.Token
	Logprob float32
	Top     []TokenLogprob
}

// Stats are a request's counters and timings, in Ollama's terms.
type Stats struct {
	PromptTokens       int // tokens of the (possibly truncated) prompt
	PromptEvalCount    int // prompt tokens evaluated (cache hits excluded)
	PromptEvalDuration time.Duration
	EvalCount          int // generated tokens
	EvalDuration       time.Duration
	CachedTokens       int           // prompt tokens reused from a slot's cache (or restored)
	RestoredTokens     int           // of them, restored from the prompt cache
	DraftTokens        int           // tokens drafted by prompt lookup (speculate.go)
	DraftAccepted      int           // of them, accepted
	QueueWait          time.Duration // from Generate to getting a slot
	StartedAt          time.Time     // when the request got its slot
	TimeToFirstToken   time.Duration // from Generate to the first generated token
}

// Event is one piece of a request's output. The last event has Done set,
// a DoneReason ("stop", "length" or "cancel") or an Err, the statistics
// and the full token sequence (prompt and output) for Ollama's context.
type Event struct {
	Text string
	// Logprobs are those of the tokens generated since the last event,
	// when the request asked for them.
	Logprobs   []TokenLogprob
	Done       bool
	DoneReason string
	Err        error
	Stats      Stats
	Tokens     []engine.Token

	queued time.Time // when the loop queued it (PhaseDeliver)
}

// MaxTopLogprobs bounds the alternatives reported per token (OpenAI's
// limit); each costs a pass over the vocabulary.
const MaxTopLogprobs = 20

// ErrClosed is returned for requests to a runner that was closed.
var ErrClosed = errors.New("runner closed")

// Runner owns one context over a model and its decode loop.
type Runner struct {
	model *engine.Model
	ctx   *engine.Context
	cfg   Config
	key   string // its key in the prompt cache (cacheKey)
	// ckpt: the context's sequences cannot be cut back anywhere (recurrent
	// layers, a sliding window): slots keep checkpoints (checkpoint.go).
	ckpt  bool
	batch *engine.Batch
	slots []*slot

	mu      sync.Mutex
	waiting []*request
	embeds  []*embedJob // queued embedding requests (under mu)
	tasks   []*task     // functions queued to run on the loop (Do; under mu)
	closed  bool

	encodeMu sync.Mutex // one Encode at a time
	cost     stepCost   // decode steps' time by batch size (speculate.go; the loop's)
	// specProposed, specAccepted: the decayed draft tokens of every slot
	// (speculate.go's seedSpec; the loop's)
	specProposed, specAccepted float64
	// the draft model's context and batch (draftmodel.go; the loop's)
	draftCtx   *engine.Context
	draftBatch *engine.Batch
	// draftTokCost is the draft model's seconds per drafted token, decayed
	// (0 for prompt lookup): part of a draft token's price.
	draftTokCost float64

	// embedCtx is the embedding context, made by the loop on the first
	// embedding request; only the loop uses it.
	embedCtx   *engine.Context
	embedBatch *engine.Batch
	// embdBatch holds the pieces of prompt spans (Request.Embeds), made
	// by the loop on first use; spanTurn is the slot whose span goes next.
	embdBatch *engine.EmbdBatch
	spanTurn  int

	// adapterKey is the LoRA adapter set the context applies (when
	// adaptersSet), lastTurn the set that decoded last while several
	// took turns (adapters.go; the loop's).
	adapterKey  string
	adaptersSet bool
	lastTurn    string
	turnSteps   int
	// adapterReg is the adapters loaded for the model (adapters.go).
	adapterReg adapterRegistry
	wake       chan struct{}
	done       chan struct{}
}

type request struct {
	Request
	sampler *engine.Sampler // built by Generate, owned by the slot once started
	lazy    *lazyState      // Request.Lazy's sampler and state (lazy.go), likewise
	prompt  []engine.Token  // Prompt after truncation
	spans   []Embeds        // Embeds after truncation
	ctx     context.Context
	stream  *Stream
	queued  time.Time
	// order is queued moved by the request's priority (Config.PriorityStep):
	// waiting requests are admitted in this order.
	order time.Time
	// prefetched is the prompt cache's disk entry read for this request
	// before it queued (promptcache.go), until a slot takes it.
	prefetched *prefetched
}

// New creates a runner over a loaded model and starts its loop.
func New(m *engine.Model, cfg Config) (*Runner, error) {
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.NumCtx <= 0 {
		cfg.NumCtx = 2048
	}
	if cfg.DraftMax > MaxDraft {
		return nil, fmt.Errorf("draft max %d is out of range (at most %d)", cfg.DraftMax, MaxDraft)
	}
	if cfg.NumBatch <= 0 {
		cfg.NumBatch = DefaultBatch
	}
	if cfg.PriorityStep <= 0 {
		cfg.PriorityStep = DefaultPriorityStep
	}
	if cfg.Parallel > engine.MaxSeq || cfg.NumCtx > engine.MaxContext/cfg.Parallel {
		return nil, fmt.Errorf("runner: %d slots of %d tokens do not fit one context (at most %d slots, %d tokens in all)",
			cfg.Parallel, cfg.NumCtx, engine.MaxSeq, engine.MaxContext)
	}
	if m.Recurrent() && (cfg.DraftMax >= 0 || cfg.Draft != nil) {
		// A recurrent state cannot be rolled back past a rejected draft.
		slog.Info("speculative decoding off: the model has recurrent layers, whose state cannot roll back a rejected draft", "model", cfg.CacheKey)
		cfg.DraftMax, cfg.Draft = -1, nil
	}
	// A sliding-window model speculates only with a full-size window
	// cache (SWAFull): a rejected draft rolls back past cells a moving
	// window would have dropped. Without it the window keeps its smaller
	// cache (llama-server's default too) and nothing is drafted.
	swaFull := cfg.SWAFull && m.SlidingWindow() > 0
	if m.SlidingWindow() > 0 && !cfg.SWAFull && (cfg.DraftMax >= 0 || cfg.Draft != nil) {
		slog.Info("speculative decoding off: the model has sliding-window layers (--swa-full turns it on, with a full-size window cache)", "model", cfg.CacheKey)
		cfg.DraftMax, cfg.Draft = -1, nil
	}
	ctx, err := m.NewContext(engine.ContextParams{
		NumCtx:    cfg.NumCtx * cfg.Parallel,
		NumBatch:  cfg.NumBatch,
		NumSeqMax: cfg.Parallel,
		Threads:   cfg.Threads,
		FlashAttn: cfg.FlashAttn,
		KVType:    cfg.KVType,
		KVUnified: cfg.KVUnified,
		SWAFull:   swaFull,
	})
	if err != nil {
		return nil, err
	}
	batch, err := engine.NewBatch(min(cfg.NumBatch, ctx.NumBatch()))
	if err != nil {
		ctx.Close()
		return nil, err
	}
	r := &Runner{
		model: m, ctx: ctx, cfg: cfg,
		batch: batch,
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	r.key = r.makeCacheKey()
	r.ckpt = ctx.Uncuttable()
	for i := 0; i < cfg.Parallel; i++ {
		r.slots = append(r.slots, &slot{id: i})
	}
	if cfg.Draft != nil {
		if err := r.newDraftContext(); err != nil {
			batch.Close()
			ctx.Close()
			return nil, err
		}
	}
	go r.loop()
	return r, nil
}

// Model is the runner's model.
func (r *Runner) Model() *engine.Model { return r.model }

// Config is the runner's configuration with defaults applied.
func (r *Runner) Config() Config { return r.cfg }

// Generate queues a request and returns its stream of events, which ends
// with a final event (Done). Cancelling ctx ends the request before the
// next decode step; its final event then has DoneReason "cancel".
func (r *Runner) Generate(ctx context.Context, req Request) (*Stream, error) {
	if len(req.Prompt) == 0 {
		return nil, errors.New("empty prompt")
	}
	if req.NumCtx < 0 || req.NumCtx > r.cfg.NumCtx {
		return nil, fmt.Errorf("num_ctx %d is out of range (1..%d)", req.NumCtx, r.cfg.NumCtx)
	}
	if req.NumCtx == 0 {
		req.NumCtx = r.cfg.NumCtx
	}
	if req.Priority < -MaxPriority || req.Priority > MaxPriority {
		return nil, fmt.Errorf("priority %d is out of range (%d..%d)", req.Priority, -MaxPriority, MaxPriority)
	}
	if req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs {
		return nil, fmt.Errorf("top_logprobs %d is out of range (0..%d)", req.TopLogprobs, MaxTopLogprobs)
	}
	if len(req.Prompt) >= req.NumCtx && req.NoTruncate {
		return nil, &ContextError{Prompt: len(req.Prompt), Context: req.NumCtx}
	}
	if err := r.checkEmbeds(&req); err != nil {
		return nil, err
	}
	prompt, spans := req.Prompt, req.Embeds
	if len(prompt) >= req.NumCtx {
		var err error
		if prompt, spans, err = truncate(prompt, spans, req.NumCtx, req.NumKeep); err != nil {
			return nil, err
		}
	}
	// The sampler is built here so a bad grammar or logit bias is the
	// caller's error, not a failed generation.
	smp, err := r.model.NewSampler(req.Sampling)
	if err != nil {
		return nil, err
	}
	lazy, err := r.newLazy(req)
	if err != nil {
		smp.Close()
		return nil, err
	}
	sr := &request{Request: req, sampler: smp, lazy: lazy, prompt: prompt, spans: spans, ctx: ctx, stream: newStream(req.Notify, req.OnDone), queued: time.Now()}
	if len(spans) == 0 {
		sr.prefetched = r.cfg.PromptCache.prefetch(r.cacheKeyFor(req.Adapters.key), prompt, MinCachedPrompt, r.ckpt)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		sr.closeSamplers()
		return nil, ErrClosed
	}
	// Insert after every waiting request that is not later in order.
	sr.order = sr.queued.Add(-time.Duration(req.Priority) * r.cfg.PriorityStep)
	i := len(r.waiting)
	for i > 0 && r.waiting[i-1].order.After(sr.order) {
		i--
	}
	r.waiting = slices.Insert(r.waiting, i, sr)
	r.mu.Unlock()
	r.signal()
	return sr.stream, nil
}

// Busy is the number of requests running or waiting.
func (r *Runner) Busy() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.waiting)
	for _, s := range r.slots {
		if s.req != nil {
			n++
		}
	}
	return n
}

// Waiting is the number of requests waiting for a slot.
func (r *Runner) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiting)
}

// Slots is the number of slots and how many are busy.
func (r *Runner) Slots() (busy, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.slots {
		if s.req != nil {
			busy++
		}
	}
	return busy, len(r.slots)
}

// Close stops the loop, ends every request (embeddings too) with
// ErrClosed and frees the contexts. The model stays loaded.
func (r *Runner) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		<-r.done
		return
	}
	r.closed = true
	r.mu.Unlock()
	r.signal()
	<-r.done
}

func (r *Runner) signal() { wake(r.wake) }

func (r *Runner) loop() {
	defer close(r.done)
	defer func() {
		r.persistSlots()
		r.closeDraft()
		r.batch.Close()
		if r.embdBatch != nil {
			r.embdBatch.Close()
		}
		r.ctx.Close()
	}()
	defer r.closeEmbeds()
	defer r.closeTasks()
	for {
		r.mu.Lock()
		closed := r.closed
		r.mu.Unlock()
		if closed {
			r.shutdown()
			return
		}
		r.admit()
		embedded := r.embedStep()
		ran := r.taskStep()
		if !r.step() && !embedded && !ran {
			<-r.wake // idle until a request arrives
		}
	}
}

// shutdown ends every waiting and running request.
func (r *Runner) shutdown() {
	r.mu.Lock()
	waiting := r.waiting
	r.waiting = nil
	r.mu.Unlock()
	for _, q := range waiting {
		q.admitted()
		q.closeSamplers()
		q.stream.send(Event{Done: true, Err: ErrClosed})
	}
	for _, s := range r.slots {
		if s.req != nil {
			r.finish(s, "", ErrClosed)
		}
	}
}

// admit ends waiting requests whose client went away, then moves waiting
// requests into free slots in their order, each into the slot pick
// chooses.
func (r *Runner) admit() {
	r.mu.Lock()
	var gone []*request
	kept := r.waiting[:0]
	for _, q := range r.waiting {
		if q.ctx.Err() != nil {
			gone = append(gone, q)
		} else {
			kept = append(kept, q)
		}
	}
	r.waiting = kept
	r.mu.Unlock()
	for _, q := range gone {
		q.admitted()
		q.closeSamplers()
		q.stream.send(Event{Done: true, DoneReason: "cancel", Err: q.ctx.Err()})
	}
	r.mu.Lock()
	plan := r.burst()
	r.mu.Unlock()
	for {
		r.mu.Lock()
		if len(r.waiting) == 0 {
			r.mu.Unlock()
			return
		}
		q := r.waiting[0]
		best := plan[q]
		if best == nil || best.req != nil {
			best = r.pick(q, len(r.waiting), nil)
		}
		if best == nil {
			r.mu.Unlock()
			return
		}
		r.waiting = r.waiting[1:]
		best.req = q // under r.mu: Busy reads it
		r.mu.Unlock()
		q.admitted()
		r.start(best, q)
	}
}

// pick chooses a free slot for q (nil: none is free; under r.mu). With a
// KV stream per slot, llama.cpp decodes the sequences of a step in one
// ubatch only while their ids follow one another (split_equal,
// sequential): busy slots 0-7 decode as one graph, busy slots 0, 2, 4, …
// as eight, each a pass over the weights. So pick keeps the busy slots
// in as few runs as it can: it takes the free slot that joins two runs,
// else one that extends a run, else (nothing is busy) any; among those
// alike, the one whose cache holds most of q's prompt. It takes another
// free slot instead only when that one's cached tokens save at least
// MinCachedPrompt more of the prompt, or, if that slot also extends a
// run, half of it (a short prompt that a slot holds). A new run costs
// every step of every busy slot until they end, which a short prompt's
// prefill does not repay. (Measured on 2 cores, a 135M model: 8 streams
// on the even slots of 16 decode at 136-141 ms a step, on slots 0-7 at
// 52-56 ms.) A run broken by a request that ends stays broken until a
// new one fills the gap. With one unified KV buffer any set of slots
// decodes together, and pick takes the longest prefix; so it does when
// the requests waiting (q and the waiting behind it) fill every free
// slot: all slots are busy then, one run whatever the placement, and
// only the prefixes matter (16 streams arriving together went to slots
// that held other prompts, and prefilled them whole).
//
// taken marks slots as busy besides those running a request (burst's
// plans; nil: none).
func (r *Runner) pick(q *request, waiting int, taken []bool) *slot {
	var reuse, compact *slot
	reuseN, reuseRank, compactN, compactRank := -1, 0, 0, -1
	busy := func(i int) bool { return i >= 0 && i < len(r.slots) && r.occupied(i, taken) }
	free := 0
	for i, s := range r.slots {
		if busy(i) {
			continue
		}
		free++
		n := s.reusable(q)
		rank := 0
		if busy(i - 1) {
			rank++
		}
		if busy(i + 1) {
			rank++
		}
		if n > reuseN {
			reuse, reuseN, reuseRank = s, n, rank
		}
		if rank > compactRank || rank == compactRank && n > compactN {
			compact, compactN, compactRank = s, n, rank
		}
	}
	switch {
	case r.cfg.KVUnified || reuse == nil || reuseN-compactN >= MinCachedPrompt || waiting >= free:
		return reuse
	case reuseRank > 0 && reuseN-compactN >= (len(q.prompt)+1)/2:
		return reuse
	}
	return compact
}

// burst plans the slots of several requests waiting at once (under
// r.mu; nil: one or none waits, or the plan is pick's own). pick places
// one request at a time, next to the busy slots; a burst of returning
// streams (8 clients sending their next requests together) then lands
// off the slots that hold their prompts whenever the first one back was
// not next to the others' old slots, and prefills its prompt again. So
// burst places the whole burst twice: each request in the free slot
// that holds most of its prompt, and each where pick would put it, one
// after another. It takes the first plan when the busy slots then lie
// in no more runs than pick's plan leaves and it reuses more of the
// prompts; else pick's, request by request as always. (The requests
// are the ones free slots can take, in admission order.)
func (r *Runner) burst() map[*request]*slot {
	free := 0
	for _, s := range r.slots {
		if s.req == nil {
			free++
		}
	}
	n := min(len(r.waiting), free)
	if n < 2 || r.cfg.KVUnified {
		return nil
	}
	// pick's plan, request by request.
	taken := make([]bool, len(r.slots))
	picked := 0
	for i, q := range r.waiting[:n] {
		s := r.pick(q, len(r.waiting)-i, taken)
		if s == nil {
			return nil
		}
		taken[s.id] = true
		picked += s.reusable(q)
	}
	runsPick := r.runs(taken)
	// The prefix plan: each request the free slot that holds most of it.
	clear(taken)
	plan := make(map[*request]*slot, n)
	reused := 0
	for _, q := range r.waiting[:n] {
		var best *slot
		bestN := -1
		for i, s := range r.slots {
			if !r.occupied(i, taken) {
				if k := s.reusable(q); k > bestN {
					best, bestN = s, k
				}
			}
		}
		taken[best.id] = true
		plan[q] = best
		reused += bestN
	}
	if reused <= picked || r.runs(taken) > runsPick {
		return nil
	}
	return plan
}

// occupied says whether slot i runs a request or is taken in a plan
// (taken may be nil).
func (r *Runner) occupied(i int, taken []bool) bool {
	return r.slots[i].req != nil || taken != nil && taken[i]
}

// runs counts the runs of consecutive busy slots, taken counting as
// busy.
func (r *Runner) runs(taken []bool) int {
	n, prev := 0, false
	for i := range r.slots {
		b := r.occupied(i, taken)
		if b && !prev {
			n++
		}
		prev = b
	}
	return n
}

// admitted reports that the request stopped waiting (OnAdmit).
func (q *request) admitted() {
	if q.OnAdmit != nil {
		q.OnAdmit()
	}
}

func commonPrefix(a, b []engine.Token) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// ContextError is Generate's answer to a prompt that does not fit the
// context with NoTruncate set (one position is kept for the answer).
type ContextError struct {
	Prompt, Context int // tokens
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("prompt of %d tokens does not fit the context of %d tokens", e.Prompt, e.Context)
}
