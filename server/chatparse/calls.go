package chatparse

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// ToolCall is one parsed call. Arguments is a compact JSON object in the
// model's member order; Index counts the output's calls from 0.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
	Index     int
}

// callObject is the JSON of one call in the formats that write objects.
type callObject struct {
	Name       string          `json:"name"`
	ToolName   string          `json:"tool_name"` // Command-R
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"` // Llama 3, Command-R
	ID         string          `json:"id"`         // Mistral
	Function   *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"` // OpenAI's shape
	ToolCalls json.RawMessage `json:"tool_calls"` // {"tool_calls": [...]}
}

// callsFromJSON reads one or more JSON values (call objects, arrays of
// them, {"tool_calls": [...]}), separated by whitespace, ";" or ",". With
// needArgs, an object must name its arguments to count as a call (a bare
// JSON answer that only has a "name" is content). Text after the calls
// that does not start another JSON value is returned, as content, when
// trailing allows it; otherwise it is an error.
func (p *Parser) callsFromJSON(text string, needArgs, trailing bool) ([]ToolCall, string, error) {
	var calls []ToolCall
	rest := text
	for {
		rest = strings.TrimLeft(rest, " \t\r\n;,")
		if rest == "" || trailing && len(calls) > 0 && rest[0] != '{' && rest[0] != '[' {
			break
		}
		v, after, err := splitJSON(rest)
		if err != nil {
			return nil, "", err
		}
		rest = after
		cs, err := p.callsFromValue(v, needArgs, 0)
		if err != nil {
			return nil, "", err
		}
		calls = append(calls, cs...)
	}
	if len(calls) == 0 {
		return nil, "", fmt.Errorf("no call")
	}
	return calls, rest, nil
}

// splitJSON reads the JSON value at the start of s: the value and the
// text after it.
func splitJSON(s string) (json.RawMessage, string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return nil, "", fmt.Errorf("invalid JSON: %v", err)
	}
	return v, s[dec.InputOffset():], nil
}

func (p *Parser) callsFromValue(v json.RawMessage, needArgs bool, depth int) ([]ToolCall, error) {
	v = bytes.Trim(v, spaces)
	if depth > 2 || len(v) == 0 {
		return nil, fmt.Errorf("not a call")
	}
	if v[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
		var calls []ToolCall
		for _, it := range items {
			cs, err := p.callsFromValue(it, needArgs, depth+1)
			if err != nil {
				return nil, err
			}
			calls = append(calls, cs...)
		}
		if len(calls) == 0 {
			return nil, fmt.Errorf("an empty list of calls")
		}
		return calls, nil
	}
	if v[0] != '{' {
		return nil, fmt.Errorf("not a call object")
	}
	var o callObject
	if err := json.Unmarshal(v, &o); err != nil {
		return nil, err
	}
	if len(o.ToolCalls) > 0 && o.Name == "" && o.Function == nil {
		return p.callsFromValue(o.ToolCalls, needArgs, depth+1)
	}
	name, args := o.Name, o.Arguments
	if name == "" {
		name = o.ToolName
	}
	if args == nil {
		args = o.Parameters
	}
	if o.Function != nil {
		name, args = o.Function.Name, o.Function.Arguments
	}
	if needArgs && args == nil {
		return nil, fmt.Errorf("a call object names no arguments")
	}
	c, err := p.call(name, args)
	if err != nil {
		return nil, err
	}
	c.ID = o.ID
	return []ToolCall{c}, nil
}

// call checks a call's function name and arguments.
func (p *Parser) call(name string, args json.RawMessage) (ToolCall, error) {
	name = trimSpace(name)
	if name == "" {
		return ToolCall{}, fmt.Errorf("a call names no function")
	}
	if !p.tools[name] {
		return ToolCall{}, fmt.Errorf("a call of %q, which is not among the request's tools", name)
	}
	a, err := ObjectArguments(args)
	if err != nil {
		return ToolCall{}, fmt.Errorf("call of %q: %v", name, err)
	}
	return ToolCall{Name: name, Arguments: a}, nil
}

