package chatparse

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Options say what to look for in the output.
type Options struct {
	// Format is the tool-call syntax (DetectFormat of the template).
	Format Format
	// Tools are the names of the request's functions; none: no tool
	// calls are parsed (the text passes through).
	Tools []string
	// Thinking parses thinking blocks; StartInThinking when the prompt
	// already opened one (the output starts inside it).
	Thinking        bool
	StartInThinking bool
	// DropThinking parses thinking blocks but returns no thinking (the
	// request switched thinking off).
	DropThinking bool
	// XMLCalls: the template teaches Hermes calls as key-value
	// parameters (XMLCalls): Qwen3-Coder's <function=…><parameter=…>, or
	// with ArgKeyCalls GLM's <arg_key>/<arg_value>. The parser takes all
	// of them; the call grammars write the template's.
	XMLCalls    bool
	ArgKeyCalls bool
	// DSMLToolCalls: a DeepSeek DSML template names its calls block
	// tool_calls (V4), not function_calls (V3.2) (DSMLToolCalls).
	DSMLToolCalls bool
	// Parameters are the tools' parameter schemas by function name: a
	// key-value argument whose property allows only strings is read as
	// a string whatever it looks like ("18", "true"), as llama-server
	// reads it; others are JSON where they are JSON. None: every value
	// that is JSON is JSON.
	Parameters map[string]json.RawMessage
	// FencedCalls: the template teaches DeepSeek R1's calls,
	// "function<｜tool▁sep｜>NAME" and the arguments in a ```json fence
	// (FencedCalls), not V3.1's "NAME<｜tool▁sep｜>{…}": the parser takes
	// both, a forced call's grammar writes the template's.
	FencedCalls bool
	// ArgsCalls: a Mistral template teaches the newer
	// "[TOOL_CALLS]NAME[ARGS]{…}" (ArgsCalls), not "[TOOL_CALLS][{…}]":
	// the parser takes both, a forced call's grammar writes the
	// template's.
	ArgsCalls bool
	// CallIDCalls: the Mistral template writes each call's id,
	// "[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{…}" (Mistral Small 3.2), which
	// a forced call's grammar writes too.
	CallIDCalls bool
	// ThinkingEnd is the close tag of the template's thinking blocks
	// (ThinkingEnd; "" when it names none of the known pairs).
	ThinkingEnd string
}

// Delta is what a piece of output decided: content, thinking and
// complete tool calls.
type Delta struct {
	Content, Thinking string
	ToolCalls         []ToolCall
}

// Append adds e's content, thinking and calls after d's.
func (d *Delta) Append(e Delta) {
	d.Content += e.Content
	d.Thinking += e.Thinking
	d.ToolCalls = append(d.ToolCalls, e.ToolCalls...)
}

type mode int

const (
	normal   mode = iota
	thinking      // inside a thinking block
	block         // inside a call block that has a close marker
	rest          // a call that runs to the end of the output
)

// Parser splits one output. The zero value is not usable: NewParser.
type Parser struct {
	o        Options
	tools    map[string]bool
	markers  []callMarker
	silent   []string // markup that is dropped from content (silentMarkup)
	buf      string
	mode     mode
	closes   []string   // thinking: the tags that end the block
	marker   callMarker // block, rest: the marker that opened it
	lead     string     // block, rest: the whitespace before the marker
	started  bool       // content or a call came out: no JSON answer now
	trimLeft bool       // drop whitespace before the next content
	// thinkStart: drop whitespace at the start of a thinking block
	thinkStart bool
	calls      int
	warnings   []string
	harmony    harmonyState // Format Harmony: its own state machine
	// strs caches stringProps by function name.
	strs map[string]map[string]bool
}

// NewParser starts parsing an output.
func NewParser(o Options) *Parser {
	p := &Parser{o: o, tools: map[string]bool{}}
	for _, t := range o.Tools {
		p.tools[t] = true
	}
	if len(p.tools) > 0 {
		p.markers = markers(o.Format)
	}
	p.silent = silentMarkup(o.Format)
	if o.Thinking && o.StartInThinking {
		p.mode, p.thinkStart = thinking, true
		for _, t := range thinkingTags {
			p.closes = append(p.closes, t[1])
		}
	}
	return p
}

// Add takes the next piece of output and returns what it decided.
func (p *Parser) Add(piece string) Delta {
	p.buf += piece
	return p.drop(p.step(false))
}

