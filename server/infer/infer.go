// Package infer is the one generation path behind every API dialect: it
// resolves a model name in the store, gets a loaded instance from the
// scheduler, renders the prompt (raw, an Ollama Go template, the model's
// Jinja chat template through models/chattemplate, llama.cpp's built-in
// templates or ChatML), tokenizes it and queues it on the instance's
// runner, and tells the dialect how to split a chat's output
// (server/chatparse: content, thinking, tool calls) and, for forced tool
// calls, constrains it with a grammar. Dialects decode their wire format into a Request and encode the
// Result's events back; they never touch the engine or the runner's
// request type themselves.
package infer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/chattemplate"
	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/flight"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
	"github.com/tadpole-llm/tadpole/server/telemetry"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// Kind classifies errors so each dialect can answer with its own status
// code and error shape.
type Kind int

const (
	BadRequest Kind = iota
	NotFound
	LoadFailed
	Internal
	// Unavailable: the server is overloaded (the wait queue is full); the
	// client should retry later (503 with Retry-After).
	Unavailable
	// RateLimited: the request's API key has its most requests in flight
	// (429 with Retry-After).
	RateLimited
)

// Error is an error with a Kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf makes an Error of a kind.
func Errorf(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Err: fmt.Errorf(format, args...)}
}

// KindOf is the Kind of err (Internal when it has none).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Message is one chat turn, with the assistant's thinking and tool calls
// and a tool result's call id and function name.
type Message = chattemplate.Message

// ToolCall is an assistant's call of a function (in Message.ToolCalls).
type ToolCall = chattemplate.ToolCall

// Request is a dialect-neutral generation request. A chat has Messages
// (Chat set); a completion has Prompt.
type Request struct {
	Model    string
	Chat     bool
	Messages []Message
	Prompt   string
	// Suffix asks for fill-in-the-middle: the answer goes between Prompt
	// and Suffix (models with FIM tokens only).
	Suffix   string
	System   string
	Template string // Ollama Go-template syntax; overrides the model's template
	Raw      bool
	Context  []int
	Options  ollamaapi.Options
	// KeepAlive overrides the server's default when set.
	KeepAlive *time.Duration
	// Grammar constrains the output (GBNF), e.g. from a JSON format.
	Grammar string
	// LogitBias adds to the logits of tokens before sampling (OpenAI's
	// logit_bias; -100 practically bans a token).
	LogitBias map[engine.Token]float32
	Truncate  *bool
	Shift     *bool
	// Logprobs asks for each generated token's log-probability and the
	// TopLogprobs most likely alternatives (runner.Event.Logprobs).
	Logprobs    bool
	TopLogprobs int
	// Priority orders requests waiting for a slot (higher first); jobs
	// run below interactive requests (0).
	Priority int
	// Notify, if set, is signalled whenever the generation's stream gets
	// events: one reader waits on several generations with one channel
	// (runner.Request.Notify).
	Notify chan struct{}

	// Tools are the functions a chat may call: OpenAI-shaped tool objects
	// ({"type":"function","function":{"name","description","parameters"}}),
	// which Ollama's tools also are.
	Tools []json.RawMessage
	// ToolChoice is "auto" (or empty), "none" (tools neither shown nor
	// parsed) or "required" (the output is constrained to a call; ToolName
	// forces one function).
	ToolChoice string
	ToolName   string
	// Think switches a thinking model's thinking on or off (the template's
	// enable_thinking); nil leaves the model's default.
	Think *bool
	// TemplateVars are further variables for the chat template (e.g.
	// reasoning_effort).
	TemplateVars map[string]any
	// LoRA overrides the adapters the request runs with (lora.go): nil
	// keeps the model's own and the instance's scales.
	LoRA []LoRA

	// MediaInput: the request's images and audio clips and where they go
	// (media.go); Start checks them (CheckMedia).
	MediaInput

	modelTemplate bool // Template came from the model's manifest
}

// Service runs requests.
type Service struct {
	Store     *models.Store
	Sched     *sched.Scheduler
	Telemetry *telemetry.Telemetry // may be nil
	// MediaLimits bound the images and audio of a request (media.go).
	MediaLimits MediaLimits
	// Drafts names each model's draft model (canonical names, "stories:latest"):
	// loaded beside it for speculative decoding (--draft).
	Drafts map[string]string

	waiting atomic.Int64 // requests queued for a slot, over every model
}

