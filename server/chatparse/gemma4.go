package chatparse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Gemma 4's call markup: <|tool_call>call:NAME{key:value,…}<tool_call|>,
// the arguments in the template's own object syntax (format_argument):
// bare keys, strings between <|"|> quotes, numbers, true, false, null,
// nested {…} and […].
const (
	gemma4CallBegin = "<|tool_call>"
	gemma4CallEnd   = "<tool_call|>"
	gemma4Quote     = `<|"|>`
	// Gemma 4's thinking: <|channel>thought\n…<channel|>.
	gemma4Channel    = "<|channel>"
	gemma4ChannelEnd = "<channel|>"
)

// gemma4 reads the inside of <|tool_call>…<tool_call|>: "call:NAME{…}".
func (p *Parser) gemma4(body string) ([]ToolCall, error) {
	rest, ok := strings.CutPrefix(trimSpace(body), "call:")
	if !ok {
		return nil, fmt.Errorf("%s without call:", gemma4CallBegin)
	}
	at := strings.IndexByte(rest, '{')
	if at < 0 {
		return nil, fmt.Errorf("%s call without arguments", gemma4CallBegin)
	}
	name := trimSpace(rest[:at])
	var b bytes.Buffer
	after, err := gemma4Value(&b, rest[at:])
	if err != nil {
		return nil, fmt.Errorf("call of %q: %v", name, err)
	}
	if trimSpace(after) != "" {
		return nil, fmt.Errorf("call of %q: %q after the arguments", name, after)
	}
	c, err := p.call(name, json.RawMessage(b.Bytes()))
	if err != nil {
		return nil, err
	}
	return []ToolCall{c}, nil
}

// gemma4Value writes the value at the start of s as JSON and returns the
// text after it.
func gemma4Value(b *bytes.Buffer, s string) (string, error) {
	s = strings.TrimLeft(s, spaces)
	switch {
	case strings.HasPrefix(s, gemma4Quote):
		str, after, ok := strings.Cut(s[len(gemma4Quote):], gemma4Quote)
		if !ok {
			return "", fmt.Errorf("an unterminated string")
		}
		q, _ := json.Marshal(str)
		b.Write(q)
		return after, nil
	case strings.HasPrefix(s, "{"):
		b.WriteByte('{')
		s = strings.TrimLeft(s[1:], spaces)
		if rest, ok := strings.CutPrefix(s, "}"); ok {
			b.WriteByte('}')
			return rest, nil
		}
		for first := true; ; first = false {
			if !first {
				b.WriteByte(',')
			}
			colon := strings.IndexAny(s, ":}")
			if colon < 0 || s[colon] != ':' {
				return "", fmt.Errorf("an object member without a key")
			}
			key := trimSpace(s[:colon])
			if k, ok := strings.CutPrefix(key, gemma4Quote); ok {
				key = strings.TrimSuffix(k, gemma4Quote)
			}
			if key == "" {
				return "", fmt.Errorf("an empty key")
			}
			q, _ := json.Marshal(key)
			b.Write(q)
			b.WriteByte(':')
			var err error
			if s, err = gemma4Value(b, s[colon+1:]); err != nil {
				return "", err
			}
			s = strings.TrimLeft(s, spaces)
			switch {
			case strings.HasPrefix(s, ","):
				s = strings.TrimLeft(s[1:], spaces)
			case strings.HasPrefix(s, "}"):
				b.WriteByte('}')
				return s[1:], nil
			default:
				return "", fmt.Errorf("an unterminated object")
			}
		}
	case strings.HasPrefix(s, "["):
		b.WriteByte('[')
		s = strings.TrimLeft(s[1:], spaces)
		if rest, ok := strings.CutPrefix(s, "]"); ok {
			b.WriteByte(']')
			return rest, nil
		}
		for first := true; ; first = false {
			if !first {
				b.WriteByte(',')
			}
			var err error
			if s, err = gemma4Value(b, s); err != nil {
				return "", err
			}
			s = strings.TrimLeft(s, spaces)
			switch {
			case strings.HasPrefix(s, ","):
				s = s[1:]
			case strings.HasPrefix(s, "]"):
				b.WriteByte(']')
				return s[1:], nil
			default:
				return "", fmt.Errorf("an unterminated list")
			}
		}
	}
	// A number, true, false or null: JSON's own.
	end := strings.IndexAny(s, ",}] \t\r\n")
	if end < 0 {
		end = len(s)
	}
	lit := s[:end]
	var v any
	if lit == "" || json.Unmarshal([]byte(lit), &v) != nil {
		return "", fmt.Errorf("a value that is not a string, number, true, false, null, object or list: %q", lit)
	}
	if _, isStr := v.(string); isStr {
		return "", fmt.Errorf("a string outside %s quotes", gemma4Quote)
	}
	if _, isMap := v.(map[string]any); isMap {
		return "", fmt.Errorf("unexpected JSON object")
	}
	b.WriteString(lit)
	return s[end:], nil
}
