package chatparse

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// Upstage Solar Open's messages: the prompt ends with "<|begin|>assistant";
// the model writes "<|content|>ANSWER<|end|>" or its calls,
//
//	<|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{…}<|tool_call:end|>…<|calls|>
//
// (ID ten lowercase letters and digits). <|content|> holds no text of its
// own; <|end|> is an end of generation.
const (
	solarCallsBegin = "<|tool_calls|>"
	solarCallsEnd   = "<|calls|>"
	solarCallBegin  = "<|tool_call:begin|>"
	solarCallEnd    = "<|tool_call:end|>"
	solarName       = "<|tool_call:name|>"
	solarArgs       = "<|tool_call:args|>"
	solarContent    = "<|content|>"
)

// solar reads Solar Open's calls, the inside of <|tool_calls|>…<|calls|>.
func (p *Parser) solar(body string) ([]ToolCall, error) {
	return p.sectionCalls(body, solarCallBegin, solarCallEnd, solarArgs, "Solar Open", func(head, args string) ([]ToolCall, error) {
		_, name, ok := strings.Cut(head, solarName)
		if !ok {
			return nil, fmt.Errorf("a Solar Open call without %s", solarName)
		}
		c, err := p.call(trimSpace(name), json.RawMessage(trimSpace(args)))
		return []ToolCall{c}, err
	})
}

// solarGrammar is Grammar for Solar Open: one call in its markup, the
// id ten lowercase letters or digits as its template asks, the
// arguments valid against the function's parameters.
func solarGrammar(o Options, tools []Tool, only string) (string, error) {
	args, names, defs, err := toolArgs(tools, only)
	if err != nil {
		return "", err
	}
	branches := make([]grammar.Branch, len(args))
	for i, a := range args {
		branches[i] = grammar.Branch{Prefix: solarCallsBegin + solarCallBegin, Between: `[a-z0-9]{10} ` + grammar.Literal(solarName+names[i]+solarArgs),
			Schema: a, Suffix: solarCallEnd + solarCallsEnd}
		// Each function on its own first, so that an error names it.
		if _, err := grammar.FromBranches(defs, branches[i:i+1]); err != nil {
			return "", fmt.Errorf("function %q: %v", names[i], err)
		}
	}
	g, err := grammar.FromBranches(defs, branches)
	if err != nil {
		return "", err
	}
	return withThinking(o, g), nil
}
