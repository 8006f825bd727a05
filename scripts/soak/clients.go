package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// kind is one sort of request a client sends.
type kind struct {
	name   string
	weight int
	run    func(c *client, ctx context.Context) outcome
}

// kinds mixes every dialect: Ollama generate, chat and embed (streamed
// and not), OpenAI chat, completions and embeddings (streamed and not),
// Open WebUI's chat, Anura jobs (submit and poll) and Anura's SSE chat.
var kinds = []kind{
	{"ollama generate", 3, func(c *client, ctx context.Context) outcome { return c.ollama(ctx, "/api/generate", false) }},
	{"ollama generate stream", 4, func(c *client, ctx context.Context) outcome { return c.ollama(ctx, "/api/generate", true) }},
	{"ollama chat", 3, func(c *client, ctx context.Context) outcome { return c.ollama(ctx, "/api/chat", false) }},
	{"ollama chat stream", 4, func(c *client, ctx context.Context) outcome { return c.ollama(ctx, "/api/chat", true) }},
	{"ollama embed", 2, func(c *client, ctx context.Context) outcome { return c.embed(ctx, "/api/embed") }},
	{"openai chat", 3, func(c *client, ctx context.Context) outcome { return c.openAI(ctx, "/v1/chat/completions", false) }},
	{"openai chat stream", 4, func(c *client, ctx context.Context) outcome { return c.openAI(ctx, "/v1/chat/completions", true) }},
	{"openai completions", 2, func(c *client, ctx context.Context) outcome { return c.openAI(ctx, "/v1/completions", false) }},
	{"openai completions stream", 2, func(c *client, ctx context.Context) outcome { return c.openAI(ctx, "/v1/completions", true) }},
	{"openai embeddings", 2, func(c *client, ctx context.Context) outcome { return c.embed(ctx, "/v1/embeddings") }},
	{"webui chat stream", 2, func(c *client, ctx context.Context) outcome { return c.openAI(ctx, "/api/chat/completions", true) }},
	{"anura job", 2, func(c *client, ctx context.Context) outcome { return c.anuraJob(ctx) }},
	{"anura chat", 3, func(c *client, ctx context.Context) outcome { return c.anuraChat(ctx) }},
}

// outcome is how one request ended.
type outcome struct {
	kind      string
	ttft      time.Duration // first generated text of a stream; 0: none
	cancelled bool          // the client gave up on purpose
	status    int           // the HTTP status (0: none)
	err       string        // "" or what went wrong, as an error kind
}

// client is one concurrent client: its random source and HTTP client.
type client struct {
	base string
	http *http.Client
	rnd  *rand.Rand
}

var prompts = []string{"Once upon a time", "Hi", "The little dog", "one", "Tell me a story about a cat"}

func (c *client) model() string {
	if c.rnd.IntN(2) == 0 {
		return "stories"
	}
	return "bigram"
}

// common are the fields every generation request shares: a small
// num_predict so that each request is bounded, and keep_alive 0 on one
// request in 20 so that models unload and load again under load.
func (c *client) common(body map[string]any) map[string]any {
	body["model"] = c.model()
	if c.rnd.IntN(20) == 0 {
		body["keep_alive"] = 0
	}
	return body
}

func (c *client) options() map[string]any {
	return map[string]any{"num_predict": 4 + c.rnd.IntN(28), "temperature": c.rnd.Float64(), "seed": c.rnd.IntN(1000)}
}

// cancelAfter: for one streamed request in 8, the number of chunks after
// which the client cancels (0: never).
func (c *client) cancelAfter() int {
	if c.rnd.IntN(8) == 0 {
		return 1 + c.rnd.IntN(4)
	}
	return 0
}

func (c *client) ollama(ctx context.Context, path string, stream bool) outcome {
	body := c.common(map[string]any{"stream": stream, "options": c.options()})
	if path == "/api/chat" {
		body["messages"] = []any{map[string]any{"role": "user", "content": prompts[c.rnd.IntN(len(prompts))]}}
	} else {
		body["prompt"] = prompts[c.rnd.IntN(len(prompts))]
	}
	return c.send(ctx, path, body, stream, ndjsonText)
}

func (c *client) openAI(ctx context.Context, path string, stream bool) outcome {
	body := c.common(map[string]any{"stream": stream, "max_tokens": 4 + c.rnd.IntN(28), "temperature": c.rnd.Float64()})
	if path == "/v1/completions" {
		body["prompt"] = prompts[c.rnd.IntN(len(prompts))]
	} else {
		body["messages"] = []any{map[string]any{"role": "user", "content": prompts[c.rnd.IntN(len(prompts))]}}
	}
	delete(body, "keep_alive") // not an OpenAI field
	return c.send(ctx, path, body, stream, sseText)
}

func (c *client) embed(ctx context.Context, path string) outcome {
	input := []any{prompts[c.rnd.IntN(len(prompts))]}
	if c.rnd.IntN(2) == 0 {
		input = append(input, prompts[c.rnd.IntN(len(prompts))])
	}
	body := c.common(map[string]any{"input": input})
	if path != "/api/embed" {
		delete(body, "keep_alive")
	}
	return c.send(ctx, path, body, false, nil)
}

