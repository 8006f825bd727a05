package anura

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/ollamagen"
	"github.com/tadpole-llm/tadpole/server/openaisampling"
)

// chatRequest is the body of POST /api/v1/chat/completions. The sampling
// fields at the top override the same Ollama options in Options.
type chatRequest struct {
	Model            string              `json:"model"`
	Messages         []ollamaapi.Message `json:"messages"`
	MaxTokens        *int                `json:"max_tokens"`
	Temperature      *float64            `json:"temperature"`
	TopP             *float64            `json:"top_p"`
	Seed             *int64              `json:"seed"`
	Stop             json.RawMessage     `json:"stop"`
	FrequencyPenalty *float64            `json:"frequency_penalty"`
	PresencePenalty  *float64            `json:"presence_penalty"`
	Options          map[string]any      `json:"options"`
	KeepAlive        *ollamaapi.Duration `json:"keep_alive"`
}

// processing is the event sent while the request waits for the model
// (state 0) and once it is queued on it (state 1).
type processing struct {
	Status string `json:"status"`
	State  int    `json:"state"`
}

// chatEvent is one token's event, and with Final set the last one.
type chatEvent struct {
	Model      string            `json:"model"`
	CreatedAt  time.Time         `json:"created_at"`
	Message    ollamaapi.Message `json:"message"`
	Done       bool              `json:"done"`
	DoneReason string            `json:"done_reason,omitempty"`
	*final
}

// final are the statistics of the last event, all present even when 0.
type final struct {
	TotalDuration      time.Duration `json:"total_duration"`
	LoadDuration       time.Duration `json:"load_duration"`
	PromptEvalCount    int           `json:"prompt_eval_count"`
	PromptEvalDuration time.Duration `json:"prompt_eval_duration"`
	EvalCount          int           `json:"eval_count"`
	EvalDuration       time.Duration `json:"eval_duration"`
}

// request builds a chat's generation request. Its options resolve the
// way every OpenAI-style door resolves them: OpenAI's defaults, the
// model's parameters, the request's options map (Ollama's names), then its
// OpenAI fields through infer's one mapper (ranges, top_p 0 as "the most
// likely token only"), max_tokens last. The ranges that do not depend on
// the context window are checked here, so that a bad value is a 400
// before the stream starts rather than an error event in it.
func (h *Handler) request(req *chatRequest) (*infer.Request, error) {
	base := ollamaapi.DefaultOptions()
	openaisampling.Defaults(&base)
	opts, err := ollamagen.Options(h.Infer, req.Model, base, req.Options)
	if err != nil {
		return nil, err
	}
	smp := openaisampling.Fields{
		Temperature: req.Temperature, TopP: req.TopP, FrequencyPenalty: req.FrequencyPenalty,
		PresencePenalty: req.PresencePenalty, Stop: req.Stop, Seed: req.Seed,
	}
	if err := smp.Apply(&opts); err != nil {
		return nil, dialect.FromInfer(err)
	}
	if req.MaxTokens != nil {
		opts.NumPredict = *req.MaxTokens
	}
	if err := opts.CheckRequest(math.MaxInt32); err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	msgs, mi, err := ollamagen.ChatMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	return &infer.Request{Model: req.Model, Chat: true, Messages: msgs, MediaInput: mi, Options: opts, KeepAlive: ollamagen.KeepAlive(req.KeepAlive)}, nil
}

// A request waiting for its model is told so after firstUpdate, then
// every updateEvery.
const (
	firstUpdate = 250 * time.Millisecond
	updateEvery = 5 * time.Second
)