// Limits are the service's MediaLimits: the dialects read them (the
// image URL fetcher) through the interface they take of the service.
func (s *Service) Limits() MediaLimits { return s.MediaLimits }

// Instance is an acquired model instance; Release must be called once.
type Instance struct {
	// si is the scheduler's instance: its model, runner and projector
	// stay inside infer (dialects reach the engine only through infer's
	// methods; TestDialectsAreThin).
	si           *sched.Instance
	Name         string // canonical model name, e.g. "stories:latest"
	Entry        models.Entry
	LoadDuration time.Duration
	// Window is the request's context in tokens: its num_ctx, or the
	// instance's default.
	Window int
	// projectorErr is why the model's projector failed to load (it then
	// serves text only).
	projectorErr error
	release      func()
	telemetry    *telemetry.Telemetry
	// admit takes a place in the queue bound (Service.admit): embedding
	// and rerank requests hold one while queued and computed.
	admit func() (func(), error)
	// text detokenizes in place of the engine's model (Scripted).
	text func([]engine.Token) string
}

// queued runs f holding a place in the queue bound, or reports that
// there is none (Unavailable).
func (in *Instance) queued(f func() error) error {
	if in.admit != nil {
		leave, err := in.admit()
		if err != nil {
			return err
		}
		defer leave()
	}
	return f()
}

// Release hands the instance back to the scheduler.
func (in *Instance) Release() {
	if in.release != nil {
		in.release()
		in.release = nil
	}
}

// Acquire resolves a model and gets a loaded instance for its options.
// Load-time options are the operator's (Ollama's defaults, the server's
// flags and the model's PARAMETERs): a request's num_batch, num_gpu,
// main_gpu, use_mmap, use_mlock and num_thread are ignored with a logged
// warning, and its num_ctx only picks a window of at most the server's
// --max-ctx.
func (s *Service) Acquire(ctx context.Context, model string, opts ollamaapi.Options, keepAlive *time.Duration) (in *Instance, err error) {
	entry, err := s.resolve(model)
	if err != nil {
		return nil, err
	}
	leaveKey, err := enterKey(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			leaveKey()
		}
	}()
	operator, err := entryOptions(entry)
	if err != nil {
		return nil, err
	}
	// The PARAMETER bounds were checked by entryOptions; the thread limit
	// depends on this machine (a model may come from another one).
	if operator.NumThread > engine.ThreadLimit() {
		return nil, Errorf(LoadFailed, "model %q has an invalid parameter: num_thread %d is out of range (0..%d: four per CPU)", model, operator.NumThread, engine.ThreadLimit())
	}
	opts, ignored := opts.WithLoadOptions(operator)
	if len(ignored) > 0 {
		slog.Warn("ignoring load-time options from the request: they are the operator's (server flags, Modelfile PARAMETER)",
			"model", model, "options", ignored)
	}
	name := entry.Name.String()
	flight.Mark(ctx, flight.Queued, name) // waiting for the model (loading) or its queue
	key := sched.KeyFor(entry.Path, opts)
	key.Projector = entry.Projector()
	if dn, ok := s.Drafts[name]; ok {
		de, derr := s.resolve(dn)
		if derr != nil {
			return nil, Errorf(LoadFailed, "model %q cannot be loaded: its draft model %q: %v", model, dn, derr)
		}
		key.Draft = de.Path
	} else {
		key.Draft = entry.Draft // the Modelfile's DRAFT; --draft overrides it
	}
	si, loadDur, err := s.Sched.Acquire(ctx, name, key)
	if err != nil {
		var re *engine.RangeError
		switch {
		case errors.As(err, &re):
			return nil, &Error{Kind: BadRequest, Err: &ollamaapi.OptionError{Name: re.Name, Value: re.Value, Allowed: fmt.Sprintf("%d..%d", re.Min, re.Max)}}
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return nil, Errorf(BadRequest, "request cancelled while waiting for the model")
		case errors.Is(err, engine.ErrModelNotFound):
			return nil, Errorf(NotFound, "model %q not found, try pulling it first", model)
		}
		var ae *engine.ArchitectureError
		if errors.As(err, &ae) {
			return nil, Errorf(BadRequest, "model %q cannot be loaded: %v", model, ae)
		}
		if _, serr := os.Stat(entry.Path); errors.Is(serr, fs.ErrNotExist) {
			// Deleted (or replaced) between resolving the name and
			// loading its file: as if the request had come after.
			return nil, Errorf(NotFound, "model %q not found, try pulling it first", model)
		}
		return nil, Errorf(LoadFailed, "model %q cannot be loaded: %v", model, err)
	}
	if loadDur > 0 {
		s.Telemetry.Load(ctx, name, loadDur)
		_, span := s.Telemetry.Start(ctx, "load", trace.WithTimestamp(time.Now().Add(-loadDur)))
		span.SetAttributes(attribute.String("model", name), attribute.String("processor", si.Placement.Processor()))
		span.End()
	}
	ka := s.Sched.Config().KeepAlive
	if keepAlive != nil {
		ka = *keepAlive
	}
	window := opts.NumCtx
	if window == 0 {
		window = si.DefaultCtx
	}
	// A num_ctx past the model's largest window was capped by the
	// scheduler: the window is the instance's context.
	window = min(window, si.NumCtx)
	return &Instance{si: si, Name: name, Entry: entry, LoadDuration: loadDur, Window: window, projectorErr: s.Sched.ProjectorError(si),
		release: func() { s.Sched.Release(si, ka); leaveKey() }, telemetry: s.Telemetry, admit: s.admit}, nil
}

