package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// answer is one response being made.
type answer struct {
	h          *Handler
	p          *prepared
	id         string
	created    int64
	store      bool
	owner      string
	background bool      // run by a job: its stored row is updated
	expires    time.Time // zero: now + TTL
}

// snapshot is the response object with a status and no output yet.
func (a *answer) snapshot(status string) *Response {
	req := a.p.req
	r := &Response{
		ID: a.id, Object: "response", CreatedAt: a.created, Status: status, Background: req.Background,
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: req.Model, Output: []json.RawMessage{},
		ParallelToolCalls: a.p.parallel, Store: a.store, Temperature: 1, TopP: 1, Truncation: "disabled",
		Tools: req.Tools, Metadata: req.Metadata, ToolChoice: json.RawMessage(`"auto"`),
		Text: TextEcho{Format: TextFormat{Type: "text"}, Verbosity: "medium"},
	}
	if req.Temperature != nil {
		r.Temperature = *req.Temperature
	}
	if req.TopP != nil {
		r.TopP = *req.TopP
	}
	if r.Tools == nil {
		r.Tools = []Tool{}
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	if req.Truncation == "auto" {
		r.Truncation = "auto"
	}
	if tc := bytes.TrimSpace(req.ToolChoice); len(tc) > 0 && string(tc) != "null" {
		r.ToolChoice = tc
	}
	if req.Text != nil && req.Text.Format != nil {
		r.Text.Format = *req.Text.Format
	}
	if req.Text != nil && req.Text.Verbosity != "" {
		r.Text.Verbosity = req.Text.Verbosity
	}
	if req.Reasoning != nil {
		r.Reasoning = ReasoningEcho(*req.Reasoning)
	}
	if req.PreviousResponseID != "" {
		id := req.PreviousResponseID
		r.PreviousResponseID = &id
	}
	if req.User != "" {
		u := req.User
		r.User = &u
	}
	return r
}

// gen is a started generation.
type gen struct{ *infer.Generation }

func (a *answer) start(ctx context.Context, priority int) (*gen, error) {
	r := *a.p.ireq
	r.Priority = priority
	g, err := a.h.Infer.Generate(ctx, &r)
	if err != nil {
		return nil, inferError(err, r.Model)
	}
	return &gen{g}, nil
}

func (g *gen) close() { g.Close() }

// relay reads the generation to its end through b; it returns the final
// event.
func (g *gen) relay(b *builder, flush func() error) (infer.Event, error) {
	var evs []infer.Event
	for {
		var err error
		evs, err = g.Stream().Next(evs[:0])
		for _, ev := range evs {
			if err := b.add(ev.Delta); err != nil {
				return ev, err
			}
			if ev.Done {
				if ev.Err != nil {
					return ev, dialect.GenerationError(ev.Err)
				}
				return ev, nil
			}
		}
		if flush != nil {
			if err := flush(); err != nil {
				return infer.Event{}, err
			}
		}
		if errors.Is(err, io.EOF) {
			return infer.Event{}, dialect.GenerationError(errors.New("generation ended without a result"))
		}
		if err != nil {
			return infer.Event{}, err // the client went away
		}
	}
}

// complete fills the response from the builder and the final event.
func (a *answer) complete(b *builder, final infer.Event) *Response {
	status := "completed"
	if final.DoneReason == "length" {
		status = "incomplete"
	}
	r := a.snapshot(status)
	r.Output = b.output(status)
	if status == "incomplete" {
		r.IncompleteDetails = &Incomplete{Reason: "max_output_tokens"}
	}
	now := time.Now().Unix()
	r.CompletedAt = &now
	st := final.Stats
	r.Usage = &Usage{InputTokens: st.PromptTokens, InputTokensDetails: InputDetails{CachedTokens: st.CachedTokens},
		OutputTokens: st.EvalCount, TotalTokens: st.PromptTokens + st.EvalCount}
	return r
}

// save stores the response: its object, request, own input items and
// the response it continues (record). A background response (run by
// its job) is updated unless it was cancelled meanwhile.
func (a *answer) save(ctx context.Context, r *Response) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if a.background {
		_, err := a.h.Jobs.UpdateResponse(ctx, a.id, r.Status, body, "cancelled")
		return err
	}
	rec := a.record(r.Status, body)
	exp := a.expires
	if exp.IsZero() {
		exp = time.Now().Add(a.h.ttl())
	}
	rec.CreatedAt, rec.ExpiresAt = time.Unix(a.created, 0), exp
	return a.h.Jobs.SaveResponse(ctx, rec)
}

// run makes the whole response and stores it when asked to.
func (a *answer) run(ctx context.Context, priority int) (*Response, error) {
	g, err := a.start(ctx, priority)
	if err != nil {
		return nil, err
	}
	defer g.close()
	b := &builder{parallel: a.p.parallel, members: a.p.members}
	final, err := g.relay(b, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	status := "completed"
	if final.DoneReason == "length" {
		status = "incomplete"
	}
	_ = b.finish(status)
	r := a.complete(b, final)
	if a.store {
		if err := a.save(ctx, r); err != nil {
			return nil, storeError(err)
		}
	}
	return r, nil
}

// stream answers with the Responses API's Server-Sent Events.
func (a *answer) stream(c echo.Context) error {
	ctx := c.Request().Context()
	g, err := a.start(ctx, 0)
	if err != nil {
		return err // refused before the stream: an error answer with its status
	}
	defer g.close()
	w := dialect.NewStreamWriter(c, "text/event-stream")
	seq := 0
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	emit := func(typ string, fields map[string]any) error {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		js.Reset()
		if err := enc.Encode(fields); err != nil {
			return err
		}
		w.Event(typ, bytes.TrimSuffix(js.Bytes(), []byte("\n")))
		return nil
	}
	fail := func(err error) error {
		e := dialect.From(err)
		code := e.Code
		if code == "" {
			code = "server_error"
		}
		_ = emit("error", map[string]any{"code": code, "message": e.Message, "param": nil})
		r := a.snapshot("failed")
		r.Error = &ResponseError{Code: code, Message: e.Message}
		_ = emit("response.failed", map[string]any{"response": r})
		_ = w.Flush()
		return nil
	}
	_ = emit("response.created", map[string]any{"response": a.snapshot("in_progress")})
	_ = emit("response.in_progress", map[string]any{"response": a.snapshot("in_progress")})
	if w.Flush() != nil {
		return nil // the client left; close cancels the generation
	}
	b := &builder{parallel: a.p.parallel, emit: emit, members: a.p.members}
	final, err := g.relay(b, w.Flush)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fail(err)
	}
	status := "completed"
	if final.DoneReason == "length" {
		status = "incomplete"
	}
	if err := b.finish(status); err != nil {
		return fail(err)
	}
	r := a.complete(b, final)
	if a.store {
		if err := a.save(ctx, r); err != nil {
			return fail(storeError(err))
		}
	}
	_ = emit("response."+status, map[string]any{"response": r})
	_ = w.Flush()
	return nil
}
