package chatparse

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// namedMarkup is how a format whose calls name the function outside the
// JSON writes its calls: a section around them (begin, end; none where
// one call is the whole), and around each call's arguments the text
// before (with the function's name), an index (Kimi's ":0", the call's
// number, then between) and the text after.
type namedMarkup struct {
	begin, end     string
	before         func(name string) string
	index          bool
	between, after string
	// id is GBNF for an id that follows before (Mistral Small 3.2's
	// "[CALL_ID]" and nine characters), then between.
	id string
}

// named is format o's namedMarkup; ok is false for the formats whose
// forced calls are a call object (their name inside the JSON, or taken
// bare by the parser).
func named(o Options) (m namedMarkup, ok bool) {
	switch o.Format {
	case Kimi:
		// <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
		// <|tool_call_argument_begin|>{…}<|tool_call_end|>…
		// <|tool_calls_section_end|>, as Kimi K2's template shows calls.
		return namedMarkup{begin: kimiSectionBegin, end: kimiSectionEnd,
			before: func(n string) string { return kimiCallBegin + "functions." + n + ":" },
			index:  true, between: kimiArgsBegin, after: kimiCallEnd}, true
	case DeepSeek:
		if o.FencedCalls {
			// R1: function<｜tool▁sep｜>NAME, then the arguments in a
			// ```json fence.
			return namedMarkup{begin: deepSeekCallsBegin, end: deepSeekCallsEnd,
				before: func(n string) string { return deepSeekCallBegin + "function" + deepSeekSep + n + "\n```json\n" },
				after:  "\n```" + deepSeekCallEnd}, true
		}
		// V3.1 and later: NAME<｜tool▁sep｜>{…}.
		return namedMarkup{begin: deepSeekCallsBegin, end: deepSeekCallsEnd,
			before: func(n string) string { return deepSeekCallBegin + n + deepSeekSep },
			after:  deepSeekCallEnd}, true
	case FunctionTag:
		return namedMarkup{before: func(n string) string { return "<function=" + n + ">" }, after: "</function>"}, true
	case Mistral:
		if !o.ArgsCalls {
			return namedMarkup{}, false // [TOOL_CALLS][{…}]: a call object
		}
		if o.CallIDCalls {
			// Mistral Small 3.2: [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{…}, the
			// id nine letters and digits (as Mistral's own ids).
			return namedMarkup{before: func(n string) string { return "[TOOL_CALLS]" + n + "[CALL_ID]" },
				id: "[a-zA-Z0-9]{9}", between: "[ARGS]"}, true
		}
		// Devstral, Ministral 3: [TOOL_CALLS]NAME[ARGS]{…}.
		return namedMarkup{before: func(n string) string { return "[TOOL_CALLS]" + n + "[ARGS]" }}, true
	case Functionary:
		// functionary v3.2: ">>>NAME\n{…}", a block per call; its
		// generation prompt ends with the first ">>>".
		return namedMarkup{before: func(n string) string { return n + "\n" }}, true
	case Apertus:
		// [{"NAME": {…}}] between its block tokens.
		return namedMarkup{begin: apertusCallsBegin + "[", end: "]" + apertusCallsEnd,
			before: func(n string) string { key, _ := json.Marshal(n); return "{" + string(key) + ": " },
			after:  "}"}, true
	}
	return namedMarkup{}, false
}

// namedBranches are one grammar branch per function of tools (only that
// one when only is set): its call in m, the index (when m has one) a
// literal 0 or, with anyIndex, any number; and the definitions they
// share. A function the grammar converter cannot hold to its parameters
// is an error naming it.
func namedBranches(m namedMarkup, tools []Tool, only string, anyIndex bool) ([]grammar.Branch, map[string]map[string]json.RawMessage, error) {
	args, names, defs, err := toolArgs(tools, only)
	if err != nil {
		return nil, nil, err
	}
	branches := make([]grammar.Branch, len(args))
	for i, a := range args {
		one := map[string]any{"allOf": []json.RawMessage{a}}
		for k, v := range defs {
			one[k] = v
		}
		s, _ := json.Marshal(one)
		if _, err := grammar.FromSchema(s); err != nil {
			return nil, nil, fmt.Errorf("function %q: %v", names[i], err)
		}
		b := grammar.Branch{Prefix: m.before(names[i]), Schema: a, Suffix: m.after}
		switch {
		case m.id != "":
			b.Between = m.id + " " + grammar.Literal(m.between)
		case m.index && anyIndex:
			b.Between = "[0-9]{1,3}"
			if m.between != "" {
				b.Between += " " + strconv.Quote(m.between)
			}
		case m.index:
			b.Prefix += "0" + m.between
		default:
			b.Prefix += m.between
		}
		branches[i] = b
	}
	return branches, defs, nil
}

// namedGrammar is Grammar for the formats of named: one call, in the
// family's own markup, of one of tools (only that one when only is set),
// its arguments valid against the function's parameters.
func namedGrammar(o Options, tools []Tool, only string) (string, bool, error) {
	m, ok := named(o)
	if !ok {
		return "", false, nil
	}
	branches, defs, err := namedBranches(m, tools, only, false)
	if err != nil {
		return "", true, err
	}
	for i := range branches {
		branches[i].Prefix = m.begin + branches[i].Prefix
		branches[i].Suffix += m.end
	}
	g, err := grammar.FromBranches(defs, branches)
	return g, true, err
}

// namedLazyGrammar is LazyGrammar for the formats of named whose calls
// are a section that starts with its own token (Kimi K2, DeepSeek):
// from that token (triggerRule), calls of tools in the family's markup,
// as many as the model writes (Kimi's numbered in any way), each with
// its function's arguments, then the section's end.
func namedLazyGrammar(o Options, tools []Tool, triggerRule string) (string, bool, error) {
	m, ok := named(o)
	if !ok || CallTrigger(o) == "" {
		return "", false, nil
	}
	branches, defs, err := namedBranches(m, tools, "", true)
	if err != nil {
		return "", true, err
	}
	g, err := grammar.FromBranches(defs, branches)
	if err != nil {
		return "", true, err
	}
	body, rules := splitRoot(g)
	ws := `[ \n]{0,2}`
	root := fmt.Sprintf("%s %s tadpole-call (%s tadpole-call)* %s %s", triggerRule, ws, ws, ws, strconv.Quote(m.end))
	return fmt.Sprintf("root ::= %s\ntadpole-call ::= %s\n%s", root, body, rules), true, nil
}

// ArgsCalls reports whether a Mistral template teaches the newer calls,
// "[TOOL_CALLS]NAME[ARGS]{…}".
func ArgsCalls(template string) bool {
	return DetectFormat(template) == Mistral && strings.Contains(template, "[ARGS]")
}

// CallIDCalls reports whether a Mistral template of the newer calls
// writes each call's id: "[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{…}".
func CallIDCalls(template string) bool {
	return ArgsCalls(template) && strings.Contains(template, "[CALL_ID]")
}

// FencedCalls reports whether a DeepSeek template teaches R1's calls:
// the function's type, the separator, the name and the arguments in a
// ```json fence.
func FencedCalls(template string) bool {
	return DetectFormat(template) == DeepSeek && strings.Contains(template, "```json")
}
