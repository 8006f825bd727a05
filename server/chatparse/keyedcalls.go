package chatparse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// Gemma 4's call grammars: <|tool_call>call:NAME{key:value,…}<tool_call|>
// in the template's own value syntax (gemma4.go), not JSON. The grammar
// holds the call to one of the tools by name, its keys to the
// function's properties (any key where it lists none), a string-only
// property to a <|"|>-quoted string (one of its values where it lists an
// enum or const), a number, integer or boolean property to that type, and
// any other value to Gemma 4's value syntax. llama-server's grammar for
// Gemma 4 holds the name only (the arguments to the value syntax, keys
// free); number ranges, nested schemas and required keys are not held
// here either (the converter writes JSON, and Gemma 4 does not).

// gemma4Rules are the value syntax's rules; tadpole-g4-chars is any text
// without <|"|> (a matcher of the quote: each rule is how much of it was
// just read; the text may end in any of them, since the quote's first
// character comes once in it).
const gemma4Rules = `tadpole-g4-string ::= "<|\"|>" tadpole-g4-chars "<|\"|>"
tadpole-g4-chars ::= | [^<] tadpole-g4-chars | "<" tadpole-g4-c1
tadpole-g4-c1 ::= | [^<|] tadpole-g4-chars | "<" tadpole-g4-c1 | "|" tadpole-g4-c2
tadpole-g4-c2 ::= | [^<\"] tadpole-g4-chars | "<" tadpole-g4-c1 | "\"" tadpole-g4-c3
tadpole-g4-c3 ::= | [^<|] tadpole-g4-chars | "<" tadpole-g4-c1 | "|" tadpole-g4-c4
tadpole-g4-c4 ::= | [^<>] tadpole-g4-chars | "<" tadpole-g4-c1
tadpole-g4-value ::= tadpole-g4-string | tadpole-g4-dict | tadpole-g4-array | tadpole-g4-number | tadpole-g4-bool | "null"
tadpole-g4-dict ::= "{" (tadpole-g4-member ("," tadpole-g4-member)*)? "}"
tadpole-g4-member ::= tadpole-g4-key ":" tadpole-g4-value
tadpole-g4-key ::= [^:{}<,\[\]" \n]{1,64}
tadpole-g4-array ::= "[" (tadpole-g4-value ("," tadpole-g4-value)*)? "]"
tadpole-g4-number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
tadpole-g4-integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
tadpole-g4-bool ::= "true" | "false"
`

// keyedProperty is what a grammar of keyed calls (Gemma 4, LFM2,
// MiniMax M3: keyedSyntax) knows of a property's schema.
type keyedProperty struct {
	Type  json.RawMessage   `json:"type"`
	Enum  []json.RawMessage `json:"enum"`
	Const json.RawMessage   `json:"const"`
	Ref   string            `json:"$ref"`
}

// values are the property's enum values, or its const alone.
func (p keyedProperty) values() []json.RawMessage {
	if len(p.Const) > 0 {
		return []json.RawMessage{p.Const}
	}
	return p.Enum
}

// typ is the type the property names, "" where it names none or several.
func (p keyedProperty) typ() string {
	var t string
	json.Unmarshal(p.Type, &t)
	return t
}

// stringAlts is GBNF for one of the property's values (values), each
// between quote and quote, where all of them are strings; "" otherwise.
func (p keyedProperty) stringAlts(quote string) string {
	vals := p.values()
	alts := make([]string, 0, len(vals))
	for _, v := range vals {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return ""
		}
		alts = append(alts, grammar.Literal(quote+s+quote))
	}
	if len(alts) == 0 {
		return ""
	}
	return "(" + strings.Join(alts, " | ") + ")"
}