// ObjectArguments compacts call arguments that are a JSON object, or a
// JSON string holding one (as OpenAI writes them); absent arguments are
// {}. Anything else is an error.
func ObjectArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.Trim(raw, spaces)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		raw = bytes.Trim([]byte(s), spaces)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("arguments are not a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	return b.Bytes(), nil
}

// parseBlock parses the text between a block marker and its close.
func (p *Parser) parseBlock(m callMarker, body string) ([]ToolCall, error) {
	switch m.open {
	case deepSeekCallsBegin:
		return p.deepSeek(body)
	case "<function=":
		return p.functionTag(body)
	case kimiSectionBegin:
		return p.kimi(body)
	case miniMaxCallBegin:
		return p.miniMax(body)
	case apertusCallsBegin:
		return p.apertus(body)
	case dsmlCallsBegin, dsmlToolCallsBegin:
		return p.invokes(body, dsml)
	case gemma4CallBegin:
		return p.gemma4(body)
	case miniCPMCallBegin:
		return p.miniCPM5(body)
	case m3CallBegin:
		return p.miniMaxM3(body)
	case hy3CallsBegin:
		return p.hy3(body)
	case solarCallsBegin:
		return p.solar(body)
	case k3OpenTag("tools"):
		return p.kimiK3(body)
	case lfmCallsBegin:
		return p.pythonic(body)
	}
	body = unfence(body)
	if inner, ok := strings.CutPrefix(body, "<function="); ok {
		// Qwen3-Coder: <tool_call><function=name><parameter=…>…</function></tool_call>.
		inner, ok = strings.CutSuffix(inner, "</function>")
		if !ok {
			return nil, fmt.Errorf("<function=…> without </function>")
		}
		return p.functionTag(inner)
	}
	if body != "" && body[0] != '{' && body[0] != '[' {
		return p.glm(body)
	}
	calls, _, err := p.callsFromJSON(body, false, false)
	return calls, err
}

// unfence removes a Markdown code fence (```json … ```) around s, and
// the whitespace around it.
func unfence(s string) string {
	s = trimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	_, body, ok := strings.Cut(s, "\n")
	if !ok {
		return s
	}
	if b, ok := strings.CutSuffix(trimSpace(body), "```"); ok {
		return trimSpace(b)
	}
	return s
}

// functionTag reads "name>arguments", the inside of <function=…>: a
// JSON object or <parameter=key>value</parameter> elements.
func (p *Parser) functionTag(body string) ([]ToolCall, error) {
	name, args, ok := strings.Cut(body, ">")
	if !ok {
		return nil, fmt.Errorf("<function=…> without '>'")
	}
	raw := json.RawMessage(args)
	if a := trimSpace(args); strings.HasPrefix(a, "<parameter=") {
		var err error
		if raw, err = xmlParameters(a, p.stringProps(name)); err != nil {
			return nil, fmt.Errorf("call of %q: %v", trimSpace(name), err)
		}
	}
	c, err := p.call(name, raw)
	if err != nil {
		return nil, err
	}
	return []ToolCall{c}, nil
}

