package chatparse

import (
	"fmt"
	"slices"
	"strings"
)

// OpenAI's harmony format (gpt-oss): the output is a run of messages,
// each a header and a body,
//
//	<|channel|>analysis<|message|>…thinking…<|end|>
//	<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
//	<|start|>assistant<|channel|>final<|message|>…the answer…<|return|>
//
// (the prompt ends with "<|start|>assistant", so the first message's
// header starts at "<|channel|>"). The analysis channel is thinking,
// final is content, a message to a recipient ("to=functions.NAME", in
// the header after the channel or after the role) is a call of NAME with
// the body as its JSON arguments, and a commentary message without a
// recipient (a preamble the model shows the user) is content.
// <|start|>, <|channel|>, <|constrain|> and <|message|> are user-defined
// tokens, which the output's text keeps; <|end|>, <|call|> and <|return|>
// are control tokens, which it leaves out, so a body ends where the next
// header starts or the output ends.
const (
	harmonyStart     = "<|start|>"
	harmonyChannel   = "<|channel|>"
	harmonyMessage   = "<|message|>"
	harmonyConstrain = "<|constrain|>"
	harmonyEnd       = "<|end|>"
	harmonyCall      = "<|call|>"
	harmonyReturn    = "<|return|>"
)

// harmonyHeads are the markers that open a header; harmonyEnds those
// that end a body when the text keeps them (special tokens written out).
var (
	harmonyHeads = []string{harmonyStart, harmonyChannel}
	harmonyEnds  = []string{harmonyStart, harmonyChannel, harmonyEnd, harmonyCall, harmonyReturn}
)

// harmonyState is where a harmony parse stands.
type harmonyState struct {
	inBody  bool
	channel string // the body's channel
	to      string // the body's recipient ("" none)
	body    strings.Builder
}

// harmonyStep decides what it can of the buffer (all of it at the end).
func (p *Parser) harmonyStep(end bool) Delta {
	var d Delta
	h := &p.harmony
	for {
		if !h.inBody {
			if !p.harmonyHeader(&d, end) {
				return d
			}
			continue
		}
		if !p.messageBody(&d, end, harmonyEnds, harmonyHeads, p.harmonyText, p.harmonyClose) {
			return d
		}
	}
}

// messageBody reads a message's body in the formats of messages
// (harmony, Muse) up to the first of ends: its text goes to text, and
// the end closes the message (close); an end among heads opens the next
// message and stays in the buffer, any other is dropped. It reports
// whether the buffer may hold more to decide now.
func (p *Parser) messageBody(d *Delta, end bool, ends, heads []string, text func(*Delta, string), close func(*Delta)) bool {
	at, tag := earliest(p.buf, ends)
	if at < 0 {
		cut := len(p.buf)
		if !end {
			cut -= held(p.buf, ends)
		}
		text(d, p.buf[:cut])
		p.buf = p.buf[cut:]
		if end {
			close(d)
		}
		return false
	}
	text(d, p.buf[:at])
	p.buf = p.buf[at:]
	if !slices.Contains(heads, tag) {
		p.buf = p.buf[len(tag):]
	}
	close(d)
	return true
}

// harmonyHeader reads a header up to its <|message|>. Text before any
// header (a model that answers without one) is content.
func (p *Parser) harmonyHeader(d *Delta, end bool) bool {
	h := &p.harmony
	at, _ := earliest(p.buf, harmonyHeads)
	if at != 0 {
		text := p.buf
		if at > 0 {
			text = p.buf[:at]
		} else if !end {
			text = p.buf[:len(p.buf)-held(p.buf, harmonyHeads)]
		}
		p.content(d, text)
		p.buf = p.buf[len(text):]
		return at > 0
	}
	m := strings.Index(p.buf, harmonyMessage)
	if m < 0 {
		if end {
			// A header the output never finished: nothing to say.
			if trimSpace(p.buf) != "" {
				p.warnings = append(p.warnings, fmt.Sprintf("harmony header without a message dropped: %q", p.buf))
			}
			p.buf = ""
		}
		return false
	}
	head := p.buf[:m]
	p.buf = p.buf[m+len(harmonyMessage):]
	h.inBody, h.channel, h.to = true, "", ""
	h.body.Reset()
	// "<|start|>assistant to=functions.x<|channel|>commentary json" or
	// "<|channel|>commentary to=functions.x <|constrain|>json".
	head = strings.ReplaceAll(strings.ReplaceAll(head, harmonyStart, " "), harmonyConstrain, " ")
	role, channel, _ := strings.Cut(head, harmonyChannel)
	fields := strings.FieldsFunc(channel, isSpaceRune)
	if len(fields) > 0 {
		h.channel = fields[0]
	}
	for _, f := range append(strings.FieldsFunc(role, isSpaceRune), fields...) {
		if to, ok := strings.CutPrefix(f, "to="); ok {
			h.to = to
		}
	}
	return true
}

// harmonyText takes body text: thinking and content stream, a call's
// arguments wait for the end of its body.
func (p *Parser) harmonyText(d *Delta, s string) {
	h := &p.harmony
	switch {
	case h.to != "" || h.channel == "commentary":
		h.body.WriteString(s) // a call, or a preamble that may be a JSON call
	case h.channel == "analysis":
		d.Thinking += s
	default: // final, and channels this parser does not know
		p.content(d, s)
	}
}

// harmonyClose ends a body: a recipient's message becomes its call.
func (p *Parser) harmonyClose(d *Delta) {
	h := &p.harmony
	h.inBody = false
	body := h.body.String()
	h.body.Reset()
	if h.to == "" {
		if h.channel == "commentary" {
			// A preamble: content, or a bare call object (what a forced
			// call's grammar writes when the tool is not named).
			if len(p.tools) > 0 && strings.HasPrefix(trimSpace(body), "{") {
				if calls, _, err := p.callsFromJSON(trimSpace(body), true, false); err == nil {
					p.emitCalls(d, calls)
					return
				}
			}
			p.content(d, body)
		}
		return
	}
	name := strings.TrimPrefix(h.to, "functions.")
	if len(p.tools) == 0 || !p.tools[name] {
		p.malformed(d, body, fmt.Errorf("a harmony message to %q, which is not among the request's tools", h.to))
		return
	}
	c, err := p.call(name, []byte(trimSpace(body)))
	if err != nil {
		p.malformed(d, body, err)
		return
	}
	p.emitCalls(d, []ToolCall{c})
}
