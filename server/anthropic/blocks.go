package anthropic

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/dialect"
)

// sink receives an answer's content blocks as they form: the stream
// writes them as events, the JSON answer collects them. One builder
// feeds both, so a streamed answer accumulates to the same content as
// the answer of the same request without stream.
type sink interface {
	start(i int, b ContentBlock)
	delta(i int, d Delta)
	stop(i int)
}

// blocks turns a generation's deltas into content blocks with
// increasing indexes: a thinking block per run of thinking (closed with
// its signature), a text block per run of text, a tool_use block per
// call (its whole input in one input_json_delta: the parser hands calls
// over complete). Whitespace alone does not open a text block (it
// separates thinking from a call); it is kept when text follows.
type blocks struct {
	out     sink
	open    string // the open block's type: "", "text" or "thinking"
	n       int    // blocks started
	held    string // whitespace waiting for text
	thought strings.Builder
	calls   int
}

// add takes one event's delta.
func (b *blocks) add(d chatparse.Delta) {
	if d.Thinking != "" {
		b.thinking(d.Thinking)
	}
	if d.Content != "" {
		b.text(d.Content)
	}
	for _, c := range d.ToolCalls {
		b.toolUse(c)
	}
}

func (b *blocks) text(s string) {
	if b.open != "text" {
		s = b.held + s
		if strings.TrimSpace(s) == "" {
			b.held = s
			return
		}
		empty := ""
		b.begin("text", ContentBlock{Type: "text", Text: &empty})
	}
	b.out.delta(b.n-1, Delta{Type: "text_delta", Text: &s})
}

func (b *blocks) thinking(s string) {
	if b.open != "thinking" {
		empty, sig := "", ""
		b.begin("thinking", ContentBlock{Type: "thinking", Thinking: &empty, Signature: &sig})
	}
	b.thought.WriteString(s)
	b.out.delta(b.n-1, Delta{Type: "thinking_delta", Thinking: &s})
}

func (b *blocks) toolUse(c chatparse.ToolCall) {
	b.begin("", ContentBlock{Type: "tool_use", ID: dialect.NewID("toolu_"), Name: c.Name, Input: json.RawMessage("{}")})
	args := strings.TrimSpace(string(c.Arguments))
	if args == "" {
		args = "{}"
	}
	b.out.delta(b.n-1, Delta{Type: "input_json_delta", PartialJSON: &args})
	b.out.stop(b.n - 1)
	b.calls++
}

// begin closes the open block and starts the next; kind is what stays
// open ("" for a tool_use block, which the caller closes at once).
func (b *blocks) begin(kind string, cb ContentBlock) {
	b.end()
	b.held = ""
	b.open = kind
	b.out.start(b.n, cb)
	b.n++
}

// end closes the open block: a thinking block gets its signature first.
func (b *blocks) end() {
	switch b.open {
	case "":
		return
	case "thinking":
		sig := signature(b.thought.String())
		b.thought.Reset()
		b.out.delta(b.n-1, Delta{Type: "signature_delta", Signature: &sig})
	}
	b.out.stop(b.n - 1)
	b.open = ""
}

// signature is a thinking block's signature: the base64 SHA-256 of its
// thinking. Anthropic's signatures are opaque and let its API verify
// that thinking sent back was not altered; here thinking is plain model
// output, not secret, and a changed thought changes nothing this server
// relies on, so thinking blocks sent back are accepted unverified.
// Clients that require a non-empty signature get one, the same for the
// same thinking whether streamed or not.
func signature(thinking string) string {
	sum := sha256.Sum256([]byte(thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// collector builds a JSON answer's content from a builder's blocks.
type collector struct {
	content []ContentBlock
}

func (c *collector) start(_ int, b ContentBlock) { c.content = append(c.content, b) }

func (c *collector) delta(i int, d Delta) {
	b := &c.content[i]
	switch d.Type {
	case "text_delta":
		s := *b.Text + *d.Text
		b.Text = &s
	case "thinking_delta":
		s := *b.Thinking + *d.Thinking
		b.Thinking = &s
	case "signature_delta":
		b.Signature = d.Signature
	case "input_json_delta":
		if string(b.Input) == "{}" {
			b.Input = nil
		}
		b.Input = append(b.Input, *d.PartialJSON...)
	}
}

func (c *collector) stop(int) {}
