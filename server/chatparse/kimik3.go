package chatparse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// Kimi K3's tagged sections (its template's open_tag/close_tag macros):
// open_tag(t, attrs) is <|open|>t k="v"…<|sep|>, close_tag(t) is
// <|close|>t<|sep|>. An answer is [think] response [tools], then the
// message's close:
//
//	<|open|>think<|sep|>…<|close|>think<|sep|><|open|>response<|sep|>…<|close|>response<|sep|>
//	<|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|>
//	<|open|>argument key="KEY" type="string"<|sep|>VALUE<|close|>argument<|sep|>…
//	<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>
//
// (a call's arguments may instead be one <|open|>json type="object"<|sep|>{…}<|close|>json<|sep|>).
const (
	k3Open  = "<|open|>"
	k3Close = "<|close|>"
	k3Sep   = "<|sep|>"
)

func k3OpenTag(tag string) string  { return k3Open + tag + k3Sep }
func k3CloseTag(tag string) string { return k3Close + tag + k3Sep }

// k3Silent is the markup of Kimi K3's answer that holds no text of its
// own: the response section's tags and the message's close (and its
// open, which the prompt writes but a continuation may repeat).
var k3Silent = []string{k3OpenTag("response"), k3CloseTag("response"), k3CloseTag("message"), k3Open + `message role="assistant"` + k3Sep}

// kimiK3 reads the inside of Kimi K3's tools section: its calls.
func (p *Parser) kimiK3(body string) ([]ToolCall, error) {
	var calls []ToolCall
	rest := trimSpace(body)
	for rest != "" {
		head, ok := strings.CutPrefix(rest, k3Open+"call")
		if !ok {
			return nil, fmt.Errorf("Kimi K3 tools section: %.40q is not a call", rest)
		}
		attrs, after, ok := strings.Cut(head, k3Sep)
		if !ok {
			return nil, fmt.Errorf("a Kimi K3 call tag without %s", k3Sep)
		}
		name, ok := k3Attr(attrs, "tool")
		if !ok {
			return nil, fmt.Errorf("a Kimi K3 call names no tool")
		}
		inner, after, ok := strings.Cut(after, k3CloseTag("call"))
		if !ok {
			return nil, fmt.Errorf("a Kimi K3 call of %q without its close", name)
		}
		args, err := k3Arguments(trimSpace(inner))
		if err != nil {
			return nil, fmt.Errorf("call of %q: %v", name, err)
		}
		c, err := p.call(name, args)
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
		rest = trimSpace(after)
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("an empty Kimi K3 tools section")
	}
	return calls, nil
}

// k3Arguments reads a call's arguments: argument elements (a value whose
// type is "string" as it is, any other as JSON) or one json element.
func k3Arguments(s string) (json.RawMessage, error) {
	if head, ok := strings.CutPrefix(s, k3Open+"json"); ok {
		_, after, ok := strings.Cut(head, k3Sep)
		if !ok {
			return nil, fmt.Errorf("a json tag without %s", k3Sep)
		}
		obj, rest, ok := strings.Cut(after, k3CloseTag("json"))
		if !ok || trimSpace(rest) != "" {
			return nil, fmt.Errorf("a json element without its close")
		}
		return json.RawMessage(obj), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for n := 0; s != ""; n++ {
		head, ok := strings.CutPrefix(s, k3Open+"argument")
		if !ok {
			return nil, fmt.Errorf("%.40q is not an argument", s)
		}
		attrs, after, ok := strings.Cut(head, k3Sep)
		if !ok {
			return nil, fmt.Errorf("an argument tag without %s", k3Sep)
		}
		key, ok := k3Attr(attrs, "key")
		if !ok {
			return nil, fmt.Errorf("an argument without a key")
		}
		value, after, ok := strings.Cut(after, k3CloseTag("argument"))
		if !ok {
			return nil, fmt.Errorf("argument %q without its close", key)
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(key))
		b.WriteByte(':')
		if typ, _ := k3Attr(attrs, "type"); typ != "string" && json.Valid([]byte(trimSpace(value))) {
			b.WriteString(trimSpace(value))
		} else {
			b.Write(jsonString(value))
		}
		s = trimSpace(after)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// k3Attr finds attribute name="value" in a tag's attributes, unescaping
// the template's &quot; and &amp;.
func k3Attr(attrs, name string) (string, bool) {
	_, v, ok := strings.Cut(" "+attrs, " "+name+`="`)
	if !ok {
		return "", false
	}
	v, _, ok = strings.Cut(v, `"`)
	if !ok {
		return "", false
	}
	return strings.NewReplacer("&quot;", `"`, "&amp;", "&").Replace(v), true
}

// k3Grammar is Grammar for Kimi K3: the end of the thinking block the
// prompt opened (and the response's open) where it thinks, the close of
// the response the prompt opened (a forced call has no text before
// it), then one call in the tools section, and the message's close,
// which the model writes before its end token.
func k3Grammar(o Options, tools []Tool, only string) (string, error) {
	m, _ := keyValue(o)
	g, err := kvCalls(m, tools, only, k3OpenTag("tools"), k3CloseTag("tools"))
	if err != nil {
		return "", err
	}
	body, rules := splitRoot(g)
	pre := grammar.Literal(k3CloseTag("response"))
	if o.Thinking && o.StartInThinking {
		pre = thinkingRule(true, k3CloseTag("think")) + " " + grammar.Literal(k3OpenTag("response")) + " " + pre
	}
	return fmt.Sprintf("root ::= %s (%s) %s?\n%s", pre, body, grammar.Literal(k3CloseTag("message")), rules), nil
}