// gemma4Value is the GBNF of the property's value in Gemma 4's syntax
// (raw, its schema), and the rules it needs, named after rule: a
// string-only property is a quoted
// string (one of its enum or const values where it lists them); one
// whose values are all scalars that Gemma 4 writes as JSON does (numbers,
// booleans, null) is held to its schema by the JSON converter; any other
// is Gemma 4's value syntax.
func (p keyedProperty) gemma4Value(raw json.RawMessage, rule string) (string, []string, error) {
	vals, t := p.values(), p.typ()
	if len(vals) > 0 {
		if alts := p.stringAlts(gemma4Quote); alts != "" {
			return alts, nil, nil
		}
		scalar := true
		for _, v := range vals {
			v = bytes.Trim(v, spaces)
			scalar = scalar && len(v) > 0 && v[0] != '"' && v[0] != '{' && v[0] != '['
		}
		if !scalar {
			return "tadpole-g4-value", nil, nil
		}
	} else {
		switch t {
		case "string":
			return "tadpole-g4-string", nil, nil
		case "number", "integer", "boolean", "null":
		default:
			return "tadpole-g4-value", nil, nil
		}
	}
	g, err := grammar.FromSchema(raw)
	if err != nil {
		return "", nil, err
	}
	return rule + "root", renameRules(g, rule), nil
}

// pythonLiterals are rules with JSON's literals true, false and null
// taking Python's True, False and None too.
func pythonLiterals(rules []string) []string {
	r := strings.NewReplacer(`"true"`, `("true" | "True")`, `"false"`, `("false" | "False")`, `"null"`, `("null" | "None")`)
	for i, l := range rules {
		name, body, _ := strings.Cut(l, " ::= ")
		rules[i] = name + " ::= " + r.Replace(body)
	}
	return rules
}

// renameRules are grammar g's rules with every rule name prefixed.
func renameRules(g, prefix string) []string {
	names := map[string]bool{}
	lines := strings.Split(trimSpace(g), "\n")
	for _, l := range lines {
		name, _, _ := strings.Cut(l, " ::= ")
		names[name] = true
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		name, body, _ := strings.Cut(l, " ::= ")
		var b strings.Builder
		for j := 0; j < len(body); {
			c := body[j]
			switch {
			case c == '"' || c == '[':
				end := byte('"')
				if c == '[' {
					end = ']'
				}
				k := j + 1
				for k < len(body) && body[k] != end {
					if body[k] == '\\' {
						k++
					}
					k++
				}
				k = min(k+1, len(body))
				b.WriteString(body[j:k])
				j = k
			case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
				k := j
				for k < len(body) && (body[k] >= 'a' && body[k] <= 'z' || body[k] >= 'A' && body[k] <= 'Z' || body[k] >= '0' && body[k] <= '9' || body[k] == '-') {
					k++
				}
				if names[body[j:k]] {
					b.WriteString(prefix)
				}
				b.WriteString(body[j:k])
				j = k
			default:
				b.WriteByte(c)
				j++
			}
		}
		out[i] = prefix + name + " ::= " + b.String()
	}
	return out
}

// keyedSyntax is how a family writes a call whose arguments are keyed
// values, not a JSON object: Gemma 4's call:NAME{key:value,…} and LFM2's
// Python call NAME(key=value, …).
type keyedSyntax struct {
	rule       string // the prefix of the grammar's rule names
	open       func(name string) string
	keySep     string // between a key and its value
	sep, close string
	// value is a property's value (its schema raw, resolved), with the
	// rules it needs named after rule.
	value func(p keyedProperty, raw json.RawMessage, rule string) (string, []string, error)
	// member is a member of any key (for a function without
	// properties), and its rules.
	member func(rule string) (string, []string, error)
	// field is a property's GBNF from its key and its value's (nil: the
	// key, keySep, then the value).
	field func(key, value string) string
}

var gemma4Syntax = keyedSyntax{
	rule:   "tadpole-g4",
	open:   func(name string) string { return "call:" + name + "{" },
	keySep: ":", sep: ",", close: "}",
	value: func(p keyedProperty, raw json.RawMessage, rule string) (string, []string, error) {
		return p.gemma4Value(raw, rule)
	},
	member: func(string) (string, []string, error) { return "tadpole-g4-member", nil, nil },
}

