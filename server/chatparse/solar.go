package chatparse

import (
	"encoding/json"
	"fmt"
	"strings"
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
		c, err := p.call(strings.TrimSpace(name), json.RawMessage(strings.TrimSpace(args)))
		return []ToolCall{c}, err
	})
}
