package chatparse

import (
	"fmt"
	"regexp"
	"strings"
)

// Muse Glimmer's ATEM messages: the output is a run of messages, each
// "<|start|>assistant to=RECIPIENT<|message|>BODY" ended by <|eom|> (more
// follow) or <|eot|> (the turn's end); the prompt ends with
// "<|start|>assistant", so the first starts at " to=":
//
//	 to=self<|message|>…thinking…<|eom|>
//	<|start|>assistant to=get_weather<|message|><atem:function_calls>
//	<atem:invoke name="get_weather">
//	<atem:parameter name="city">Paris</atem:parameter>
//	</atem:invoke>
//	</atem:function_calls><|eot|>
//
// A message to self is thinking, one to user (or to no one) content, one
// to any other recipient holds calls (<atem:invoke> elements, read as
// MiniMax M2's <invoke>). <|eom|> and <|eot|> are written out
// (Markup); a body also ends where the next message starts.
const (
	museStart    = "<|start|>"
	museMessage  = "<|message|>"
	museEOM      = "<|eom|>"
	museEOT      = "<|eot|>"
	museCalls    = "<atem:function_calls>"
	museCallsEnd = "</atem:function_calls>"
)

var museEnds = []string{museEOM, museEOT, museStart}

// museHead is a message's header before <|message|> (the whitespace is
// the parser's spaces).
var museHead = regexp.MustCompile(`^[ \t\r\n]*(?:<\|start\|>)?[ \t\r\n]*(?:assistant)?(?:[ \t\r\n]*to=([^ \t\r\n]*))?[ \t\r\n]*$`)

// museMaybeHead tells whether s may be the start of a header and its
// <|message|>: whether more text could make museHead match the text
// before a <|message|>. It follows museHead part by part.
func museMaybeHead(s string) bool {
	t := strings.TrimLeft(s, spaces)
	if strings.HasPrefix(museStart, t) {
		return true
	}
	t = strings.TrimLeft(strings.TrimPrefix(t, museStart), spaces)
	if strings.HasPrefix("assistant", t) {
		return true
	}
	t = strings.TrimLeft(strings.TrimPrefix(t, "assistant"), spaces)
	if strings.HasPrefix("to=", t) {
		return true
	}
	if name, ok := strings.CutPrefix(t, "to="); ok {
		i := strings.IndexAny(name, spaces)
		if i < 0 {
			return true // the name so far (it may end in "<|message|"'s start)
		}
		t = strings.TrimLeft(name[i:], spaces)
	}
	return strings.HasPrefix(museMessage, t)
}

// museMaxHead bounds the text held while waiting for a header's
// <|message|>.
const museMaxHead = 512

// museStep decides what it can of the buffer (all of it at the end).
func (p *Parser) museStep(end bool) Delta {
	var d Delta
	h := &p.harmony
	for {
		if !h.inBody {
			m := strings.Index(p.buf, museMessage)
			if m < 0 {
				if !end && len(p.buf) < museMaxHead && museMaybeHead(p.buf) {
					return d // a header may be coming
				}
				if p.buf == "" {
					return d
				}
				p.museNoHeader(&d)
				continue
			}
			// A header and its <|message|> fit in museMaxHead, as the
			// stream holds them.
			sub := museHead.FindStringSubmatch(p.buf[:m])
			if sub == nil || m+len(museMessage) > museMaxHead {
				p.museNoHeader(&d)
				continue
			}
			p.buf = p.buf[m+len(museMessage):]
			h.inBody, h.to = true, sub[1]
			h.body.Reset()
			continue
		}
		if !p.messageBody(&d, end, museEnds, []string{museStart}, p.museText, p.museClose) {
			return d
		}
	}
}

// museNoHeader starts a message the buffer has no header for: its text
// is content, to the next end. A <|start|> that opens no header is
// content too: the body must not end before it, or the parse would not
// move on.
func (p *Parser) museNoHeader(d *Delta) {
	h := &p.harmony
	h.inBody, h.to = true, "user"
	h.body.Reset()
	if strings.HasPrefix(p.buf, museStart) {
		p.content(d, museStart)
		p.buf = p.buf[len(museStart):]
	}
}

// museText takes body text: thinking and content stream, calls wait for
// the end of their message.
func (p *Parser) museText(d *Delta, s string) {
	switch to := p.harmony.to; to {
	case "self":
		d.Thinking += s
	case "", "user":
		p.content(d, s)
	default:
		p.harmony.body.WriteString(s)
	}
}

// museClose ends a message: one to a tool becomes its calls.
func (p *Parser) museClose(d *Delta) {
	h := &p.harmony
	h.inBody = false
	body := h.body.String()
	h.body.Reset()
	if h.to == "self" || h.to == "" || h.to == "user" {
		return
	}
	if len(p.tools) == 0 {
		p.malformed(d, body, fmt.Errorf("a Muse message to %q, and the request has no tools", h.to))
		return
	}
	inner := trimSpace(body)
	inner, ok := strings.CutPrefix(inner, museCalls)
	if ok {
		inner, ok = strings.CutSuffix(trimSpace(inner), museCallsEnd)
	}
	if !ok {
		p.malformed(d, body, fmt.Errorf("a Muse message to %q without an %s block", h.to, museCalls))
		return
	}
	calls, err := p.invokes(inner, "atem:")
	if err != nil {
		p.malformed(d, body, err)
		return
	}
	p.emitCalls(d, calls)
}

// museSelfFirst is Muse call grammar g with a message to self (its
// thinking) allowed before the call's message:
// " to=self<|message|>…<|eom|><|start|>assistant" (the text without "<|").
func museSelfFirst(g string) string {
	call, rules := splitRoot(g)
	self := fmt.Sprintf(`%q ([^<] | "<" [^|])* %q`, " to=self"+museMessage, museEOM+museStart+"assistant")
	return fmt.Sprintf("root ::= tadpole-self? (%s)\ntadpole-self ::= %s\n%s", call, self, rules)
}