// Next is Add, followed by Finish when piece is the output's last.
func (p *Parser) Next(piece string, last bool) Delta {
	d := p.Add(piece)
	if last {
		d.Append(p.Finish())
	}
	return d
}

// Empty tells whether a delta decided nothing to send.
func (d Delta) Empty() bool {
	return d.Content == "" && d.Thinking == "" && len(d.ToolCalls) == 0
}

// drop removes thinking when the options ask for it.
func (p *Parser) drop(d Delta) Delta {
	if p.o.DropThinking {
		d.Thinking = ""
	}
	return d
}

// Finish ends the output: everything still held back is decided.
func (p *Parser) Finish() Delta {
	return p.drop(p.step(true))
}

// Warnings describe output that looked like tool calls and was returned
// as content.
func (p *Parser) Warnings() []string { return p.warnings }

// Parse splits a whole output.
func Parse(o Options, text string) (Delta, []string) {
	p := NewParser(o)
	return p.Next(text, true), p.Warnings()
}

// spaces is the whitespace the parser trims and holds back: JSON's. One
// definition, so that a piece cut anywhere (inside a multi-byte space
// such as U+00A0 too) decides as the whole does.
const spaces = " \t\r\n"

func isSpace(c byte) bool { return strings.IndexByte(spaces, c) >= 0 }

func isSpaceRune(r rune) bool { return r < 0x80 && isSpace(byte(r)) }

// trimSpace is strings.TrimSpace for spaces.
func trimSpace(s string) string { return strings.Trim(s, spaces) }

// held is how many bytes at the end of s may be the start of one of
// tags: the longest proper prefix of a tag that s ends with.
func held(s string, tags []string) int {
	n := 0
	for _, t := range tags {
		for k := min(len(t)-1, len(s)); k > n; k-- {
			if strings.HasSuffix(s, t[:k]) {
				n = k
				break
			}
		}
	}
	return n
}

// earliest finds the first of tags in s: its index and the tag.
func earliest(s string, tags []string) (int, string) {
	at, tag := -1, ""
	for _, t := range tags {
		if i := strings.Index(s, t); i >= 0 && (at < 0 || i < at) {
			at, tag = i, t
		}
	}
	return at, tag
}

// step decides as much of the buffer as it can (all of it at the end).
func (p *Parser) step(end bool) Delta {
	switch p.o.Format {
	case Harmony:
		return p.harmonyStep(end)
	case Muse:
		return p.museStep(end)
	}
	var d Delta
	for {
		switch p.mode {
		case thinking:
			if !p.thinking(&d, end) {
				return d
			}
		case block:
			if !p.block(&d, end) {
				return d
			}
		case rest:
			if !end {
				return d
			}
			p.rest(&d)
			return d
		default:
			if !p.normal(&d, end) {
				return d
			}
		}
	}
}

// content emits text as content.
func (p *Parser) content(d *Delta, s string) {
	if trimSpace(s) != "" {
		p.started = true
	}
	d.Content += s
}

// normal handles content: it looks for a thinking block, a call marker
// or (before any content) a JSON answer. It returns false when it must
// wait for more text.
func (p *Parser) normal(d *Delta, end bool) bool {
	if p.trimLeft {
		p.buf = strings.TrimLeft(p.buf, spaces)
		if p.buf == "" {
			return false
		}
		p.trimLeft = false
	}
	var tags []string
	if p.o.Thinking {
		for _, t := range thinkingTags {
			tags = append(tags, t[0])
		}
	}
	for _, m := range p.markers {
		tags = append(tags, m.open)
	}
	tags = append(tags, p.silent...)
	if !p.started && len(p.tools) > 0 && (jsonAnswers(p.o.Format) || p.o.Format == Functionary) {
		t := strings.TrimLeft(p.buf, spaces)
		if t == "" && !end {
			return false
		}
		for _, tag := range tags {
			if strings.HasPrefix(t, tag) {
				goto markers // thinking or a marked call, not a JSON answer
			}
			if !end && strings.HasPrefix(tag, t) {
				return false // may still become one
			}
		}
		if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			p.mode, p.marker, p.lead = rest, callMarker{}, ""
			return true
		}
		if p.o.Format == Functionary {
			return p.recipient(t, end)
		}
	}