// lfm2Syntax: LFM2's Python calls, each value JSON valid against its
// property's schema, with Python's True, False and None beside JSON's
// literals (the template writes Python's; the parser takes both).
var lfm2Syntax = keyedSyntax{
	rule:   "tadpole-py",
	open:   func(name string) string { return name + "(" },
	keySep: "=", sep: ", ", close: ")",
	value: func(_ keyedProperty, raw json.RawMessage, rule string) (string, []string, error) {
		g, err := grammar.FromSchema(raw)
		if err != nil {
			return "", nil, err
		}
		return rule + "root", pythonLiterals(renameRules(g, rule)), nil
	},
	member: func(rule string) (string, []string, error) {
		g, err := grammar.FromSchema([]byte(`{}`))
		if err != nil {
			return "", nil, err
		}
		return rule + "member", append(pythonLiterals(renameRules(g, rule)), rule+`member ::= [a-zA-Z_] [a-zA-Z0-9_]{0,63} "=" `+rule+"root"), nil
	},
}

// gemma4Calls is the GBNF of one Gemma 4 call of one of tools (only that
// one when only is set), "call:NAME{…}" without the markers around it,
// as the body of rule tadpole-g4-call, with the rules it needs.
func keyedCalls(syn keyedSyntax, tools []Tool, only string) (string, error) {
	var alts, rules []string
	for i, t := range tools {
		if only != "" && t.Name != only {
			continue
		}
		var s struct {
			Properties  map[string]json.RawMessage `json:"properties"`
			Required    []string                   `json:"required"`
			Defs        map[string]json.RawMessage `json:"$defs"`
			Definitions map[string]json.RawMessage `json:"definitions"`
		}
		if p := trimSpace(string(t.Parameters)); p != "" && p != "null" {
			if err := json.Unmarshal(t.Parameters, &s); err != nil {
				return "", fmt.Errorf("function %q: parameters must be a JSON schema object", t.Name)
			}
		}
		// Required properties first, in the schema's order, each once;
		// then optional ones, any number; any key where none are listed.
		member, more, err := syn.member(fmt.Sprintf("%s-any%d-", syn.rule, i))
		if err != nil {
			return "", err
		}
		rules = append(rules, more...)
		sep := grammar.Literal(syn.sep)
		if syn.sep == "" {
			sep = "" // (MiniMax M3's elements follow each other)
		}
		members := fmt.Sprintf("(%s (%s %s)*)?", member, sep, member)
		if len(s.Properties) > 0 {
			field := func(k string) (string, error) {
				raw := s.Properties[k]
				var p keyedProperty
				for range 8 { // a property that is a local reference: its definition
					if err := json.Unmarshal(raw, &p); err != nil {
						return "", fmt.Errorf("function %q: property %q: %v", t.Name, k, err)
					}
					if d, ok := strings.CutPrefix(p.Ref, "#/$defs/"); ok && s.Defs[d] != nil {
						raw = s.Defs[d]
					} else if d, ok := strings.CutPrefix(p.Ref, "#/definitions/"); ok && s.Definitions[d] != nil {
						raw = s.Definitions[d]
					} else {
						break
					}
					p = keyedProperty{}
				}
				if p.Ref != "" {
					raw, p = json.RawMessage(`{}`), keyedProperty{} // any value
				}
				if len(s.Defs) > 0 || len(s.Definitions) > 0 {
					// (nested references point at the function's definitions)
					doc := map[string]any{"allOf": []json.RawMessage{raw}}
					if len(s.Defs) > 0 {
						doc["$defs"] = s.Defs
					}
					if len(s.Definitions) > 0 {
						doc["definitions"] = s.Definitions
					}
					raw, _ = json.Marshal(doc)
				}
				v, more, err := syn.value(p, raw, fmt.Sprintf("%s-p%d-%d-", syn.rule, i, len(rules)))
				if err != nil {
					return "", fmt.Errorf("function %q: property %q: %v", t.Name, k, err)
				}
				rules = append(rules, more...)
				if syn.field != nil {
					return syn.field(k, v), nil
				}
				return grammar.Literal(k+syn.keySep) + " " + v, nil
			}
			required := map[string]bool{}
			var seq []string
			for _, k := range s.Required {
				if _, ok := s.Properties[k]; !ok || required[k] {
					continue
				}
				required[k] = true
				f, err := field(k)
				if err != nil {
					return "", err
				}
				seq = append(seq, f)
			}
			keys := make([]string, 0, len(s.Properties))
			for k := range s.Properties {
				if !required[k] {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			var opt []string
			for _, k := range keys {
				f, err := field(k)
				if err != nil {
					return "", err
				}
				opt = append(opt, f)
			}
			members = strings.Join(seq, " "+sep+" ")
			if len(opt) > 0 {
				rule := fmt.Sprintf("%s-opt-%d", syn.rule, i)
				rules = append(rules, rule+" ::= "+strings.Join(opt, " | "))
				if members == "" {
					members = fmt.Sprintf(`(%s (%s %s)*)?`, rule, sep, rule)
				} else {
					members += fmt.Sprintf(` (%s %s)*`, sep, rule)
				}
			}
		}
		alts = append(alts, fmt.Sprintf(`%s %s %s`, grammar.Literal(syn.open(t.Name)), members, grammar.Literal(syn.close)))
	}
	if len(alts) == 0 {
		return "", fmt.Errorf("no function named %q among the tools", only)
	}
	return syn.rule + "-call ::= " + strings.Join(alts, " | ") + "\n" + strings.Join(append(rules, ""), "\n"), nil
}

// gemma4Calls is keyedCalls in Gemma 4's syntax, with its value rules.
func gemma4Calls(tools []Tool, only string) (string, error) {
	g, err := keyedCalls(gemma4Syntax, tools, only)
	return g + gemma4Rules, err
}

// gemma4Grammar is Grammar for Gemma 4: one call.
func gemma4Grammar(o Options, tools []Tool, only string) (string, error) {
	rules, err := gemma4Calls(tools, only)
	if err != nil {
		return "", err
	}
	return withThinking(o, fmt.Sprintf("root ::= %s tadpole-g4-call %s\n%s", grammar.Literal(gemma4CallBegin), grammar.Literal(gemma4CallEnd), rules)), nil
}

// gemma4LazyGrammar is LazyGrammar for Gemma 4: from the call token
// (triggerRule), calls, each closed by <tool_call|>; further calls each
// open with triggerRule again.
func gemma4LazyGrammar(tools []Tool, triggerRule string) (string, error) {
	rules, err := gemma4Calls(tools, "")
	if err != nil {
		return "", err
	}
	call := fmt.Sprintf("%s tadpole-g4-call %s", triggerRule, grammar.Literal(gemma4CallEnd))
	return fmt.Sprintf("root ::= %s ([ \\n]{0,2} %s)*\n%s", call, call, rules), nil
}

// lfm2Grammar is Grammar for LFM2: one call,
// <|tool_call_start|>[NAME(key=value, …)]<|tool_call_end|>.
func lfm2Grammar(o Options, tools []Tool, only string) (string, error) {
	rules, err := keyedCalls(lfm2Syntax, tools, only)
	if err != nil {
		return "", err
	}
	return withThinking(o, fmt.Sprintf("root ::= %s tadpole-py-call %s\n%s", grammar.Literal(lfmCallsBegin+"["), grammar.Literal("]"+lfmCallsEnd), rules)), nil
}

// lfm2LazyGrammar is LazyGrammar for LFM2: from <|tool_call_start|>
// (triggerRule), a list of calls and <|tool_call_end|>.
func lfm2LazyGrammar(tools []Tool, triggerRule string) (string, error) {
	rules, err := keyedCalls(lfm2Syntax, tools, "")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("root ::= %s \"[\" tadpole-py-call (\",\" \" \"? tadpole-py-call)* %s\n%s", triggerRule, grammar.Literal("]"+lfmCallsEnd), rules), nil
}
