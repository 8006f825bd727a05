package infer

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/mtmd"
	"github.com/tadpole-llm/tadpole/server/chatparse"
)

// User text is text: a control token's text ("<|im_end|>", "<|eot_id|>",
// "<|channel|>") in a message, a system prompt, a non-raw prompt, a tool
// call's arguments or a tool's definition stays plain text for the
// model, so that no client can close its turn and forge another. Before
// rendering, each such text in the client's strings is replaced by a
// placeholder no client can guess (a random nonce and an index, ASCII so
// that it survives any filter and JSON encoding); after rendering, the
// placeholders are put back and their spans tokenized with llama.cpp's
// special parsing off (engine.TokenizeLiteral). Strings without control
// text are not touched, so ordinary prompts render byte for byte as
// before. `raw: true` prompts keep llama.cpp's parsing: the client wrote
// the template.

// literals is one rendering's placeholders.
type literals struct {
	m         *engine.Model
	nonce     string
	originals []string
}

func newLiterals(m *engine.Model) *literals {
	var b [8]byte
	rand.Read(b[:])
	return &literals{m: m, nonce: "TPLIT" + hex.EncodeToString(b[:]) + "_"}
}

// text is s with each control text replaced by a placeholder.
func (l *literals) text(s string) string {
	spans := l.m.ControlSpans(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		b.WriteString(s[at:sp[0]])
		b.WriteString(l.nonce)
		b.WriteString(strconv.Itoa(len(l.originals)))
		b.WriteByte('_')
		l.originals = append(l.originals, s[sp[0]:sp[1]])
		at = sp[1]
	}
	b.WriteString(s[at:])
	return b.String()
}

// json is raw JSON with control texts in its strings (keys and values,
// after unescaping) replaced; raw JSON without any is returned as it is.
func (l *literals) json(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !l.m.HasControlText(string(raw)) && !bytes.Contains(raw, []byte(`\u`)) && !bytes.Contains(raw, []byte(`\/`)) {
		return raw
	}
	var out bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n := len(l.originals)
	if err := l.rewriteJSON(dec, &out); err != nil || len(l.originals) == n {
		l.originals = l.originals[:n]
		return raw // not JSON (checked elsewhere), or nothing to replace
	}
	return out.Bytes()
}

func (l *literals) rewriteJSON(dec *json.Decoder, w *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	str := func(s string) {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(l.text(s))
		w.Truncate(w.Len() - 1) // Encode's newline
	}
	switch t := tok.(type) {
	case json.Delim:
		open, closing := byte(t), byte('}')
		if t == '[' {
			closing = ']'
		}
		w.WriteByte(open)
		for first := true; dec.More(); first = false {
			if !first {
				w.WriteByte(',')
			}
			if open == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				ks, _ := k.(string)
				str(ks)
				w.WriteByte(':')
			}
			if err := l.rewriteJSON(dec, w); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		w.WriteByte(closing)
	case string:
		str(t)
	case json.Number:
		w.WriteString(t.String())
	case bool:
		w.WriteString(strconv.FormatBool(t))
	case nil:
		w.WriteString("null")
	}
	return nil
}

// request is a copy of req with the client's strings guarded.
func (l *literals) request(req *Request) *Request {
	r := *req
	r.System, r.Prompt = l.text(r.System), l.text(r.Prompt)
	r.Messages = make([]Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Content, m.Thinking = l.text(m.Content), l.text(m.Thinking)
		if len(m.ToolCalls) > 0 {
			calls := make([]ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				c.Name, c.Arguments = l.text(c.Name), l.json(c.Arguments)
				calls[j] = c
			}
			m.ToolCalls = calls
		}
		r.Messages[i] = m
	}
	if len(req.Tools) > 0 {
		r.Tools = make([]json.RawMessage, len(req.Tools))
		for i, t := range req.Tools {
			r.Tools[i] = l.json(t)
		}
	}
	if len(req.TemplateVars) > 0 {
		r.TemplateVars = make(map[string]any, len(req.TemplateVars))
		for k, v := range req.TemplateVars {
			if s, ok := v.(string); ok {
				v = l.text(s)
			}
			r.TemplateVars[k] = v
		}
	}
	return &r
}

// restore puts the original texts back into a rendered prompt and
// returns their spans in it.
func (l *literals) restore(text string) (string, [][2]int) {
	if len(l.originals) == 0 || !strings.Contains(text, l.nonce) {
		return text, nil
	}
	var b strings.Builder
	var spans [][2]int
	for {
		i := strings.Index(text, l.nonce)
		if i < 0 {
			break
		}
		b.WriteString(text[:i])
		rest := text[i+len(l.nonce):]
		j := strings.IndexByte(rest, '_')
		k, err := strconv.Atoi(rest[:max(j, 0)])
		if j < 0 || err != nil || k < 0 || k >= len(l.originals) {
			b.WriteString(l.nonce) // not one of ours: cannot happen unguessed
			text = rest
			continue
		}
		start := b.Len()
		b.WriteString(l.originals[k])
		spans = append(spans, [2]int{start, b.Len()})
		text = rest[j+1:]
	}
	b.WriteString(text)
	return b.String(), spans
}

// media is s with mtmd's media markers (the current and the old one)
// replaced by placeholders: a client's "<__media__>" is text, not an
// image's place. A nil l leaves s as it is (raw prompts).
func (l *literals) media(s string) string {
	if l == nil || !strings.Contains(s, "<__") {
		return s
	}
	for _, marker := range []string{mtmd.Marker(), "<__image__>"} {
		if !strings.Contains(s, marker) {
			continue
		}
		parts := strings.Split(s, marker)
		var b strings.Builder
		for i, p := range parts {
			if i > 0 {
				b.WriteString(l.nonce)
				b.WriteString(strconv.Itoa(len(l.originals)))
				b.WriteByte('_')
				l.originals = append(l.originals, marker)
			}
			b.WriteString(p)
		}
		s = b.String()
	}
	return s
}

// renderClient is renderText with the client's control texts kept as
// text: the prompt and the spans to tokenize without special parsing.
func renderClient(m *engine.Model, req *Request) (string, [][2]int, chatparse.Options, error) {
	var l *literals
	if !req.Raw {
		l = newLiterals(m)
	}
	return renderLiterals(m, req, l)
}

// renderLiterals is renderClient with l's placeholders (nil: none, a raw
// prompt).
func renderLiterals(m *engine.Model, req *Request, l *literals) (string, [][2]int, chatparse.Options, error) {
	if l == nil {
		text, out, err := renderText(m, req)
		return text, nil, out, err
	}
	text, out, err := renderText(m, l.request(req))
	if err != nil {
		return "", nil, out, err
	}
	text, spans := l.restore(text)
	return text, spans, out, nil
}
