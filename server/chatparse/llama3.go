package chatparse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// builtinCall matches the head of a Llama 3.1 built-in tool's call,
// "brave_search.call(".
var (
	builtinCall = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*call\s*\(`)
	identifier  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)
)

// pythonTag reads what follows Llama 3's <|python_tag|>: JSON calls, a
// built-in tool's call (brave_search.call(query="…"), keyword arguments
// with Python or JSON literals), or, when the request declares a
// "python" or "code_interpreter" function, code for it ({"code": …}).
func (p *Parser) pythonTag(part string) ([]ToolCall, string, error) {
	if part[0] == '{' || part[0] == '[' {
		return p.callsFromJSON(part, false, true)
	}
	if m := builtinCall.FindStringSubmatch(part); m != nil && p.tools[m[1]] {
		args, rest, err := pythonKeywords(part[len(m[0]):])
		if err != nil {
			return nil, "", fmt.Errorf("call of %q: %v", m[1], err)
		}
		c, err := p.call(m[1], args)
		if err != nil {
			return nil, "", err
		}
		return []ToolCall{c}, trimSpace(rest), nil
	}
	for _, name := range []string{"python", "code_interpreter"} {
		if p.tools[name] {
			args := append(append([]byte(`{"code":`), jsonString(part)...), '}')
			return []ToolCall{{Name: name, Arguments: args}}, "", nil
		}
	}
	return nil, "", fmt.Errorf("<|python_tag|> without a call")
}

// pythonKeywords reads "key=value, …)" as a JSON object, and returns the
// text after the ")".
func pythonKeywords(s string) (json.RawMessage, string, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for n := 0; ; n++ {
		s = strings.TrimLeft(s, spaces)
		if n > 0 {
			if r, ok := strings.CutPrefix(s, ","); ok {
				s = strings.TrimLeft(r, spaces)
			} else if !strings.HasPrefix(s, ")") {
				return nil, "", fmt.Errorf("expected ',' or ')' in the arguments")
			}
		}
		if r, ok := strings.CutPrefix(s, ")"); ok {
			b.WriteByte('}')
			return b.Bytes(), r, nil
		}
		key := identifier.FindString(s)
		if key == "" {
			return nil, "", fmt.Errorf("expected a keyword argument")
		}
		s = strings.TrimLeft(s[len(key):], spaces)
		r, ok := strings.CutPrefix(s, "=")
		if !ok {
			return nil, "", fmt.Errorf("expected '=' after %q", key)
		}
		v, r, err := pythonValue(strings.TrimLeft(r, spaces))
		if err != nil {
			return nil, "", err
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(key))
		b.WriteByte(':')
		b.Write(v)
		s = r
	}
}

// pythonValue reads a literal at the start of s: a single-quoted string,
// True, False, None, or a JSON value (double-quoted strings, numbers,
// lists, objects).
func pythonValue(s string) (json.RawMessage, string, error) {
	for word, v := range map[string]string{"True": "true", "False": "false", "None": "null"} {
		if r, ok := strings.CutPrefix(s, word); ok && identifier.FindString(r) == "" {
			return json.RawMessage(v), r, nil
		}
	}
	if !strings.HasPrefix(s, "'") {
		v, r, err := splitJSON(s)
		return v, r, err
	}
	var out strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			return jsonString(out.String()), s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				break
			}
			i++
			switch e := s[i]; e {
			case 'n':
				out.WriteByte('\n')
			case 't':
				out.WriteByte('\t')
			case '\\', '\'', '"':
				out.WriteByte(e)
			default:
				out.WriteByte('\\')
				out.WriteByte(e)
			}
		default:
			out.WriteByte(c)
		}
	}
	return nil, "", fmt.Errorf("unterminated string")
}
