package chatparse

import (
	"bytes"
	"fmt"
	"strings"
)

// MiniCPM5's call markup: <function name="NAME"><param name="KEY">VALUE
// </param>…</function>, a string value with markup or a newline in
// <![CDATA[…]]>, other values as JSON.
const (
	miniCPMCallBegin = `<function name="`
	miniCPMCallEnd   = "</function>"
	miniCPMParam     = `<param name="`
	miniCPMParamEnd  = "</param>"
	cdataBegin       = "<![CDATA["
	cdataEnd         = "]]>"
)

// miniCPM5 reads the inside of a call: `NAME">` and its params.
func (p *Parser) miniCPM5(body string) ([]ToolCall, error) {
	name, rest, ok := strings.Cut(body, `">`)
	if !ok {
		return nil, fmt.Errorf("%s without its closing \">", miniCPMCallBegin)
	}
	str := p.stringProps(name)
	var b bytes.Buffer
	b.WriteByte('{')
	rest = trimSpace(rest)
	for n := 0; rest != ""; n++ {
		after, ok := strings.CutPrefix(rest, miniCPMParam)
		if !ok {
			return nil, fmt.Errorf("call of %q: %.40q is not a param", name, rest)
		}
		key, after, ok := strings.Cut(after, `">`)
		if !ok {
			return nil, fmt.Errorf("call of %q: a param tag without its closing \">", name)
		}
		var value string
		cdata := strings.HasPrefix(after, cdataBegin)
		if cdata {
			value, after, ok = strings.Cut(after[len(cdataBegin):], cdataEnd)
			if !ok {
				return nil, fmt.Errorf("call of %q: param %q: %s without %s", name, key, cdataBegin, cdataEnd)
			}
			if after, ok = strings.CutPrefix(after, miniCPMParamEnd); !ok {
				return nil, fmt.Errorf("call of %q: param %q without %s", name, key, miniCPMParamEnd)
			}
		} else if value, after, ok = strings.Cut(after, miniCPMParamEnd); !ok {
			return nil, fmt.Errorf("call of %q: param %q without %s", name, key, miniCPMParamEnd)
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(key))
		b.WriteByte(':')
		argValue(&b, value, cdata || str[key])
		rest = trimSpace(after)
	}
	b.WriteByte('}')
	c, err := p.call(name, b.Bytes())
	if err != nil {
		return nil, err
	}
	return []ToolCall{c}, nil
}