// xmlParameters turns <parameter=key>value</parameter> elements into a
// JSON object, in order (argValue: a key of str is a string). The
// newline after the opening tag and the one before the closing tag are
// not part of the value.
func xmlParameters(s string, str map[string]bool) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for n := 0; ; n++ {
		s = trimSpace(s)
		if s == "" {
			break
		}
		rest, ok := strings.CutPrefix(s, "<parameter=")
		if !ok {
			return nil, fmt.Errorf("text between parameters")
		}
		key, rest, ok := strings.Cut(rest, ">")
		if !ok {
			return nil, fmt.Errorf("<parameter=…> without '>'")
		}
		value, rest, ok := strings.Cut(rest, "</parameter>")
		if !ok {
			return nil, fmt.Errorf("parameter %q without </parameter>", key)
		}
		value = strings.TrimPrefix(value, "\n")
		value = strings.TrimSuffix(value, "\n")
		if n > 0 {
			b.WriteByte(',')
		}
		key = trimSpace(key)
		b.Write(jsonString(key))
		b.WriteByte(':')
		argValue(&b, value, str[key])
		s = rest
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonString is s as a JSON string (HTML characters unescaped).
func jsonString(s string) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// deepSeek reads DeepSeek's calls: each between <｜tool▁call▁begin｜> and
// <｜tool▁call▁end｜>, "function<｜tool▁sep｜>name\n```json\n{…}\n```"
// (R1) or "name<｜tool▁sep｜>{…}" (V3.1).
func (p *Parser) deepSeek(body string) ([]ToolCall, error) {
	return p.sectionCalls(body, deepSeekCallBegin, deepSeekCallEnd, deepSeekSep, "DeepSeek", func(name, args string) ([]ToolCall, error) {
		if name == "function" {
			name, args, _ = strings.Cut(args, "\n")
			args = unfence(args)
		}
		c, err := p.call(name, json.RawMessage(args))
		return []ToolCall{c}, err
	})
}

// parseRest parses the output from an open-ended marker to the end
// (open is "" for an answer that starts with JSON, or for functionary's
// blocks). It returns the calls and the text that follows them, which is
// content. Several markers may follow each other ("[TOOL_CALLS]…
// [TOOL_CALLS]…").
func (p *Parser) parseRest(m callMarker, text string) ([]ToolCall, string, error) {
	if p.o.Format == Functionary {
		return p.functionary(text)
	}
	if m.open == "Action:" {
		body := trimSpace(strings.TrimPrefix(text, m.open))
		var after string
		if b, ok := strings.CutPrefix(body, "```json"); ok {
			body, after, ok = strings.Cut(b, "```")
			if !ok {
				return nil, "", fmt.Errorf("Action: ```json without its closing ```")
			}
		}
		calls, content, err := p.callsFromJSON(body, false, true)
		return calls, trimSpace(content + trimSpace(after)), err
	}
	open := m.open
	if ms := markers(p.o.Format); open == "" && len(ms) == 1 && ms[0].close == "" && ms[0].open != "Action:" {
		open = ms[0].open // JSON, then marked calls
	}
	parts := []string{text}
	if open != "" {
		parts = strings.Split(text, open)
	}
	var calls []ToolCall
	var content []string
	for i, part := range parts {
		if trimSpace(part) == "" {
			continue
		}
		cs, c, err := p.restPart(open, part, i == 0 && m.open == "")
		if err != nil {
			return nil, "", err
		}
		calls = append(calls, cs...)
		if c != "" {
			content = append(content, c)
		}
	}
	if len(calls) == 0 {
		return nil, "", fmt.Errorf("%s without a call", open)
	}
	return calls, strings.Join(content, "\n"), nil
}

// restPart reads the calls after one open-ended marker (or, with
// answer, the JSON an answer starts with).
func (p *Parser) restPart(open, part string, answer bool) ([]ToolCall, string, error) {
	part = trimSpace(part)
	if !answer {
		switch open {
		case "[TOOL_CALLS]":
			return p.mistral(part)
		case "<|python_tag|>":
			return p.pythonTag(part)
		case fireFunctionCalls:
			return p.callsFromJSON("["+part, false, true)
		}
	}
	return p.callsFromJSON(part, answer, true)
}

// mistral reads what follows one [TOOL_CALLS]: a "[{…}]" array or a
// "name[ARGS]{…}" (or "name[CALL_ID]id[ARGS]{…}") call.
func (p *Parser) mistral(part string) ([]ToolCall, string, error) {
	if part[0] == '[' || part[0] == '{' {
		return p.callsFromJSON(part, false, true)
	}
	head, args, ok := strings.Cut(part, "[ARGS]")
	if !ok {
		return nil, "", fmt.Errorf("[TOOL_CALLS] without a call")
	}
	name, id, _ := strings.Cut(head, "[CALL_ID]")
	v, after, err := splitJSON(trimSpace(args))
	if err != nil {
		return nil, "", fmt.Errorf("call of %q: %v", trimSpace(name), err)
	}
	c, err := p.call(name, v)
	if err != nil {
		return nil, "", err
	}
	c.ID = trimSpace(id)
	return []ToolCall{c}, trimSpace(after), nil
}

// functionary reads functionary v3.2 output: ">>>recipient\nbody"
// blocks (the first ">>>" may be in the prompt), "all" for text.
func (p *Parser) functionary(text string) ([]ToolCall, string, error) {
	text = strings.TrimLeft(text, spaces)
	if strings.HasPrefix(text, "{") || strings.HasPrefix(text, "[") {
		return p.callsFromJSON(text, true, true)
	}
	var calls []ToolCall
	var content strings.Builder
	for i, block := range strings.Split(strings.TrimPrefix(text, ">>>"), ">>>") {
		name, body, _ := strings.Cut(block, "\n")
		name = trimSpace(name)
		if i == 0 && name != "all" && !p.tools[name] && !strings.HasPrefix(text, ">>>") {
			return nil, text, nil // plain text, no blocks
		}
		if name == "all" {
			content.WriteString(body)
			continue
		}
		c, err := p.call(name, json.RawMessage(body))
		if err != nil {
			return nil, "", err
		}
		calls = append(calls, c)
	}
	return calls, content.String(), nil
}

// NewID is prefix and 24 random letters and digits, the shape of
// OpenAI's and Anthropic's ids ("call_…", "chatcmpl-…", "resp_…",
// "toolu_…"): the parser names calls with it, and the dialects their
// answers (dialect.NewID).
func NewID(prefix string) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return prefix + string(b)
}

