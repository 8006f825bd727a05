package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/tadpole-llm/tadpole/server/infer"
)

// toolName is Anthropic's pattern for tool names.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// function is a tool in the shape infer and the chat templates take
// (OpenAI's).
type function struct {
	Type     string       `json:"type"`
	Function functionBody `json:"function"`
}

type functionBody struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// checkTools validates tools and tool_choice and returns the tools in
// infer's shape, the choice ("auto", "none" or "required") and the tool
// a {"type": "tool"} choice forces (infer holds the output to a call of
// it with a grammar). Anthropic's server tools are refused: this server
// runs none.
func checkTools(tools []Tool, tc *ToolChoice) ([]json.RawMessage, string, string, error) {
	names := map[string]bool{}
	out := make([]json.RawMessage, 0, len(tools))
	for i, t := range tools {
		raw, err := checkTool(fmt.Sprintf("tools[%d]", i), t)
		if err != nil {
			return nil, "", "", err
		}
		if names[t.Name] {
			return nil, "", "", invalid("tools[%d].name: %q is the name of an earlier tool: names must be unique", i, t.Name)
		}
		names[t.Name] = true
		out = append(out, raw)
	}
	if tc == nil {
		return out, "auto", "", nil
	}
	switch tc.Type {
	case "auto", "none":
		return out, tc.Type, "", nil
	case "any":
		if len(tools) == 0 {
			return nil, "", "", invalid("tool_choice: 'any' needs tools")
		}
		return out, "required", "", nil
	case "tool":
		if !names[tc.Name] {
			return nil, "", "", invalid("tool_choice.name: no tool named %q in tools", tc.Name)
		}
		return out, "required", tc.Name, nil
	}
	return nil, "", "", invalid("tool_choice.type: %q is not one of 'auto', 'any', 'tool' and 'none'", tc.Type)
}

// checkTool checks one client tool and converts it. Its input_schema
// must be a JSON schema object that infer accepts (the grammar of a
// forced call is built from it).
func checkTool(field string, t Tool) (json.RawMessage, error) {
	if t.Type != "" && t.Type != "custom" {
		return nil, invalid("%s.type: %q is not supported: this server runs no server tools, only custom tools (name, description, input_schema)", field, t.Type)
	}
	if !toolName.MatchString(t.Name) {
		return nil, invalid("%s.name: %q must be 1 to 128 letters, digits, '_' and '-'", field, t.Name)
	}
	schema := bytes.TrimSpace(t.InputSchema)
	if len(schema) == 0 || schema[0] != '{' {
		return nil, invalid("%s.input_schema: Field required: a JSON schema object", field)
	}
	raw, err := json.Marshal(function{Type: "function", Function: functionBody{Name: t.Name, Description: t.Description, Parameters: schema}})
	if err != nil {
		return nil, invalid("%s: %v", field, err)
	}
	if err := infer.CheckTools([]json.RawMessage{raw}); err != nil {
		return nil, invalid("%s.input_schema: %v", field, err)
	}
	return raw, nil
}
