package ollamagen

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// Runner runs Ollama generate and chat requests through the generation
// path. It is the one implementation behind /api/generate and /api/chat
// (server/ollama) and behind the job workers of server/anura, whose jobs
// carry Ollama requests and run with a negative Priority so that
// interactive requests overtake them for slots.
type Runner struct {
	Infer Inference
	// Priority orders requests waiting for a slot: 0 for interactive
	// requests, negative for background work.
	Priority int
}

// Inference is what the translation calls of the generation path: an
// *infer.Service, or a fake of it in tests (server/infer/infertest).
type Inference interface {
	Generate(ctx context.Context, reqs ...*infer.Request) (*infer.Generation, error)
	Load(ctx context.Context, req *infer.Request) (*infer.Generation, error)
	ModelOptionsFrom(model string, base ollamaapi.Options) (ollamaapi.Options, error)
}

var _ Inference = (*infer.Service)(nil)

// Call is a validated request with its options resolved, ready to Start.
type Call struct {
	r        Runner
	model    string // as the request named it
	ireq     *infer.Request
	loadOnly bool // no prompt (no messages): load the model and answer
	start    time.Time
}

// Stream is a started call: read it with Next (a load-only call has
// nothing to read). Close must be called once.
type Stream struct {
	g     *infer.Generation
	gen   *infer.Stream // nil for a load-only call
	call  *Call
	in    *infer.Instance
	ready time.Duration // from the call's start until its model was ready
}

// options checks a request's model name and applies its options over
// the model's (Ollama's defaults with the model's PARAMETER values).
func options(svc Inference, model string, m map[string]any) (ollamaapi.Options, error) {
	return Options(svc, model, ollamaapi.DefaultOptions(), m)
}

// Options resolves a request's options: base, then the model's PARAMETER
// values, then m (Ollama's option names); errors are HTTP errors (a
// missing model is a 404).
func Options(svc Inference, model string, base ollamaapi.Options, m map[string]any) (ollamaapi.Options, error) {
	if model == "" {
		return ollamaapi.Options{}, errorf(http.StatusBadRequest, "model is required")
	}
	opts, err := svc.ModelOptionsFrom(model, base)
	if err != nil {
		return opts, inferError(err)
	}
	unknown, err := opts.Apply(m)
	if err != nil {
		return opts, errorf(http.StatusBadRequest, "%v", err)
	}
	if len(unknown) > 0 {
		slog.Warn("ignoring unknown options", "options", unknown)
	}
	return opts, nil
}

// PrepareGenerate validates an /api/generate request.
func (r Runner) PrepareGenerate(req *ollamaapi.GenerateRequest) (*Call, error) {
	start := time.Now()
	ireq, err := r.request(req.Model, req.Options, req.Format, req.Think, req.KeepAlive)
	if err != nil {
		return nil, err
	}
	if ireq.Media, err = Images(req.Images); err != nil {
		return nil, err
	}
	ireq.Prompt, ireq.Suffix, ireq.System, ireq.Template, ireq.Raw = req.Prompt, req.Suffix, req.System, req.Template, req.Raw
	ireq.Context, ireq.Truncate, ireq.Shift = req.Context, req.Truncate, req.Shift
	return &Call{r: r, model: req.Model, ireq: ireq, loadOnly: req.Prompt == "" && len(req.Context) == 0, start: start}, nil
}

// PrepareChat validates an /api/chat request.
func (r Runner) PrepareChat(req *ollamaapi.ChatRequest) (*Call, error) {
	start := time.Now()
	ireq, err := r.request(req.Model, req.Options, req.Format, req.Think, req.KeepAlive)
	if err != nil {
		return nil, err
	}
	ireq.Chat, ireq.Truncate, ireq.Shift = true, req.Truncate, req.Shift
	if ireq.Tools, err = tools(req.Tools); err != nil {
		return nil, err
	}
	if ireq.Messages, ireq.MediaInput, err = ChatMessages(req.Messages); err != nil {
		return nil, err
	}
	return &Call{r: r, model: req.Model, ireq: ireq, loadOnly: len(req.Messages) == 0, start: start}, nil
}

// request is what generate and chat requests share: the model and its
// options, the format's grammar, think and keep_alive.
func (r Runner) request(model string, m map[string]any, format, think json.RawMessage, ka *ollamaapi.Duration) (*infer.Request, error) {
	m, lora, err := infer.LoRAFromOptions(m) // options.lora: Tadpole's, per-request LoRA adapters
	if err != nil {
		return nil, inferError(err)
	}
	opts, err := options(r.Infer, model, m)
	if err != nil {
		return nil, err
	}
	grammar, err := formatGrammar(format)
	if err != nil {
		return nil, err
	}
	on, vars, err := thinkOption(think)
	if err != nil {
		return nil, err
	}
	return &infer.Request{Model: model, Options: opts, Grammar: grammar, Think: on, TemplateVars: vars,
		KeepAlive: KeepAlive(ka), Priority: r.Priority, LoRA: lora}, nil
}

