package chatparse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// MiniMax M3's calls: every tag is preceded by its namespace token,
//
//	]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="NAME">
//	]<]minimax[>[<KEY>VALUE]<]minimax[>[</KEY>…]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>
//
// an argument's value its text, or elements of its own: an object's
// members by name, a list's as <item> (the template's to_xml). Text is
// JSON where it is JSON (numbers, true, false), else a string: the
// template writes strings bare; a top-level argument whose property
// allows only strings is a string whatever it looks like.
const (
	m3NS        = "]<]minimax[>["
	m3CallBegin = m3NS + "<tool_call>"
	m3CallEnd   = m3NS + "</tool_call>"
	// M3 reasons in <mm:think>…</mm:think>; a turn without reasoning
	// starts with a bare </mm:think>.
	m3ThinkEnd = "</mm:think>"
)

// miniMaxM3 reads the inside of a tool_call block: its invokes.
func (p *Parser) miniMaxM3(body string) ([]ToolCall, error) {
	var calls []ToolCall
	rest := trimSpace(body)
	for rest != "" {
		head, ok := strings.CutPrefix(rest, m3NS+`<invoke name="`)
		if !ok {
			return nil, fmt.Errorf("MiniMax M3 tool_call: %.40q is not an invoke", rest)
		}
		name, after, ok := strings.Cut(head, `">`)
		if !ok {
			return nil, fmt.Errorf("a MiniMax M3 invoke tag without its closing \">")
		}
		var b bytes.Buffer
		after, err := m3Members(&b, after, "invoke", false, p.stringProps(name))
		if err != nil {
			return nil, fmt.Errorf("call of %q: %v", name, err)
		}
		c, err := p.call(name, b.Bytes())
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
		rest = trimSpace(after)
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("an empty MiniMax M3 tool_call block")
	}
	return calls, nil
}

// m3Members writes the elements of s up to the close of element parent
// as a JSON object (a list when items), and returns the text after the
// close; the text of a member of str is a string.
func m3Members(b *bytes.Buffer, s, parent string, items bool, str map[string]bool) (string, error) {
	closing := m3NS + "</" + parent + ">"
	open, end := byte('{'), byte('}')
	if items {
		open, end = '[', ']'
	}
	b.WriteByte(open)
	for n := 0; ; n++ {
		s = strings.TrimLeft(s, spaces)
		if rest, ok := strings.CutPrefix(s, closing); ok {
			b.WriteByte(end)
			return rest, nil
		}
		tag, ok := strings.CutPrefix(s, m3NS+"<")
		if !ok || strings.HasPrefix(tag, "/") {
			return "", fmt.Errorf("%.40q is neither an element nor the close of %s", s, parent)
		}
		name, after, ok := strings.Cut(tag, ">")
		if !ok || name == "" {
			return "", fmt.Errorf("an element tag without its >")
		}
		if items && name != "item" {
			return "", fmt.Errorf("a list element %q that is not an item", name)
		}
		if n > 0 {
			b.WriteByte(',')
		}
		if !items {
			b.Write(jsonString(name))
			b.WriteByte(':')
		}
		var err error
		if s, err = m3Value(b, after, name, !items && str[name]); err != nil {
			return "", err
		}
	}
}

// m3Value writes the value of element name, whose text starts s (a
// string when str), and returns the text after its close.
func m3Value(b *bytes.Buffer, s, name string, str bool) (string, error) {
	closing := m3NS + "</" + name + ">"
	if t := strings.TrimLeft(s, spaces); strings.HasPrefix(t, m3NS+"<") && !strings.HasPrefix(t, closing) {
		// Elements: an object's members, or a list's items.
		items := strings.HasPrefix(t, m3NS+"<item>")
		return m3Members(b, t, name, items, nil)
	}
	text, rest, ok := strings.Cut(s, closing)
	if !ok {
		return "", fmt.Errorf("element %q without its close", name)
	}
	if v := trimSpace(text); !str && v != "" && v[0] != '"' && json.Valid([]byte(v)) {
		b.WriteString(v)
	} else {
		b.Write(jsonString(text))
	}
	return rest, nil
}

// MiniMax M3's call grammars: a call is
// ]<]minimax[>[<invoke name="NAME"> then each argument as an element,
// ]<]minimax[>[<KEY>VALUE]<]minimax[>[</KEY>, then ]<]minimax[>[</invoke>
// (m3Syntax, over keyedCalls). A string-only property is its text (one
// of its values where it lists an enum or const); a number, integer,
// boolean or null property JSON held to its schema; an object or a list
// nested elements (the template's to_xml: members by name, items as
// <item>), held to element syntax only, or JSON held to its schema,
// which the parser reads too; anything else either. Text is any text
// without "]<" (so a value cannot end in "]"), the start of the
// namespace token every tag begins with.
const m3Rules = `tadpole-m3-text ::= ([^\]] | "]" [^<])*
tadpole-m3-elements ::= tadpole-m3-element+
tadpole-m3-element ::= "]<]minimax[>[<" tadpole-m3-tag ">" (tadpole-m3-elements | tadpole-m3-text) "]<]minimax[>[</" tadpole-m3-tag ">"
tadpole-m3-tag ::= [a-zA-Z_] [a-zA-Z0-9_.-]{0,63}
tadpole-m3-any ::= tadpole-m3-elements | tadpole-m3-text
`

var m3Syntax = keyedSyntax{
	rule:  "tadpole-m3",
	open:  func(name string) string { return m3NS + `<invoke name="` + name + `">` },
	close: m3NS + "</invoke>",
	field: func(k, v string) string {
		return grammar.Literal(m3NS+"<"+k+">") + " " + v + " " + grammar.Literal(m3NS+"</"+k+">")
	},
	value: func(p keyedProperty, raw json.RawMessage, rule string) (string, []string, error) {
		t, vals := p.typ(), p.values()
		if alts := p.stringAlts(""); alts != "" {
			return alts, nil, nil
		}
		switch {
		case t == "string" && len(vals) == 0:
			return "tadpole-m3-text", nil, nil
		case t == "" && len(vals) == 0:
			return "tadpole-m3-any", nil, nil
		}
		g, err := grammar.FromSchema(raw)
		if err != nil {
			return "", nil, err
		}
		v := rule + "root"
		if t == "object" || t == "array" {
			v = "(tadpole-m3-elements | " + v + ")"
		}
		return v, renameRules(g, rule), nil
	},
	member: func(string) (string, []string, error) { return "tadpole-m3-element", nil, nil },
}

// m3Grammar is Grammar for MiniMax M3: one call in its tool_call block.
func m3Grammar(o Options, tools []Tool, only string) (string, error) {
	rules, err := keyedCalls(m3Syntax, tools, only)
	if err != nil {
		return "", err
	}
	return withThinking(o, fmt.Sprintf("root ::= %s tadpole-m3-call %s\n%s%s", grammar.Literal(m3CallBegin+"\n"), grammar.Literal("\n"+m3CallEnd), rules, m3Rules)), nil
}