// glm reads GLM 4.5-4.7's call, the inside of <tool_call>…</tool_call>:
// "name\n<arg_key>key</arg_key>\n<arg_value>value</arg_value>…", each
// value as argValue reads it.
func (p *Parser) glm(body string) ([]ToolCall, error) {
	return p.argTags(body, glmTags)
}

// argTags are the tags of a call's key/value arguments.
type argTags struct{ key, keyEnd, value, valueEnd string }

var (
	glmTags = argTags{"<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"}
	hy3Tags = argTags{"<arg_key" + hy3Suffix, "</arg_key" + hy3Suffix, "<arg_value" + hy3Suffix, "</arg_value" + hy3Suffix}
)

// argTags reads "NAME" followed by key/value argument pairs in tags t.
func (p *Parser) argTags(body string, t argTags) ([]ToolCall, error) {
	name, rest, _ := strings.Cut(body, t.key)
	if name = trimSpace(name); name == "" || strings.ContainsAny(name, " \t\n<>{}\"") {
		return nil, fmt.Errorf("not a call: %.40q", body)
	}
	str := p.stringProps(name)
	var b bytes.Buffer
	b.WriteByte('{')
	for n := 0; rest != ""; n++ {
		key, after, ok := strings.Cut(rest, t.keyEnd)
		if !ok {
			return nil, fmt.Errorf("call of %q: %s without %s", name, t.key, t.keyEnd)
		}
		after, ok = strings.CutPrefix(strings.TrimLeft(after, spaces), t.value)
		if !ok {
			return nil, fmt.Errorf("call of %q: argument %q without %s", name, key, t.value)
		}
		value, after, ok := strings.Cut(after, t.valueEnd)
		if !ok {
			return nil, fmt.Errorf("call of %q: argument %q without %s", name, key, t.valueEnd)
		}
		if n > 0 {
			b.WriteByte(',')
		}
		key = trimSpace(key)
		b.Write(jsonString(key))
		b.WriteByte(':')
		argValue(&b, value, str[key])
		rest = trimSpace(after)
		if rest != "" {
			if rest, ok = strings.CutPrefix(rest, t.key); !ok {
				return nil, fmt.Errorf("call of %q: text between arguments", name)
			}
		}
	}
	b.WriteByte('}')
	c, err := p.call(name, b.Bytes())
	if err != nil {
		return nil, err
	}
	return []ToolCall{c}, nil
}

