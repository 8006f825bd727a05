package chatparse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// LFM2's calls block, <|tool_call_start|>[name(key=value, …), …]
// <|tool_call_end|>: Python call syntax whose values are Python literals
// (strings, numbers, True/False/None, dicts and lists).
const (
	lfmCallsBegin = "<|tool_call_start|>"
	lfmCallsEnd   = "<|tool_call_end|>"
)

// pythonic reads a list of Python-style calls.
func (p *Parser) pythonic(body string) ([]ToolCall, error) {
	r := &pyReader{s: trimSpace(body)}
	if !r.eat('[') {
		return nil, fmt.Errorf("Python-style calls without '['")
	}
	var calls []ToolCall
	for {
		r.space()
		if r.eat(']') {
			break
		}
		if len(calls) > 0 && !r.eat(',') {
			return nil, fmt.Errorf("Python-style calls: ',' or ']' expected at %d", r.i)
		}
		r.space()
		name := r.ident()
		if name == "" || !r.eat('(') {
			return nil, fmt.Errorf("Python-style calls: a name and '(' expected at %d", r.i)
		}
		var b bytes.Buffer
		b.WriteByte('{')
		for n := 0; ; n++ {
			r.space()
			if r.eat(')') {
				break
			}
			if n > 0 {
				if !r.eat(',') {
					return nil, fmt.Errorf("call of %q: ',' or ')' expected at %d", name, r.i)
				}
				r.space()
			}
			key := r.ident()
			r.space()
			if key == "" || !r.eat('=') {
				return nil, fmt.Errorf("call of %q: key=value expected at %d", name, r.i)
			}
			if n > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonString(key))
			b.WriteByte(':')
			if err := r.value(&b, 0); err != nil {
				return nil, fmt.Errorf("call of %q: %v", name, err)
			}
		}
		b.WriteByte('}')
		c, err := p.call(name, b.Bytes())
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	if r.space(); r.i != len(r.s) {
		return nil, fmt.Errorf("text after Python-style calls")
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("no Python-style call")
	}
	return calls, nil
}

// pyReader reads Python literals, writing them as JSON.
type pyReader struct {
	s string
	i int
}

func (r *pyReader) space() {
	for r.i < len(r.s) && isSpace(r.s[r.i]) {
		r.i++
	}
}

func (r *pyReader) eat(c byte) bool {
	if r.i < len(r.s) && r.s[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *pyReader) ident() string {
	j := r.i
	for r.i < len(r.s) {
		c := r.s[r.i]
		if c == '_' || c == '.' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			r.i++
			continue
		}
		break
	}
	return r.s[j:r.i]
}

// value writes one literal as JSON (nesting bounded, as JSON's is).
func (r *pyReader) value(b *bytes.Buffer, depth int) error {
	if depth > 64 {
		return fmt.Errorf("values nested too deep")
	}
	r.space()
	if r.i >= len(r.s) {
		return fmt.Errorf("a value expected at the end")
	}
	switch c := r.s[r.i]; {
	case c == '"' || c == '\'':
		s, err := r.str(c)
		if err != nil {
			return err
		}
		b.Write(jsonString(s))
	case c == '[' || c == '(' || c == '{':
		closer := map[byte]byte{'[': ']', '(': ')', '{': '}'}[c]
		r.i++
		open, shut := byte('['), byte(']')
		if c == '{' {
			open, shut = '{', '}'
		}
		b.WriteByte(open)
		for n := 0; ; n++ {
			r.space()
			if r.eat(closer) {
				break
			}
			if n > 0 {
				if !r.eat(',') {
					return fmt.Errorf("',' expected at %d", r.i)
				}
				if r.space(); r.eat(closer) {
					break
				}
				b.WriteByte(',')
			}
			if c == '{' {
				r.space()
				if r.i >= len(r.s) || r.s[r.i] != '"' && r.s[r.i] != '\'' {
					return fmt.Errorf("a string key expected at %d", r.i)
				}
				k, err := r.str(r.s[r.i])
				if err != nil {
					return err
				}
				b.Write(jsonString(k))
				if r.space(); !r.eat(':') {
					return fmt.Errorf("':' expected at %d", r.i)
				}
				b.WriteByte(':')
			}
			if err := r.value(b, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(shut)
	case c == '-' || c == '+' || c >= '0' && c <= '9':
		j := r.i
		for r.i < len(r.s) && strings.IndexByte("0123456789+-.eE", r.s[r.i]) >= 0 {
			r.i++
		}
		num := strings.TrimPrefix(r.s[j:r.i], "+")
		if _, err := strconv.ParseFloat(num, 64); err != nil || !json.Valid([]byte(num)) {
			return fmt.Errorf("not a number: %q", r.s[j:r.i])
		}
		b.WriteString(num)
	default:
		switch word := r.ident(); word {
		case "True", "true":
			b.WriteString("true")
		case "False", "false":
			b.WriteString("false")
		case "None", "null":
			b.WriteString("null")
		default:
			return fmt.Errorf("not a value at %d: %q", r.i, word)
		}
	}
	return nil
}

// str reads a quoted Python string (the usual escapes).
func (r *pyReader) str(q byte) (string, error) {
	r.i++
	var out strings.Builder
	for r.i < len(r.s) {
		c := r.s[r.i]
		switch {
		case c == q:
			r.i++
			return out.String(), nil
		case c == '\\' && r.i+1 < len(r.s):
			e := r.s[r.i+1]
			r.i += 2
			switch e {
			case 'n':
				out.WriteByte('\n')
			case 't':
				out.WriteByte('\t')
			case 'r':
				out.WriteByte('\r')
			case 'u':
				if r.i+4 > len(r.s) {
					return "", fmt.Errorf("a short \\u escape")
				}
				n, err := strconv.ParseUint(r.s[r.i:r.i+4], 16, 32)
				if err != nil {
					return "", fmt.Errorf("a bad \\u escape")
				}
				out.WriteRune(rune(n))
				r.i += 4
			default: // \\ \" \' and anything else: the character
				out.WriteByte(e)
			}
		default:
			_, size := utf8.DecodeRuneInString(r.s[r.i:])
			out.WriteString(r.s[r.i : r.i+size])
			r.i += size
		}
	}
	return "", fmt.Errorf("a string without its closing quote")
}