func (s *Service) resolve(model string) (models.Entry, error) {
	if model == "" {
		return models.Entry{}, Errorf(BadRequest, "model is required")
	}
	entry, err := s.Store.Resolve(model)
	if err != nil {
		if errors.Is(err, models.ErrNotFound) {
			return models.Entry{}, Errorf(NotFound, "model %q not found, try pulling it first", model)
		}
		return models.Entry{}, Errorf(BadRequest, "%v", err)
	}
	return entry, nil
}

// ModelOptions are the options a request to model starts from: Ollama's
// defaults with the model's own parameters (its Modelfile's PARAMETER
// lines) applied. The request's options go on top.
func (s *Service) ModelOptions(model string) (ollamaapi.Options, error) {
	return s.ModelOptionsFrom(model, ollamaapi.DefaultOptions())
}

// ModelOptionsFrom is ModelOptions starting from base instead of Ollama's
// defaults (e.g. with openaisampling.Defaults applied): the model's parameters
// still come on top.
func (s *Service) ModelOptionsFrom(model string, base ollamaapi.Options) (ollamaapi.Options, error) {
	entry, err := s.resolve(model)
	if err != nil {
		return base, err
	}
	return entryOptionsFrom(entry, base)
}

// entryOptions are Ollama's defaults with a resolved model's parameters
// applied, each checked against the bounds PARAMETER has at create
// (models.CheckParams: a model stored before a bound existed is refused
// here, not handed to the engine).
func entryOptions(entry models.Entry) (ollamaapi.Options, error) {
	return entryOptionsFrom(entry, ollamaapi.DefaultOptions())
}

func entryOptionsFrom(entry models.Entry, opts ollamaapi.Options) (ollamaapi.Options, error) {
	if err := models.CheckParams(entry.Params); err != nil {
		return opts, Errorf(LoadFailed, "model %q has an invalid parameter: %v", entry.Name.String(), err)
	}
	if _, err := opts.Apply(entry.Params); err != nil {
		return opts, Errorf(Internal, "model %q has invalid parameters: %v", entry.Name.String(), err)
	}
	return opts, nil
}

// checkMedia decodes and checks req's media for the instance's projector
// (none, vision, audio) and the --max-images/--max-image-pixels limits,
// under the decode budget (media.go); release drops them.
func (s *Service) checkMedia(ctx context.Context, in *Instance, req *Request) (release func(), err error) {
	if len(req.Media) == 0 {
		return func() {}, nil
	}
	enc, lim, err := s.mediaEncoders(in, req)
	if err != nil {
		return nil, err
	}
	return req.checkMedia(ctx, enc, lim)
}