// hy3 reads Hunyuan 3's calls, the inside of its tool-calls block: each
// "<tool_call:opensource>NAME<tool_sep:opensource>" and its arguments in
// <arg_key:opensource>/<arg_value:opensource> pairs, up to
// "</tool_call:opensource>".
func (p *Parser) hy3(body string) ([]ToolCall, error) {
	return p.sectionCalls(body, hy3CallBegin, hy3CallEnd, hy3Sep, "Hy3", func(name, args string) ([]ToolCall, error) {
		return p.argTags(trimSpace(name)+" "+trimSpace(args), hy3Tags)
	})
}

// kimi reads Kimi K2's calls, the inside of its tool-calls section: each
// "<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}
// <|tool_call_end|>".
func (p *Parser) kimi(body string) ([]ToolCall, error) {
	return p.sectionCalls(body, kimiCallBegin, kimiCallEnd, kimiArgsBegin, "Kimi", func(id, args string) ([]ToolCall, error) {
		name := strings.TrimPrefix(trimSpace(id), "functions.")
		if i := strings.LastIndexByte(name, ':'); i >= 0 {
			name = name[:i]
		}
		c, err := p.call(name, json.RawMessage(args))
		return []ToolCall{c}, err
	})
}

// miniMax reads MiniMax M2's calls, the inside of <minimax:tool_call>:
// each <invoke name="NAME"> with <parameter name="KEY">VALUE</parameter>
// elements (a value that is JSON is taken as such, any other is a
// string), then </invoke>.
func (p *Parser) miniMax(body string) ([]ToolCall, error) {
	return p.invokes(body, "")
}

// invokes reads <invoke name="NAME"> elements whose tags start with
// prefix (DeepSeek V3.2's "｜DSML｜"), each holding <parameter name="KEY">
// elements; a parameter's string="true" or "false" attribute (V3.2) says
// whether its value is a string or JSON.
func (p *Parser) invokes(body, prefix string) ([]ToolCall, error) {
	var calls []ToolCall
	for rest := trimSpace(body); rest != ""; rest = trimSpace(rest) {
		r, ok := strings.CutPrefix(rest, `<`+prefix+`invoke name="`)
		if !ok {
			return nil, fmt.Errorf("text between MiniMax calls")
		}
		name, r, ok := strings.Cut(r, `">`)
		if !ok {
			return nil, fmt.Errorf("a MiniMax <invoke> without its name's end")
		}
		inner, after, ok := strings.Cut(r, "</"+prefix+"invoke>")
		if !ok {
			return nil, fmt.Errorf("call of %q without </invoke>", name)
		}
		str := p.stringProps(name)
		var b bytes.Buffer
		b.WriteByte('{')
		for n := 0; ; n++ {
			inner = trimSpace(inner)
			if inner == "" {
				break
			}
			q, ok := strings.CutPrefix(inner, `<`+prefix+`parameter name="`)
			if !ok {
				return nil, fmt.Errorf("call of %q: text between parameters", name)
			}
			key, q, ok := strings.Cut(q, `"`)
			if !ok {
				return nil, fmt.Errorf("call of %q: a parameter without its name's end", name)
			}
			attr, q, ok := strings.Cut(q, ">")
			if !ok {
				return nil, fmt.Errorf("call of %q: a parameter tag without its end", name)
			}
			attr = trimSpace(attr)
			value, q, ok := strings.Cut(q, "</"+prefix+"parameter>")
			if !ok {
				return nil, fmt.Errorf("call of %q: parameter %q without </parameter>", name, key)
			}
			if n > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonString(key))
			b.WriteByte(':')
			switch v := trimSpace(value); {
			case attr == `string="true"`:
				b.Write(jsonString(value))
			case attr == `string="false"` && !json.Valid([]byte(v)):
				return nil, fmt.Errorf("call of %q: parameter %q is not JSON", name, key)
			case attr != "" && attr != `string="false"`:
				return nil, fmt.Errorf("call of %q: parameter %q has attributes %s", name, key, attr)
			case attr != "":
				b.WriteString(v)
			default:
				argValue(&b, value, str[key])
			}
			inner = q
		}
		b.WriteByte('}')
		c, err := p.call(name, b.Bytes())
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
		rest = after
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("no call in the MiniMax block")
	}
	return calls, nil
}