// chat streams a chat over Server-Sent Events: processing updates, one
// "delta" event per piece of text, a last "delta" event with done true
// and the statistics, then "data: [DONE]". Bad requests (400), unknown
// models (404) and refusals that come at once (429, 503) are answered
// before the stream starts; an error after that is an "error" event.
func (h *Handler) chat(c echo.Context) error {
	req, err := decodeChat(c)
	if err != nil {
		return err
	}
	ireq, err := h.request(req)
	if err != nil {
		return err
	}
	out := sse{c: c}
	start := time.Now()
	g, err := h.startWaiting(c.Request().Context(), ireq, &out)
	switch {
	case err != nil && !out.started:
		return dialect.FromInfer(err) // nothing sent yet: a plain error answer
	case err != nil:
		return out.fail(err)
	}
	// Ends the generation (the client went away, or it failed) before
	// the instance goes back.
	defer g.Close()
	if out.send("", processing{Status: "processing", State: 1}) != nil {
		return nil
	}
	var buf []infer.Event
	for {
		var rerr error
		buf, rerr = g.Stream().Next(buf[:0])
		for _, ev := range buf {
			var err error
			d := ev.Delta
			switch {
			case ev.Done && ev.Err != nil:
				return out.fail(ev.Err)
			case ev.Done:
				err = out.send("delta", lastEvent(req.Model, ev, ollamagen.Metrics(ev, start, g.Instance().LoadDuration)))
			case d.Content != "" || d.Thinking != "":
				err = out.send("delta", chatEvent{Model: req.Model, CreatedAt: time.Now().UTC(), Message: ollamaapi.Message{Role: "assistant", Content: d.Content, Thinking: d.Thinking}})
			}
			if err != nil {
				return nil // the client went away; the request's context ends the generation
			}
		}
		if rerr == io.EOF {
			return out.end()
		}
		if rerr != nil {
			return nil // the client went away
		}
	}
}

// decodeChat reads and checks a chat request's body.
func decodeChat(c echo.Context) (*chatRequest, error) {
	var req chatRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, errorf(http.StatusBadRequest, "model is required")
	}
	c.Set("model", req.Model)
	if len(req.Messages) == 0 {
		return nil, errorf(http.StatusBadRequest, "messages is required")
	}
	return &req, nil
}

// started is a generation started on its model instance, or why not.
type started struct {
	g   *infer.Generation
	err error
}

// startWaiting gets the model's instance and starts the generation. The
// first "processing" event (state 0) goes out once that takes longer than
// firstUpdate, then one every updateEvery: a request refused at once (its
// key's concurrent requests, a full queue, a bad value) is answered with
// its status code before the stream starts. The caller closes the
// generation.
func (h *Handler) startWaiting(ctx context.Context, req *infer.Request, out *sse) (*infer.Generation, error) {
	ch := make(chan started, 1)
	go func() {
		g, err := h.Infer.Generate(ctx, req)
		ch <- started{g, err}
	}()
	tick := time.NewTimer(firstUpdate)
	defer tick.Stop()
	for {
		select {
		case s := <-ch:
			if s.err == nil && !out.started {
				if s.err = out.send("", processing{Status: "processing", State: 0}); s.err != nil {
					s.g.Close()
					s.g = nil
				}
			}
			return s.g, s.err
		case <-tick.C:
			out.send("", processing{Status: "processing", State: 0})
			tick.Reset(updateEvery)
		}
	}
}

// sse frames Anura's events.
type sse struct {
	c       echo.Context
	w       *dialect.StreamWriter // made (and the 200 sent) with the first event
	started bool                  // an event was sent: errors go in the stream
}

// send writes one event (event "" is a plain data line) and flushes it.
func (o *sse) send(event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !o.started {
		o.w, o.started = dialect.NewStreamWriter(o.c, "text/event-stream"), true
	}
	o.w.Event(event, b)
	return o.w.Flush()
}

// end writes "data: [DONE]".
func (o *sse) end() error {
	o.w.Event("", []byte("[DONE]"))
	return o.w.Flush()
}

// fail ends the stream with an error event (the error's status and
// message) and "[DONE]".
func (o *sse) fail(err error) error {
	e := dialect.From(dialect.FromInfer(err))
	o.send("error", map[string]any{"error": e.Message, "status": e.Status})
	return o.end()
}

// lastEvent is the done event of a stream that ended with ev.
func lastEvent(model string, ev infer.Event, m ollamaapi.Metrics) chatEvent {
	d := ev.Delta
	return chatEvent{
		Model: model, CreatedAt: time.Now().UTC(), Message: ollamaapi.Message{Role: "assistant", Content: d.Content, Thinking: d.Thinking},
		Done: true, DoneReason: ev.DoneReason,
		final: &final{
			TotalDuration: m.TotalDuration, LoadDuration: m.LoadDuration, PromptEvalCount: m.PromptEvalCount,
			PromptEvalDuration: m.PromptEvalDuration, EvalCount: m.EvalCount, EvalDuration: m.EvalDuration,
		},
	}
}