// mediaEncoders are what the instance's loaded projector encodes (no file
// is read again) and the media limits with its audio rate.
func (s *Service) mediaEncoders(in *Instance, req *Request) (encoders, MediaLimits, error) {
	lim := s.MediaLimits
	if in.si.Projector != nil && in.si.Projector.AudioRate() > 0 {
		lim.AudioRate = in.si.Projector.AudioRate()
	}
	if len(req.Media) > 0 && in.projectorErr != nil {
		return encoders{}, lim, Errorf(LoadFailed, "model %q: its projector cannot be loaded, so it serves text only: %v", req.Model, in.projectorErr)
	}
	enc := encoders{model: in.Name}
	if p := in.si.Projector; p != nil {
		enc.projector, enc.vision, enc.audio = true, p.Vision(), p.Audio()
	}
	return enc, lim, nil
}

// Start renders and tokenizes the request's prompt and queues it on the
// instance's runner. The stream's events carry the output already split
// into content, thinking and tool calls, and end with a final (Done)
// event; cancelling ctx ends the generation before the next decode step.
// Its metrics, spans and per-key usage are recorded when it ends, read or
// not.
func (s *Service) Start(ctx context.Context, in *Instance, req *Request) (*Stream, error) {
	flight.Mark(ctx, flight.Rendering, in.Name) // images decoded, prompt rendered and tokenized, grammar built
	releaseMedia, err := s.checkMedia(ctx, in, req)
	if err != nil {
		return nil, err
	}
	defer releaseMedia() // encoded by mediaPrompt: the pixels are not needed after
	req = withModelDefaults(req, in.Entry)
	var tokens []engine.Token
	var embeds []runner.Embeds
	var out chatparse.Options
	if len(req.Media) > 0 {
		tokens, embeds, out, err = req.shared.prompt(ctx, in, req) // mediaprompt.go, once for a request's choices
	} else {
		tokens, out, err = render(in.si.Model, req)
	}
	if err != nil {
		return nil, err
	}
	grammar, lazy, err := toolGrammar(in.si.Model, req, out)
	if err != nil {
		return nil, err
	}
	o := req.Options
	if err := o.CheckRequest(in.Window); err != nil {
		return nil, &Error{Kind: BadRequest, Err: err}
	}
	if o.RepeatLastN == -1 {
		o.RepeatLastN = in.Window // Ollama: -1 looks back over the whole context
	}
	adapters, err := s.adapterSet(ctx, in, req) // lora.go
	if err != nil {
		return nil, err
	}
	leave, err := s.admit() // admission.go
	if err != nil {
		return nil, err
	}
	// Metrics, spans and usage are recorded once: by the runner when the
	// generation ends (read or not), or by the stream's reader before it
	// hands over the final event, whichever comes first, so a client that
	// has the last event sees its tokens counted.
	flight.Mark(ctx, flight.Prefill, "")
	done := once(s.observer(ctx, in.Name, len(tokens)))
	gen, err := in.si.Runner.Generate(ctx, runner.Request{
		Prompt:      tokens,
		Embeds:      embeds,
		NumCtx:      in.Window,
		Sampling:    samplerParams(o, grammar, req.LogitBias),
		Lazy:        lazy,
		NumPredict:  o.NumPredict,
		DraftMax:    draftMax(o.DraftNumPredict),
		NumKeep:     o.NumKeep,
		Stop:        o.Stop,
		Print:       printTokens(in.si.Model, out),
		NoTruncate:  req.Truncate != nil && !*req.Truncate,
		NoShift:     req.Shift != nil && !*req.Shift,
		Logprobs:    req.Logprobs || req.TopLogprobs > 0,
		TopLogprobs: req.TopLogprobs,
		Priority:    req.Priority,
		Notify:      req.Notify,
		OnDone:      done,
		OnAdmit:     leave,
		Adapters:    adapters,
	})
	if err != nil {
		leave()
		return nil, &Error{Kind: BadRequest, Err: err}
	}
	st := newStream(ctx, gen, out, in.Name)
	st.done, st.prompt = done, len(tokens)
	return st, nil
}

// once is f that runs only the first time it is called; a concurrent
// second call waits for the first to finish.
func once(f func(runner.Event)) func(runner.Event) {
	var o sync.Once
	return func(ev runner.Event) { o.Do(func() { f(ev) }) }
}

