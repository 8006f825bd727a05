package openai

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/dialect"
)

// chat serves POST /v1/chat/completions and, with webui set, Open
// WebUI's /api/chat/completions.
func (h *Handler) chat(c echo.Context, webui bool) error {
	start := time.Now()
	var req ChatRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Model != "" {
		c.Set("model", req.Model)
	}
	reqs, n, err := h.prepareChat(c.Request().Context(), &req)
	if err != nil {
		return err
	}
	g, err := h.start(c.Request().Context(), req.Model, reqs, n)
	if err != nil {
		return err
	}
	defer g.close()
	a := &chatAnswer{g: g, model: req.Model, created: time.Now().Unix(), start: start, webui: webui, logprobs: req.Logprobs,
		calls: make([]int, len(reqs))}
	a.id = dialect.NewID("chatcmpl-")
	if webui {
		a.id = req.Model + "-" + newUUID()
	}
	if req.Stream {
		return a.stream(c, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	}
	return a.respond(c)
}

// chatAnswer encodes a chat request's generations.
type chatAnswer struct {
	g        *gen
	id       string
	model    string // as the request named it
	created  int64
	start    time.Time
	webui    bool
	logprobs bool
	calls    []int // per choice: tool calls sent
}

// finish is a choice's finish_reason: "tool_calls" once it called a tool.
func (a *chatAnswer) finish(i int, reason string) string {
	if a.calls[i] > 0 && reason == "stop" {
		return "tool_calls"
	}
	return reason
}

// toolCalls converts parsed calls; indexed for stream deltas.
func toolCalls(calls []chatparse.ToolCall, indexed bool) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		tc := ToolCall{ID: c.ID, Type: "function", Function: FunctionCall{Name: c.Name, Arguments: string(c.Arguments)}}
		if indexed {
			i := c.Index
			tc.Index = &i
		}
		out = append(out, tc)
	}
	return out
}

// usage is OpenAI's usage, or on the Open WebUI route the same with
// Ollama's statistics.
func (a *chatAnswer) usage(t *tally) any {
	if a.webui {
		return webUIUsage(t, time.Since(a.start), a.g.in.LoadDuration)
	}
	return t.usage()
}

func (a *chatAnswer) respond(c echo.Context) error {
	res, err := a.g.collect()
	if err != nil {
		return err
	}
	out := ChatCompletion{
		ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model, SystemFingerprint: a.g.fingerprint(),
		Choices: make([]ChatChoice, len(res)),
	}
	var t tally
	for i, r := range res {
		t.add(a.g, i, r.final)
		d := r.out
		a.calls[i] += len(d.ToolCalls)
		msg := AnswerMessage{Role: "assistant", Content: d.Content, ReasoningContent: d.Thinking, ToolCalls: toolCalls(d.ToolCalls, false)}
		ch := ChatChoice{Index: i, Message: msg, FinishReason: a.finish(i, finishReason(r.final))}
		if a.logprobs {
			ch.Logprobs = &ChatLogprobs{Content: chatLogprobs(r.logprobs), Refusal: nil}
		}
		out.Choices[i] = ch
	}
	out.Usage = a.usage(&t)
	return c.JSON(http.StatusOK, out)
}

func (a *chatAnswer) chunk(choices ...ChunkChoice) ChatChunk {
	if choices == nil {
		choices = []ChunkChoice{}
	}
	return ChatChunk{
		ID: a.id, Object: "chat.completion.chunk", Created: a.created, Model: a.model,
		SystemFingerprint: a.g.fingerprint(), Choices: choices,
	}
}

// stream answers with Server-Sent Events: a first chunk per choice with
// the role, one chunk per piece of text (a token, or more when a stop
// string held some back), a last chunk per choice with its finish_reason,
// the usage chunk when asked for, then [DONE]. On the Open WebUI route
// the usage (with Ollama's statistics) rides on the last chunk instead.
func (a *chatAnswer) stream(c echo.Context, includeUsage bool) error {
	s := startSSE(c)
	empty := ""
	for i := 0; i < a.g.count; i++ {
		if s.send(a.chunk(ChunkChoice{Index: i, Delta: Delta{Role: "assistant", Content: &empty}})) != nil {
			return nil // the client left; close cancels the generations
		}
	}
	t, ok := a.g.relay(s, func(x indexed) any {
		d := x.ev.Delta
		a.calls[x.i] += len(d.ToolCalls)
		if d.Empty() && (!a.logprobs || len(x.ev.Logprobs) == 0) {
			return nil
		}
		var delta Delta
		if d.Content != "" || (d.Thinking == "" && len(d.ToolCalls) == 0) {
			delta.Content = &d.Content
		}
		if d.Thinking != "" {
			delta.ReasoningContent = &d.Thinking
		}
		delta.ToolCalls = toolCalls(d.ToolCalls, true)
		ch := ChunkChoice{Index: x.i, Delta: delta}
		if a.logprobs {
			ch.Logprobs = &ChatLogprobs{Content: chatLogprobs(x.ev.Logprobs)}
		}
		return a.chunk(ch)
	}, func(i int, reason string, t *tally, left int) any {
		reason = a.finish(i, reason)
		last := a.chunk(ChunkChoice{Index: i, FinishReason: &reason})
		if a.webui && left == 0 {
			last.Usage = a.usage(t)
		}
		return last
	})
	if !ok {
		return nil
	}
	if includeUsage && !a.webui {
		u := a.chunk()
		u.Usage = a.usage(t)
		if s.send(u) != nil {
			return nil
		}
	}
	_ = s.done()
	return nil
}