func (c *client) anuraChat(ctx context.Context) outcome {
	body := c.common(map[string]any{"options": c.options(),
		"messages": []any{map[string]any{"role": "user", "content": prompts[c.rnd.IntN(len(prompts))]}}})
	return c.send(ctx, "/api/v1/chat/completions", body, true, sseText)
}

// anuraJob submits an Ollama job, polls it to its end and fetches the
// result; one job in 10 is cancelled (DELETE) while it waits or runs.
func (c *client) anuraJob(ctx context.Context) outcome {
	o := outcome{kind: "anura job"}
	body := c.common(map[string]any{"prompt": prompts[c.rnd.IntN(len(prompts))], "stream": false, "options": c.options()})
	st, b, err := c.do(ctx, http.MethodPost, "/api/v1/ollama", body)
	o.status = st
	if err != nil || st != http.StatusAccepted {
		o.err = errKind(st, err, b)
		return o
	}
	var sub struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &sub); err != nil || sub.Data.ID == "" {
		o.err = "anura job: submit answer without id"
		return o
	}
	cancel := c.rnd.IntN(10) == 0
	for {
		if cancel {
			st, b, err := c.do(ctx, http.MethodDelete, "/api/v1/jobs/"+sub.Data.ID, nil)
			// 409: it finished first.
			if err != nil || (st != http.StatusOK && st != http.StatusConflict) {
				o.status, o.err = st, errKind(st, err, b)
				return o
			}
			o.cancelled = true
			return o
		}
		st, b, err := c.do(ctx, http.MethodGet, "/api/v1/jobs/"+sub.Data.ID, nil)
		if err != nil || st != http.StatusOK {
			o.status, o.err = st, errKind(st, err, b)
			return o
		}
		var job struct {
			Data struct {
				State      string `json:"state"`
				Error      string `json:"error"`
				ResultsURL string `json:"results_url"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &job); err != nil {
			o.err = "anura job: bad status body"
			return o
		}
		switch job.Data.State {
		case "completed":
			st, b, err := c.do(ctx, http.MethodGet, job.Data.ResultsURL, nil)
			if err != nil || st != http.StatusOK {
				o.status, o.err = st, errKind(st, err, b)
			}
			return o
		case "failed", "cancelled":
			o.err = "anura job " + job.Data.State + ": " + firstWords(job.Data.Error)
			return o
		}
		select {
		case <-ctx.Done():
			o.err = "anura job: timeout"
			return o
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// send posts body and reads the answer; a stream is read chunk by chunk
// (text tells a chunk's generated text and whether it is an error) and
// may be cancelled on purpose after a few chunks.
func (c *client) send(ctx context.Context, path string, body map[string]any, stream bool, text func([]byte) (string, bool)) outcome {
	o := outcome{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		o.err = errKind(0, err, nil)
		return o
	}
	defer resp.Body.Close()
	o.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK || !stream {
		rb, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || err != nil {
			o.err = errKind(resp.StatusCode, err, rb)
		}
		return o
	}
	stopAfter := c.cancelAfter()
	chunks := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		t, isErr := text(line)
		if isErr {
			o.err = "stream error: " + firstWords(string(line))
			return o
		}
		if t != "" && o.ttft == 0 {
			o.ttft = time.Since(start)
		}
		chunks++
		if stopAfter > 0 && chunks >= stopAfter {
			cancel()
			o.cancelled = true
			return o
		}
	}
	if err := sc.Err(); err != nil {
		o.err = errKind(0, err, nil)
	}
	return o
}

// ndjsonText reads an Ollama stream line.
func ndjsonText(line []byte) (string, bool) {
	var m struct {
		Response string `json:"response"`
		Message  struct {
			Content string `json:"content"`
		} `json:"message"`
		Error string `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Error != "" {
		return "", true
	}
	return m.Response + m.Message.Content, false
}

// sseText reads an SSE line of OpenAI's or Anura's stream: "event:" lines
// (an "error" event is an error), "data:" lines with a chunk.
func sseText(line []byte) (string, bool) {
	s := string(line)
	if ev, ok := strings.CutPrefix(s, "event:"); ok {
		return "", strings.TrimSpace(ev) == "error"
	}
	data, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return "", false
	}
	data = strings.TrimSpace(data)
	if data == "[DONE]" {
		return "", false
	}
	var m struct {
		Choices []struct {
			Text  string `json:"text"`
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Error any `json:"error"`
	}
	if json.Unmarshal([]byte(data), &m) != nil || m.Error != nil {
		return "", true
	}
	out := m.Message.Content
	for _, ch := range m.Choices {
		out += ch.Text + ch.Delta.Content
	}
	return out, false
}

func (c *client) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// errKind names a failure for the error table: the status and the start
// of the message, or the transport error's class.
func errKind(status int, err error, body []byte) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "transport: timeout"
	case err != nil && status == 0:
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return "transport: " + msg
	case err != nil:
		return fmt.Sprintf("%d read: %v", status, err)
	}
	return fmt.Sprintf("%d %s", status, firstWords(string(body)))
}

func firstWords(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 90 {
		s = s[:90] + "…"
	}
	return s
}