// observer starts a generation's span and returns what records its
// metrics and spans (generate, with queue, prefill and decode children)
// when it ends.
func (s *Service) observer(ctx context.Context, model string, promptTokens int) func(runner.Event) {
	start := time.Now()
	ctx, span := s.Telemetry.Start(ctx, "generate", trace.WithAttributes(attribute.String("model", model), attribute.Int("prompt_tokens", promptTokens)))
	return func(ev runner.Event) {
		st := ev.Stats
		s.Telemetry.Generation(ctx, model, ev)
		usage.AddTokens(ctx, promptTokens, st.EvalCount)
		child := func(name string, from time.Time, d time.Duration) {
			_, c := s.Telemetry.Start(ctx, name, trace.WithTimestamp(from))
			c.End(trace.WithTimestamp(from.Add(d)))
		}
		child("queue", start, st.QueueWait)
		child("prefill", start.Add(st.QueueWait), st.PromptEvalDuration)
		child("decode", start.Add(st.QueueWait+st.PromptEvalDuration), st.EvalDuration)
		span.SetAttributes(attribute.Int("prompt_eval_count", st.PromptEvalCount), attribute.Int("eval_count", st.EvalCount),
			attribute.String("done_reason", ev.DoneReason))
		span.End()
	}
}

// withModelDefaults fills what the request leaves empty from the model's
// manifest: its system prompt, its template and, before a chat, its
// MESSAGE turns.
func withModelDefaults(req *Request, e models.Entry) *Request {
	r := *req
	if r.System == "" {
		r.System = e.System
	}
	if r.Template == "" && !r.Raw && e.Template != "" {
		r.Template, r.modelTemplate = e.Template, true
	}
	if r.Chat && len(e.Messages) > 0 {
		msgs := make([]Message, 0, len(e.Messages)+len(r.Messages))
		for _, m := range e.Messages {
			msgs = append(msgs, Message{Role: m.Role, Content: m.Content})
		}
		r.Messages = append(msgs, r.Messages...)
		if len(r.MessageMedia) > 0 {
			// The MESSAGE turns go first: the media stay with their messages.
			r.MessageMedia = append(make([][]MediaRef, len(e.Messages)), r.MessageMedia...)
		}
	}
	return &r
}

// Prompt renders and tokenizes a request's prompt.
//
// Completions: raw prompts as given; else the request's Go template; else
// the model's chat template with the prompt as one user turn after the
// system prompt; else the plain prompt (Ollama's default "{{ .Prompt }}"
// for models without a template). A context from an earlier answer goes
// first.
//
// Chats: the request's Go template (with .Messages), else the model's chat
// template, else ChatML; the result ends with the opening of an assistant
// turn.
func Prompt(m *engine.Model, req *Request) ([]engine.Token, error) {
	toks, _, err := render(m, req)
	return toks, err
}

// render is Prompt, with how to parse the output of a chat.
func render(m *engine.Model, req *Request) ([]engine.Token, chatparse.Options, error) {
	if !req.Chat && req.Suffix != "" {
		if err := checkGenerates(m, req); err != nil {
			return nil, chatparse.Options{}, err
		}
		toks, err := fimPrompt(m, req)
		return toks, chatparse.Options{}, err
	}
	text, literal, out, err := renderClient(m, req)
	if err != nil {
		return nil, out, err
	}
	tokens := contextTokens(req)
	more, err := m.TokenizeLiteral(text, len(tokens) == 0, literal)
	if err != nil {
		return nil, out, Errorf(BadRequest, "%v", err)
	}
	tokens = append(tokens, more...)
	if len(tokens) == 0 {
		return nil, out, Errorf(BadRequest, "the prompt is empty after tokenization")
	}
	return tokens, out, nil
}

// checkGenerates refuses a model that cannot generate.
func checkGenerates(m *engine.Model, req *Request) error {
	if m.IsReranker() {
		// A reranker's head scores pairs; it has no output layer, so a
		// generation would sample from logits llama.cpp never writes.
		return Errorf(BadRequest, "model %q is a reranker: it scores query/document pairs (/v1/rerank, /api/rerank) and does not generate", req.Model)
	}
	return nil
}