markers:
	at, tag := earliest(p.buf, tags)
	if at < 0 {
		if end {
			p.content(d, p.buf)
			p.buf = ""
			return false
		}
		cut := len(p.buf) - held(p.buf, tags)
		for cut > 0 && isSpace(p.buf[cut-1]) {
			cut--
		}
		p.content(d, p.buf[:cut])
		p.buf = p.buf[cut:]
		return false
	}
	for _, s := range p.silent {
		if tag == s {
			p.content(d, p.buf[:at])
			p.buf = p.buf[at+len(tag):]
			return true
		}
	}
	before := strings.TrimRight(p.buf[:at], spaces)
	p.content(d, before)
	p.lead = p.buf[len(before):at]
	p.buf = p.buf[at:]
	for _, t := range thinkingTags {
		if tag == t[0] {
			p.buf = p.buf[len(tag):]
			p.mode, p.closes, p.thinkStart, p.lead = thinking, []string{t[1]}, true, ""
			return true
		}
	}
	for _, m := range p.markers {
		if tag == m.open {
			p.marker = m
			p.mode = rest
			if m.close != "" {
				p.mode = block
			}
		}
	}
	return true
}

// recipient reads the recipient that starts functionary v3.2's output
// (the prompt ends with ">>>"): "all" is text, which follows; a declared
// function's name starts a call block; anything else is text.
func (p *Parser) recipient(t string, end bool) bool {
	name, text, ok := strings.Cut(t, "\n")
	if !ok && !end {
		head := trimSpace(t)
		if strings.HasPrefix("all", head) {
			return false // may still be a recipient
		}
		for n := range p.tools {
			if strings.HasPrefix(n, head) {
				return false
			}
		}
	}
	switch name = trimSpace(name); {
	case name == "all":
		p.buf = text
	case p.tools[name]:
		p.mode, p.marker, p.lead = rest, callMarker{}, ""
		return true
	}
	p.started = true
	return true
}

// thinking emits thinking up to the block's close (whitespace next to
// the tags dropped).
func (p *Parser) thinking(d *Delta, end bool) bool {
	if p.thinkStart {
		p.buf = strings.TrimLeft(p.buf, spaces)
		if p.buf == "" && !end {
			return false
		}
		p.thinkStart = false
	}
	at, tag := earliest(p.buf, p.closes)
	if at >= 0 {
		d.Thinking += strings.TrimRight(p.buf[:at], spaces)
		p.buf = p.buf[at+len(tag):]
		p.mode, p.trimLeft = normal, true
		return true
	}
	if end {
		d.Thinking += strings.TrimRight(p.buf, spaces)
		p.buf = ""
		return false
	}
	cut := len(p.buf) - held(p.buf, p.closes)
	for cut > 0 && isSpace(p.buf[cut-1]) {
		cut--
	}
	d.Thinking += p.buf[:cut]
	p.buf = p.buf[cut:]
	return false
}

// block waits for the close of a call block, then parses it.
func (p *Parser) block(d *Delta, end bool) bool {
	m := p.marker
	body := p.buf[len(m.open):]
	at := strings.Index(body, m.close)
	if at < 0 && !end {
		return false
	}
	raw := p.buf
	if at >= 0 {
		raw = p.buf[:len(m.open)+at+len(m.close)]
		body = body[:at]
	}
	calls, err := p.parseBlock(m, body)
	switch {
	case err == nil:
		p.emitCalls(d, calls)
	case at < 0:
		p.malformed(d, raw, fmt.Errorf("unterminated %s: %v", m.open, err))
	default:
		p.malformed(d, raw, err)
	}
	p.buf = p.buf[len(raw):]
	p.mode, p.trimLeft = normal, err == nil
	return true
}

// rest parses an open-ended call at the end of the output.
func (p *Parser) rest(d *Delta) {
	calls, text, err := p.parseRest(p.marker, p.buf)
	if err != nil {
		p.malformed(d, p.buf, err)
	} else {
		p.content(d, text)
		p.emitCalls(d, calls)
	}
	p.buf = ""
	p.mode = normal
}

func (p *Parser) emitCalls(d *Delta, calls []ToolCall) {
	p.lead = ""
	for _, c := range calls {
		if c.ID == "" {
			c.ID = NewID("call_")
		}
		c.Index = p.calls
		p.calls++
		d.ToolCalls = append(d.ToolCalls, c)
	}
	p.started = true
}

// malformed returns markup that is not a valid call as content, with
// the whitespace before it.
func (p *Parser) malformed(d *Delta, raw string, err error) {
	p.warnings = append(p.warnings, fmt.Sprintf("tool call returned as text: %v", err))
	p.content(d, p.lead+raw)
	p.lead = ""
}
