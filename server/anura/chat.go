package anura

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollama"
)

// chatRequest is the body of POST /api/v1/chat/completions. The sampling
// fields at the top override the same Ollama options in Options.
type chatRequest struct {
	Model            string          `json:"model"`
	Messages         []api.Message   `json:"messages"`
	MaxTokens        *int            `json:"max_tokens"`
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	Seed             *int64          `json:"seed"`
	Stop             json.RawMessage `json:"stop"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	Options          map[string]any  `json:"options"`
	KeepAlive        *api.Duration   `json:"keep_alive"`
}

// processing is the event sent while the request waits for the model
// (state 0) and once it is queued on it (state 1).
type processing struct {
	Status string `json:"status"`
	State  int    `json:"state"`
}

// chatEvent is one token's event, and with Final set the last one.
type chatEvent struct {
	Model      string      `json:"model"`
	CreatedAt  time.Time   `json:"created_at"`
	Message    api.Message `json:"message"`
	Done       bool        `json:"done"`
	DoneReason string      `json:"done_reason,omitempty"`
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

// prepareChat resolves a chat's options the way every OpenAI-style door
// does: OpenAI's defaults, the model's parameters, the request's options
// map (Ollama's names), then its OpenAI fields through infer's one mapper
// (ranges, top_p 0 as "the most likely token only"), max_tokens last.
func (h *Handler) prepareChat(req *chatRequest) (*ollama.Call, error) {
	base := api.DefaultOptions()
	infer.OpenAIDefaults(&base)
	opts, err := ollama.Options(h.Infer, req.Model, base, req.Options)
	if err != nil {
		code, msg := ollama.StatusOf(err)
		return nil, errorf(code, "%s", msg)
	}
	smp := infer.OpenAISampling{
		Temperature: req.Temperature, TopP: req.TopP, FrequencyPenalty: req.FrequencyPenalty,
		PresencePenalty: req.PresencePenalty, Stop: req.Stop, Seed: req.Seed,
	}
	if err := smp.Apply(&opts); err != nil {
		return nil, infer.HTTPError(err)
	}
	if req.MaxTokens != nil {
		opts.NumPredict = *req.MaxTokens
	}
	call, err := ollama.Runner{Infer: h.Infer}.PrepareChatWith(&api.ChatRequest{
		Model: req.Model, Messages: req.Messages, KeepAlive: req.KeepAlive,
	}, opts)
	if err != nil {
		code, msg := ollama.StatusOf(err)
		return nil, errorf(code, "%s", msg)
	}
	return call, nil
}

// updateEvery is how often a request waiting for its model is told so.
const updateEvery = 5 * time.Second

// chat streams a chat over Server-Sent Events: processing updates, one
// "delta" event per piece of text, a last "delta" event with done true
// and the statistics, then "data: [DONE]". Bad requests (400) and unknown
// models (404) are answered before the stream starts; an error after
// that is an "error" event.
func (h *Handler) chat(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errorf(http.StatusBadRequest, "invalid value for %q: expected %s", te.Field, te.Type)
		}
		return errorf(http.StatusBadRequest, "invalid JSON: %v", err)
	}
	if req.Model == "" {
		return errorf(http.StatusBadRequest, "model is required")
	}
	c.Set("model", req.Model)
	if len(req.Messages) == 0 {
		return errorf(http.StatusBadRequest, "messages is required")
	}
	call, err := h.prepareChat(&req)
	if err != nil {
		return err
	}

	w := dialect.NewStreamWriter(c, "text/event-stream")
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.Event(event, b)
		return w.Flush()
	}
	end := func() error {
		w.Event("", []byte("[DONE]"))
		return w.Flush()
	}
	fatal := func(err error) error {
		code, msg := ollama.StatusOf(err)
		send("error", map[string]any{"error": msg, "status": code})
		return end()
	}

	ctx := c.Request().Context()
	if send("", processing{Status: "processing", State: 0}) != nil {
		return nil
	}
	type started struct {
		s   *ollama.Stream
		err error
	}
	ch := make(chan started, 1)
	go func() {
		s, err := call.Start(ctx)
		ch <- started{s, err}
	}()
	tick := time.NewTicker(updateEvery)
	defer tick.Stop()
	var st started
wait:
	for {
		select {
		case st = <-ch:
			break wait
		case <-tick.C:
			send("", processing{Status: "processing", State: 0})
		}
	}
	if st.err != nil {
		return fatal(st.err)
	}
	s := st.s
	defer s.Close()
	if send("", processing{Status: "processing", State: 1}) != nil {
		return nil
	}
	var buf []infer.Event
	for {
		var rerr error
		buf, rerr = s.Recv(buf[:0])
		for _, ev := range buf {
			var err error
			d := ev.Delta
			switch {
			case ev.Done && ev.Err != nil:
				return fatal(ev.Err)
			case ev.Done:
				err = send("delta", lastEvent(s, ev, d))
			case d.Content != "" || d.Thinking != "":
				err = send("delta", chatEvent{Model: req.Model, CreatedAt: time.Now().UTC(), Message: api.Message{Role: "assistant", Content: d.Content, Thinking: d.Thinking}})
			}
			if err != nil {
				return nil // the client went away; closing the stream stops the generation
			}
		}
		if rerr == io.EOF {
			return end()
		}
		if rerr != nil {
			return nil // the client went away
		}
	}
}

// lastEvent is the done event of a stream that ended with ev.
func lastEvent(s *ollama.Stream, ev infer.Event, d chatparse.Delta) chatEvent {
	r := s.ChatFinal(ev, d)
	return chatEvent{
		Model: r.Model, CreatedAt: r.CreatedAt, Message: r.Message, Done: true, DoneReason: r.DoneReason,
		final: &final{
			TotalDuration: r.TotalDuration, LoadDuration: r.LoadDuration, PromptEvalCount: r.PromptEvalCount,
			PromptEvalDuration: r.PromptEvalDuration, EvalCount: r.EvalCount, EvalDuration: r.EvalDuration,
		},
	}
}