// renderText is the prompt's text (before tokenization) and how to parse
// a chat's output.
func renderText(m *engine.Model, req *Request) (string, chatparse.Options, error) {
	var out chatparse.Options
	if err := checkGenerates(m, req); err != nil {
		return "", out, err
	}
	if req.Think != nil && *req.Think && !req.Raw &&
		!slices.Contains(TemplateCapabilities(req.Template, m.Meta.ChatTemplate, m.Meta.ChatTemplates["tool_use"]), "thinking") {
		return "", out, Errorf(BadRequest, "model %q does not support thinking", req.Model)
	}
	if err := checkEffort(req, req.Template, m.Meta.ChatTemplate, m.Meta.ChatTemplates["tool_use"]); err != nil {
		return "", out, err
	}
	if req.Chat {
		return chatPrompt(m, req)
	}
	return completionPrompt(m, req)
}

// contextTokens are the tokens of an earlier answer's context, which go
// first.
func contextTokens(req *Request) []engine.Token {
	var tokens []engine.Token
	for _, t := range req.Context {
		tokens = append(tokens, engine.Token(t))
	}
	return tokens
}

// fimPrompt is a fill-in-the-middle prompt in prefix-suffix-middle order:
// [BOS] <FIM_PRE> prompt <FIM_SUF> suffix <FIM_MID>, as llama-server
// builds it. Templates do not apply.
func fimPrompt(m *engine.Model, req *Request) ([]engine.Token, error) {
	pre, suf, mid := m.FIM()
	if pre < 0 || suf < 0 || mid < 0 {
		return nil, Errorf(BadRequest, "model %q does not support insert: it has no fill-in-the-middle tokens (suffix needs them)", req.Model)
	}
	p, err := m.Tokenize(req.Prompt, false, false)
	if err != nil {
		return nil, Errorf(BadRequest, "%v", err)
	}
	sx, err := m.Tokenize(req.Suffix, false, false)
	if err != nil {
		return nil, Errorf(BadRequest, "%v", err)
	}
	var toks []engine.Token
	if m.AddBOS() && m.BOS() >= 0 {
		toks = append(toks, m.BOS())
	}
	toks = append(append(append(toks, pre), p...), suf)
	return append(append(toks, sx...), mid), nil
}

func completionPrompt(m *engine.Model, req *Request) (string, chatparse.Options, error) {
	var none chatparse.Options
	switch {
	case req.Raw:
		return req.Prompt, none, nil
	case req.Template != "":
		text, err := execTemplate(req.Template, map[string]any{"System": req.System, "Prompt": req.Prompt, "Response": ""})
		if err == nil || !req.modelTemplate {
			return text, outputOptions(&Request{}, req.Template, text), err
		}
		slog.Warn("the model's TEMPLATE failed; using its chat template", "model", m.Path(), "error", err)
		fallthrough
	case m.Meta.ChatTemplate != "":
		var msgs []Message
		if req.System != "" {
			msgs = append(msgs, Message{Role: "system", Content: req.System})
		}
		r := *req
		r.Tools = nil // generate has no tools
		return modelTemplate(m, &r, append(msgs, Message{Role: "user", Content: req.Prompt}))
	case req.System != "":
		return req.System + "\n\n" + req.Prompt, none, nil
	}
	return req.Prompt, none, nil
}

// samplerParams maps Ollama's options, a grammar and a logit bias to the
// engine's sampler.
func samplerParams(o ollamaapi.Options, grammar string, bias map[engine.Token]float32) engine.SamplerParams {
	return engine.SamplerParams{
		Seed: int64(o.Seed), Temperature: o.Temperature, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP,
		TypicalP: o.TypicalP, RepeatLastN: o.RepeatLastN, RepeatPenalty: o.RepeatPenalty,
		PresencePenalty: o.PresencePenalty, FrequencyPenalty: o.FrequencyPenalty,
		Mirostat: o.Mirostat, MirostatTau: o.MirostatTau, MirostatEta: o.MirostatEta,
		Grammar: grammar, LogitBias: bias,
	}
}

// draftMax maps the draft_num_predict option (-1 the server's, 0 none, n
// at most n) to runner.Request.DraftMax (0 the runner's, negative none).
func draftMax(n int) int {
	switch {
	case n < 0:
		return 0
	case n == 0:
		return -1
	}
	return n
}