// Start gets the model loaded (waiting for it as long as ctx allows) and
// queues the generation. Cancelling ctx ends it.
func (c *Call) Start(ctx context.Context) (*Stream, error) {
	var g *infer.Generation
	var err error
	if c.loadOnly {
		g, err = c.r.Infer.Load(ctx, c.ireq)
	} else {
		g, err = c.r.Infer.Generate(ctx, c.ireq)
	}
	if err != nil {
		return nil, inferError(err)
	}
	// load_duration is Ollama's: the time from the request's start until
	// its model was ready, loading or not (so a loaded model's is small,
	// never absent: clients such as the Vercel AI SDK require it).
	return &Stream{g: g, gen: g.Stream(), call: c, in: g.Instance(), ready: g.Acquired().Sub(c.start)}, nil
}

// LoadOnly reports a call without a prompt: it loaded the model and
// has no events.
func (s *Stream) LoadOnly() bool { return s.gen == nil }

// Next appends the generation's next events to buf: every event queued
// since the last call, waiting for one if there is none. It returns
// io.EOF after the final event, or the error of the call's context.
func (s *Stream) Next(buf []infer.Event) ([]infer.Event, error) {
	if s.gen == nil {
		return buf, io.EOF
	}
	return s.gen.Next(buf)
}

// Close ends the generation if it still runs and hands the model back.
func (s *Stream) Close() { s.g.Close() }

// Metrics are the statistics of the stream's final event.
func (s *Stream) Metrics(ev infer.Event) ollamaapi.Metrics {
	return Metrics(ev, s.call.start, s.ready)
}

// GenerateFinal is the last /api/generate answer of a stream that ended
// with ev, with d as its text.
func (s *Stream) GenerateFinal(ev infer.Event, d chatparse.Delta) ollamaapi.GenerateResponse {
	if s.gen == nil {
		return ollamaapi.GenerateResponse{Model: s.call.model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: loadReason(s.call.ireq.KeepAlive)}
	}
	// An image's positions hold placeholders (negative values, never token
	// ids): they are left out, so a context sent back is text only and the
	// engine accepts it; the image itself is not carried over.
	ctxTokens := make([]int, 0, len(ev.Tokens))
	for _, t := range ev.Tokens {
		if t >= 0 {
			ctxTokens = append(ctxTokens, int(t))
		}
	}
	return ollamaapi.GenerateResponse{
		Model: s.call.model, CreatedAt: time.Now().UTC(), Response: d.Content, Thinking: d.Thinking, Done: true, DoneReason: ev.DoneReason,
		Context: ctxTokens, Metrics: s.Metrics(ev),
	}
}

// ChatFinal is the last /api/chat answer of a stream that ended with ev,
// with d as the assistant's message.
func (s *Stream) ChatFinal(ev infer.Event, d chatparse.Delta) ollamaapi.ChatResponse {
	if s.gen == nil {
		return ollamaapi.ChatResponse{
			Model: s.call.model, CreatedAt: time.Now().UTC(), Message: ollamaapi.Message{Role: "assistant"},
			Done: true, DoneReason: loadReason(s.call.ireq.KeepAlive),
		}
	}
	return ollamaapi.ChatResponse{
		Model: s.call.model, CreatedAt: time.Now().UTC(),
		Message: ollamaapi.Message{Role: "assistant", Content: d.Content, Thinking: d.Thinking, ToolCalls: ToolCalls(d.ToolCalls)},
		Done:    true, DoneReason: ev.DoneReason, Metrics: s.Metrics(ev),
	}
}

// collect reads a stream to its end: the whole answer and the final
// event.
func (s *Stream) collect() (chatparse.Delta, infer.Event, error) {
	var all chatparse.Delta
	var buf []infer.Event
	for {
		var err error
		buf, err = s.Next(buf[:0])
		for _, ev := range buf {
			all.Append(ev.Delta)
			if ev.Done {
				if ev.Err != nil {
					return chatparse.Delta{}, ev, errorf(http.StatusInternalServerError, "%v", ev.Err)
				}
				return all, ev, nil
			}
		}
		if err != nil {
			return chatparse.Delta{}, infer.Event{}, errorf(http.StatusInternalServerError, "generation ended without a result: %v", err)
		}
	}
}

// Generate runs an /api/generate request to its end: the non-streamed
// answer.
func (r Runner) Generate(ctx context.Context, req *ollamaapi.GenerateRequest) (*ollamaapi.GenerateResponse, error) {
	call, err := r.PrepareGenerate(req)
	if err != nil {
		return nil, err
	}
	resp, err := RunToEnd(ctx, call, (*Stream).GenerateFinal)
	return &resp, err
}

// Chat runs an /api/chat request to its end: the non-streamed answer.
func (r Runner) Chat(ctx context.Context, req *ollamaapi.ChatRequest) (*ollamaapi.ChatResponse, error) {
	call, err := r.PrepareChat(req)
	if err != nil {
		return nil, err
	}
	resp, err := RunToEnd(ctx, call, (*Stream).ChatFinal)
	return &resp, err
}

// RunToEnd starts a call, collects its text and builds the final answer
// with final ((*Stream).GenerateFinal or ChatFinal).
func RunToEnd[T any](ctx context.Context, call *Call, final func(*Stream, infer.Event, chatparse.Delta) T) (T, error) {
	var zero T
	s, err := call.Start(ctx)
	if err != nil {
		return zero, err
	}
	defer s.Close()
	if s.LoadOnly() {
		return final(s, infer.Event{}, chatparse.Delta{}), nil
	}
	d, ev, err := s.collect()
	if err != nil {
		return zero, err
	}
	return final(s, ev, d), nil
}
