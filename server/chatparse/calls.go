package chatparse

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
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
// JSON answer that only has a "name" is content).
func (p *Parser) callsFromJSON(text string, needArgs bool) ([]ToolCall, error) {
	var calls []ToolCall
	rest := text
	for {
		rest = strings.TrimLeft(rest, " \t\r\n;,")
		if rest == "" {
			break
		}
		dec := json.NewDecoder(strings.NewReader(rest))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		rest = rest[dec.InputOffset():]
		cs, err := p.callsFromValue(v, needArgs, 0)
		if err != nil {
			return nil, err
		}
		calls = append(calls, cs...)
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("no call")
	}
	return calls, nil
}

func (p *Parser) callsFromValue(v json.RawMessage, needArgs bool, depth int) ([]ToolCall, error) {
	v = bytes.TrimSpace(v)
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
	name = strings.TrimSpace(name)
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
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		raw = bytes.TrimSpace([]byte(s))
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
		name, args, ok := strings.Cut(body, ">")
		if !ok {
			return nil, fmt.Errorf("<function=…> without '>'")
		}
		c, err := p.call(name, json.RawMessage(args))
		if err != nil {
			return nil, err
		}
		return []ToolCall{c}, nil
	}
	return p.callsFromJSON(body, false)
}

// deepSeek reads DeepSeek's calls: each between <｜tool▁call▁begin｜> and
// <｜tool▁call▁end｜>, "function<｜tool▁sep｜>name\n```json\n{…}\n```"
// (R1) or "name<｜tool▁sep｜>{…}" (V3.1).
func (p *Parser) deepSeek(body string) ([]ToolCall, error) {
	var calls []ToolCall
	for _, part := range strings.Split(body, deepSeekCallBegin) {
		part = strings.TrimSpace(strings.TrimSpace(part))
		if part == "" {
			continue
		}
		part, ok := strings.CutSuffix(part, deepSeekCallEnd)
		if !ok {
			return nil, fmt.Errorf("a DeepSeek call without its end")
		}
		name, args, ok := strings.Cut(part, deepSeekSep)
		if !ok {
			return nil, fmt.Errorf("a DeepSeek call without a separator")
		}
		if name == "function" {
			name, args, _ = strings.Cut(args, "\n")
			args = strings.TrimSpace(args)
			args = strings.TrimPrefix(args, "```json")
			args = strings.TrimSuffix(strings.TrimSpace(args), "```")
		}
		c, err := p.call(name, json.RawMessage(args))
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("no call between the DeepSeek markers")
	}
	return calls, nil
}

// parseRest parses the output from an open-ended marker to the end
// (open is "" for an answer that is all JSON or all functionary blocks).
// It returns the calls and any text the format marks as content.
func (p *Parser) parseRest(m callMarker, text string) ([]ToolCall, string, error) {
	switch {
	case p.o.Format == Functionary && m.open != "[TOOL_CALLS]":
		return p.functionary(text)
	case m.open == "":
		calls, err := p.callsFromJSON(text, true)
		return calls, "", err
	case m.open == "[TOOL_CALLS]":
		calls, err := p.mistral(strings.TrimPrefix(text, m.open))
		return calls, "", err
	case m.open == "Action:":
		body := strings.TrimSpace(strings.TrimPrefix(text, m.open))
		body, fenced := strings.CutPrefix(body, "```json")
		if fenced {
			body = strings.TrimSuffix(strings.TrimSpace(body), "```")
		}
		calls, err := p.callsFromJSON(body, false)
		return calls, "", err
	}
	calls, err := p.callsFromJSON(strings.TrimPrefix(text, m.open), false)
	return calls, "", err
}

// mistral reads "[{…}]" arrays and "name[ARGS]{…}" (or
// "name[CALL_ID]id[ARGS]{…}") calls, each after its [TOOL_CALLS].
func (p *Parser) mistral(text string) ([]ToolCall, error) {
	var calls []ToolCall
	for _, part := range strings.Split(text, "[TOOL_CALLS]") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if part[0] == '[' || part[0] == '{' {
			cs, err := p.callsFromJSON(part, false)
			if err != nil {
				return nil, err
			}
			calls = append(calls, cs...)
			continue
		}
		head, args, ok := strings.Cut(part, "[ARGS]")
		if !ok {
			return nil, fmt.Errorf("[TOOL_CALLS] without a call")
		}
		name, id, _ := strings.Cut(head, "[CALL_ID]")
		c, err := p.call(name, json.RawMessage(args))
		if err != nil {
			return nil, err
		}
		c.ID = strings.TrimSpace(id)
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("[TOOL_CALLS] without a call")
	}
	return calls, nil
}

// functionary reads functionary v3.2 output: ">>>recipient\nbody"
// blocks (the first ">>>" may be in the prompt), "all" for text.
func (p *Parser) functionary(text string) ([]ToolCall, string, error) {
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		calls, err := p.callsFromJSON(t, true)
		return calls, "", err
	}
	var calls []ToolCall
	var content strings.Builder
	for i, block := range strings.Split(strings.TrimPrefix(text, ">>>"), ">>>") {
		name, body, _ := strings.Cut(block, "\n")
		name = strings.TrimSpace(name)
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
	if len(calls) == 0 {
		return nil, content.String(), nil
	}
	return calls, content.String(), nil
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newCallID is an OpenAI-style call id: "call_" and 24 random
// alphanumerics.
func newCallID() string {
	b := make([]byte, 24)
	rand.Read(b)
	for i := range b {
		b[i] = idChars[int(b[i])%len(idChars)]
	}
	return "call_" + string(b)
}
