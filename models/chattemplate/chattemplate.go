package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ToolCall is an assistant's call of a function.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // a JSON object
}

// Message is one turn.
type Message struct {
	Role    string
	Content string
	// Thinking is exposed to templates as reasoning_content (and
	// omitted when empty).
	Thinking string
	// ToolCalls are exposed as tool_calls:
	// [{"id", "type": "function", "function": {"name", "arguments": <object>}}].
	ToolCalls []ToolCall
	// ToolCallID is a tool result's tool_call_id.
	ToolCallID string
	// ToolName is a tool result's function, exposed as name.
	ToolName string
}

// Input is what a template renders.
type Input struct {
	Messages []Message
	// Tools are OpenAI-style tool objects, passed as parsed JSON with
	// their key order kept; nil leaves `tools` undefined.
	Tools               []json.RawMessage
	AddGenerationPrompt bool
	BOSToken, EOSToken  string
	// Vars are extra template variables, e.g. enable_thinking (bool) or
	// reasoning_effort. They cannot replace the variables above.
	Vars map[string]any
	// Now is the clock of strftime_now; nil is time.Now.
	Now func() time.Time
	// StringArguments passes tool call arguments as their JSON text
	// rather than as an object: what llama-server gives templates that
	// do not read arguments as an object (functionary v3.2 adds them to
	// a string).
	StringArguments bool
}

// Template is a parsed template, for reuse (cache it per model). It is
// safe for concurrent use.
type Template struct {
	nodes []node
	lim   limits
	// gemma4: an older Gemma 4 template, whose tool results are folded
	// into the calling assistant turn (gemma4Turns).
	gemma4 bool
}

// Parse parses a Jinja chat template.
func Parse(src string) (t *Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("chat template: internal error while parsing: %v", r)
		}
	}()
	nodes, err := parse(src)
	if err != nil {
		return nil, err
	}
	return &Template{nodes: nodes, lim: defaultLimits, gemma4: gemma4ToolResponses(src)}, nil
}

// Render renders src with in. Errors (syntax, raise_exception, runtime)
// are returned with the template's message.
func Render(src string, in Input) (string, error) {
	t, err := Parse(src)
	if err != nil {
		return "", err
	}
	return t.Render(in)
}

// Render renders the template with in.
func (t *Template) Render(in Input) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("chat template: internal error while rendering: %v", r)
		}
	}()
	ctx, err := in.context(t.gemma4)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	e := &evaluator{lim: t.lim, top: &b, out: &b, now: in.Now}
	if e.now == nil {
		e.now = time.Now
	}
	if err := e.exec(t.nodes, ctx); err != nil {
		if err == errBreak || err == errContinue {
			return "", fmt.Errorf("chat template: 'break' or 'continue' outside a loop")
		}
		if errors.Is(err, ErrLimit) {
			return "", &LimitError{err: err, Steps: e.steps, Built: e.alloc, Output: b.Len()}
		}
		return "", err
	}
	return b.String(), nil
}

// LimitError is the error of a rendering stopped by a limit (it wraps
// ErrLimit): what the rendering had done when it stopped, which the
// limits bound whatever the machine's speed.
type LimitError struct {
	err    error
	Steps  int64 // statements run, loop iterations and calls
	Built  int   // bytes of strings and list slots built
	Output int   // bytes rendered
}

func (e *LimitError) Error() string { return e.err.Error() }
func (e *LimitError) Unwrap() error { return e.err }

// context builds the variables a template sees, as transformers'
// apply_chat_template passes them.
func (in *Input) context(gemma4 bool) (*scope, error) {
	s := newScope(nil)
	for k, v := range in.Vars {
		c, err := fromGo(v)
		if err != nil {
			return nil, fmt.Errorf("chat template variable %s: %w", k, err)
		}
		s.vars[k] = c
	}
	msgs := &list{}
	for i, m := range in.Messages {
		d, err := m.value(in.StringArguments)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		msgs.items = append(msgs.items, d)
	}
	if gemma4 {
		var ds []*dict
		for _, m := range msgs.items {
			ds = append(ds, m.(*dict))
		}
		msgs.items = msgs.items[:0]
		for _, d := range gemma4Turns(ds) {
			msgs.items = append(msgs.items, d)
		}
	}
	s.vars["messages"] = msgs
	if in.Tools != nil {
		tools := &list{}
		for i, raw := range in.Tools {
			v, err := fromJSON(raw)
			if err != nil {
				return nil, fmt.Errorf("tool %d: invalid JSON: %w", i, err)
			}
			tools.items = append(tools.items, v)
		}
		s.vars["tools"] = tools
	}
	s.vars["add_generation_prompt"] = in.AddGenerationPrompt
	s.vars["bos_token"] = in.BOSToken
	s.vars["eos_token"] = in.EOSToken
	return newScope(s), nil
}

// value is the message as the dict a template sees. Content is always
// a string: an assistant message that only calls tools has content "",
// not None, which several templates (Qwen3, Phi-3.5, granite, gpt-oss…)
// cannot render.
func (m *Message) value(stringArgs bool) (*dict, error) {
	d := newDict()
	d.set("role", m.Role)
	d.set("content", m.Content)
	if m.Thinking != "" {
		// reasoning_content as llama-server names it; thinking as
		// Ollama does and gpt-oss's template reads it.
		d.set("reasoning_content", m.Thinking)
		d.set("thinking", m.Thinking)
	}
	if len(m.ToolCalls) > 0 {
		calls := &list{}
		for _, tc := range m.ToolCalls {
			var args any = newDict()
			if stringArgs {
				args = strings.TrimSpace(string(tc.Arguments))
			} else if len(strings.TrimSpace(string(tc.Arguments))) > 0 {
				v, err := fromJSON(tc.Arguments)
				if err != nil {
					// Not JSON: templates get the text, as some accept.
					v = string(tc.Arguments)
				}
				args = v
			}
			fn := newDict()
			fn.set("name", tc.Name)
			fn.set("arguments", args)
			call := newDict()
			if tc.ID != "" {
				call.set("id", tc.ID)
			}
			call.set("type", "function")
			call.set("function", fn)
			calls.items = append(calls.items, call)
		}
		d.set("tool_calls", calls)
	}
	if m.ToolCallID != "" {
		d.set("tool_call_id", m.ToolCallID)
	}
	if m.ToolName != "" {
		d.set("name", m.ToolName)
	}
	return d, nil
}