// apertus reads Apertus's calls: a JSON array of objects, each with one
// member, the function's name, whose value is the arguments.
func (p *Parser) apertus(body string) ([]ToolCall, error) {
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(trimSpace(body)), &items); err != nil {
		return nil, fmt.Errorf("Apertus calls are not a JSON array: %v", err)
	}
	var calls []ToolCall
	for _, it := range items {
		var one map[string]json.RawMessage
		if err := json.Unmarshal(it, &one); err != nil || len(one) != 1 {
			return nil, fmt.Errorf("an Apertus call is not an object with one member")
		}
		for name, args := range one {
			c, err := p.call(name, args)
			if err != nil {
				return nil, err
			}
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("no call in the Apertus block")
	}
	return calls, nil
}

// sectionCalls reads the calls of a tool-call section whose calls each
// stand between begin and end (callParts), their head (the name, with
// whatever the family writes around it) and arguments split at sep:
// read turns each into calls. A call without sep, or a section without
// a call, is an error naming the family.
func (p *Parser) sectionCalls(body, begin, end, sep, family string, read func(head, args string) ([]ToolCall, error)) ([]ToolCall, error) {
	parts, err := callParts(body, begin, end, family)
	if err != nil {
		return nil, err
	}
	var calls []ToolCall
	for _, part := range parts {
		head, args, ok := strings.Cut(part, sep)
		if !ok {
			return nil, fmt.Errorf("a %s call without %s", family, sep)
		}
		cs, err := read(head, args)
		if err != nil {
			return nil, err
		}
		calls = append(calls, cs...)
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("no call in the %s tool-calls section", family)
	}
	return calls, nil
}

// callParts splits a tool-call section into its calls, each between
// begin and end (surrounding whitespace dropped): a call without its end
// is an error naming the family.
func callParts(body, begin, end, family string) ([]string, error) {
	var parts []string
	for _, part := range strings.Split(body, begin) {
		part = trimSpace(part)
		if part == "" {
			continue
		}
		part, ok := strings.CutSuffix(part, end)
		if !ok {
			return nil, fmt.Errorf("a %s call without its end", family)
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// argValue writes a key-value argument's text as JSON, as llama-server
// types it: a property whose schema allows only strings (str) is the
// text as it is ("18" stays "18"); any other is JSON where the text is
// JSON (a number, true, an object, …), else the text as a string.
func argValue(b *bytes.Buffer, value string, str bool) {
	if v := trimSpace(value); !str && v != "" && json.Valid([]byte(v)) {
		b.WriteString(v)
	} else {
		b.Write(jsonString(value))
	}
}

// stringProps are the properties of function name's parameters
// (Options.Parameters) that allow only strings.
func (p *Parser) stringProps(name string) map[string]bool {
	name = trimSpace(name)
	if s, ok := p.strs[name]; ok {
		return s
	}
	var s map[string]bool
	if params, ok := p.o.Parameters[name]; ok {
		s = grammar.StringProperties(params)
	}
	if p.strs == nil {
		p.strs = map[string]map[string]bool{}
	}
	p.strs[name] = s
	return s
}
