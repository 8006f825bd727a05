package responses

import (
	"encoding/json"
	"strings"

	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/dialect"
)

// outItem is an output item being built.
type outItem struct {
	kind   string // "reasoning", "message" or "function_call"
	id     string
	index  int
	text   strings.Builder
	callID string
	name   string
	args   string
	// namespace is a namespace member's call's namespace.
	namespace string
}

// builder turns a generation's deltas into output items, in the order
// they come (reasoning, text, function calls), and, streaming, into the
// Responses API's events (emit; nil when not streaming). The streamed and
// the whole answer are built by the same code, so they agree.
type builder struct {
	items    []*outItem
	open     *outItem
	emit     func(typ string, fields map[string]any) error
	parallel bool
	calls    int
	// members are the namespace members by qualified name: their calls
	// are answered with the member's name and its namespace.
	members map[string]qualified
}

func (b *builder) send(typ string, fields map[string]any) error {
	if b.emit == nil {
		return nil
	}
	return b.emit(typ, fields)
}

// add takes one delta.
func (b *builder) add(d chatparse.Delta) error {
	if d.Thinking != "" {
		if err := b.text("reasoning", d.Thinking); err != nil {
			return err
		}
	}
	if d.Content != "" {
		if err := b.text("message", d.Content); err != nil {
			return err
		}
	}
	for _, c := range d.ToolCalls {
		if !b.parallel && b.calls > 0 {
			continue // parallel_tool_calls false: the first call only
		}
		if err := b.call(c); err != nil {
			return err
		}
	}
	return nil
}

func partType(kind string) string {
	if kind == "reasoning" {
		return "reasoning_text"
	}
	return "output_text"
}

func (b *builder) start(kind, prefix string) (*outItem, error) {
	if err := b.close("completed"); err != nil {
		return nil, err
	}
	it := &outItem{kind: kind, id: dialect.NewID(prefix), index: len(b.items)}
	b.items = append(b.items, it)
	if err := b.send("response.output_item.added", map[string]any{"output_index": it.index, "item": it.render("in_progress", false)}); err != nil {
		return nil, err
	}
	return it, nil
}

// text adds text to the open item of its kind, opening one if needed.
func (b *builder) text(kind, s string) error {
	if b.open == nil || b.open.kind != kind {
		prefix := "msg_"
		if kind == "reasoning" {
			prefix = "rs_"
		}
		it, err := b.start(kind, prefix)
		if err != nil {
			return err
		}
		b.open = it
		if err := b.send("response.content_part.added", map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0,
			"part": it.part()}); err != nil {
			return err
		}
	}
	it := b.open
	it.text.WriteString(s)
	typ := "response.output_text.delta"
	fields := map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0, "delta": s}
	if kind == "reasoning" {
		typ = "response.reasoning_text.delta"
	} else {
		fields["logprobs"] = []any{}
	}
	return b.send(typ, fields)
}

// call adds a function call, whole: the parser gives calls complete.
func (b *builder) call(c chatparse.ToolCall) error {
	it, err := b.start("function_call", "fc_")
	if err != nil {
		return err
	}
	b.calls++
	it.callID, it.name, it.args = c.ID, c.Name, string(c.Arguments)
	if q, ok := b.members[c.Name]; ok {
		it.namespace, it.name = q.Namespace, q.Name
	}
	if it.callID == "" {
		it.callID = dialect.NewID("call_")
	}
	if it.args == "" {
		it.args = "{}"
	}
	// The item as added carries the call's id and name.
	if err := b.send("response.function_call_arguments.delta", map[string]any{"item_id": it.id, "output_index": it.index, "delta": it.args}); err != nil {
		return err
	}
	if err := b.send("response.function_call_arguments.done", map[string]any{"item_id": it.id, "output_index": it.index,
		"name": it.name, "arguments": it.args}); err != nil {
		return err
	}
	return b.send("response.output_item.done", map[string]any{"output_index": it.index, "item": it.render("completed", true)})
}

// close ends the open text item with a status.
func (b *builder) close(status string) error {
	it := b.open
	if it == nil {
		return nil
	}
	b.open = nil
	typ := "response.output_text.done"
	fields := map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0, "text": it.text.String()}
	if it.kind == "reasoning" {
		typ = "response.reasoning_text.done"
	} else {
		fields["logprobs"] = []any{}
	}
	if err := b.send(typ, fields); err != nil {
		return err
	}
	if err := b.send("response.content_part.done", map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0,
		"part": it.part()}); err != nil {
		return err
	}
	return b.send("response.output_item.done", map[string]any{"output_index": it.index, "item": it.render(status, true)})
}

// finish closes the output: an answer without a message or a call gets
// an empty message, as OpenAI always answers with one.
func (b *builder) finish(status string) error {
	if b.open != nil && b.open.kind == "message" || b.calls > 0 {
		return b.close(status)
	}
	has := false
	for _, it := range b.items {
		has = has || it.kind == "message"
	}
	if !has {
		if err := b.text("message", ""); err != nil {
			return err
		}
	}
	return b.close(status)
}

// output is the items as the response lists them.
func (b *builder) output(status string) []json.RawMessage {
	out := make([]json.RawMessage, len(b.items))
	for i, it := range b.items {
		st := "completed"
		if i == len(b.items)-1 && it.kind != "function_call" {
			st = status
		}
		js, _ := json.Marshal(it.render(st, true))
		out[i] = js
	}
	return out
}

func (it *outItem) part() any {
	if it.kind == "reasoning" {
		return map[string]any{"type": "reasoning_text", "text": it.text.String()}
	}
	return outputText{Type: "output_text", Text: it.text.String(), Annotations: []any{}, Logprobs: []any{}}
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type messageItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type reasoningPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type reasoningItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Status  string          `json:"status,omitempty"`
	Summary []any           `json:"summary"`
	Content []reasoningPart `json:"content"`
}

type callItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments"`
}

// render is the item as JSON: full, or as first added (no content yet).
func (it *outItem) render(status string, full bool) any {
	switch it.kind {
	case "reasoning":
		r := reasoningItem{ID: it.id, Type: "reasoning", Status: status, Summary: []any{}, Content: []reasoningPart{}}
		if full {
			r.Content = append(r.Content, reasoningPart{Type: "reasoning_text", Text: it.text.String()})
		}
		return r
	case "function_call":
		c := callItem{ID: it.id, Type: "function_call", Status: status, CallID: it.callID, Name: it.name, Namespace: it.namespace}
		if full {
			c.Arguments = it.args
		}
		return c
	}
	m := messageItem{ID: it.id, Type: "message", Status: status, Role: "assistant", Content: []outputText{}}
	if full {
		m.Content = append(m.Content, outputText{Type: "output_text", Text: it.text.String(), Annotations: []any{}, Logprobs: []any{}})
	}
	return m
}
