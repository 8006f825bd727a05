package ollama

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// thinkOption reads Ollama's think: true, false, or a level ("high",
// "medium", "low", for models that take a reasoning effort), which turns
// thinking on and reaches the template as reasoning_effort.
func thinkOption(raw json.RawMessage) (*bool, map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return &b, nil, nil
	}
	var level string
	if json.Unmarshal(raw, &level) == nil {
		switch level {
		case "high", "medium", "low":
			on := true
			return &on, map[string]any{"reasoning_effort": level}, nil
		}
	}
	return nil, nil, errorf(http.StatusBadRequest, "invalid think value %s: want true, false, \"high\", \"medium\" or \"low\"", raw)
}

// tools converts a request's tools into the OpenAI-shaped objects chat
// templates take, checking their parameter schemas.
func tools(ts []api.Tool) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, t := range ts {
		if t.Type != "function" && t.Type != "" {
			return nil, errorf(http.StatusBadRequest, "tools[%d]: type %q is not supported (function)", i, t.Type)
		}
		var f struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(t.Function, &f); err != nil || f.Name == "" {
			return nil, errorf(http.StatusBadRequest, "tools[%d]: function must be an object with a name", i)
		}
		raw, err := json.Marshal(api.Tool{Type: "function", Function: t.Function})
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "tools[%d]: %v", i, err)
		}
		out = append(out, raw)
	}
	if err := infer.CheckTools(out); err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	return out, nil
}

// message converts an Ollama chat message.
func message(i int, m api.Message) (infer.Message, error) {
	msg := infer.Message{Role: m.Role, Content: m.Content, Thinking: m.Thinking, ToolCallID: m.ToolCallID, ToolName: m.ToolName}
	for j, tc := range m.ToolCalls {
		args, err := chatparse.ObjectArguments(tc.Function.Arguments)
		if err != nil {
			return msg, errorf(http.StatusBadRequest, "messages[%d].tool_calls[%d].function.arguments must be a JSON object", i, j)
		}
		msg.ToolCalls = append(msg.ToolCalls, infer.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	return msg, nil
}

// apiToolCalls converts parsed calls into Ollama's shape.
func apiToolCalls(calls []chatparse.ToolCall) []api.ToolCall {
	var out []api.ToolCall
	for _, c := range calls {
		out = append(out, api.ToolCall{ID: c.ID, Function: api.ToolCallFunction{Index: c.Index, Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}
