package chatparse

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// namedCall is how a format whose calls name the function outside the
// JSON writes one call of function name: the text before the arguments
// object and after it. ok is false for the formats whose forced calls
// are a call object (their name inside the JSON, or taken bare by the
// parser).
func namedCall(o Options, name string) (before, after string, ok bool) {
	switch o.Format {
	case Kimi:
		// <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
		// <|tool_call_argument_begin|>{…}<|tool_call_end|>
		// <|tool_calls_section_end|>, as Kimi K2's template shows a call.
		return kimiSectionBegin + kimiCallBegin + "functions." + name + ":0" + kimiArgsBegin, kimiCallEnd + kimiSectionEnd, true
	case DeepSeek:
		if o.FencedCalls {
			// R1: function<｜tool▁sep｜>NAME, then the arguments in a
			// ```json fence.
			return deepSeekCallsBegin + deepSeekCallBegin + "function" + deepSeekSep + name + "\n```json\n", "\n```" + deepSeekCallEnd + deepSeekCallsEnd, true
		}
		// V3.1 and later: NAME<｜tool▁sep｜>{…}.
		return deepSeekCallsBegin + deepSeekCallBegin + name + deepSeekSep, deepSeekCallEnd + deepSeekCallsEnd, true
	case FunctionTag:
		return "<function=" + name + ">", "</function>", true
	case Apertus:
		// [{"NAME": {…}}] between its block tokens.
		key, _ := json.Marshal(name)
		return apertusCallsBegin + "[{" + string(key) + ": ", "}]" + apertusCallsEnd, true
	}
	return "", "", false
}

// namedGrammar is Grammar for the formats of namedCall: one call, in the
// family's own markup, of one of tools (only that one when only is set),
// its arguments valid against the function's parameters. A function the
// grammar converter cannot hold to its parameters is an error naming it.
func namedGrammar(o Options, tools []Tool, only string) (string, bool, error) {
	if _, _, ok := namedCall(o, ""); !ok {
		return "", false, nil
	}
	args, names, defs, err := toolArgs(tools, only)
	if err != nil {
		return "", true, err
	}
	branches := make([]grammar.Branch, len(args))
	for i, a := range args {
		one := map[string]any{"allOf": []json.RawMessage{a}}
		for k, v := range defs {
			one[k] = v
		}
		s, _ := json.Marshal(one)
		if _, err := grammar.FromSchema(s); err != nil {
			return "", true, fmt.Errorf("function %q: %v", names[i], err)
		}
		before, after, _ := namedCall(o, names[i])
		branches[i] = grammar.Branch{Prefix: before, Schema: a, Suffix: after}
	}
	g, err := grammar.FromBranches(defs, branches)
	return g, true, err
}

// FencedCalls reports whether a DeepSeek template teaches R1's calls:
// the function's type, the separator, the name and the arguments in a
// ```json fence.
func FencedCalls(template string) bool {
	return DetectFormat(template) == DeepSeek && strings.Contains(template, "```json")
}
