package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
)

// The tools of a request, as the Responses API defines them:
//
//   - "function": a function the model may call.
//   - "namespace": a group of functions ({"type": "namespace", "name",
//     "description", "tools": [function, …]}), as Codex declares its
//     collaboration and MCP tools. Each member reaches the model as a
//     function of its own, named "<namespace>.<member>" (as Ollama names
//     them); a call of it is answered as the API answers one, a
//     function_call item with the member's name and a "namespace" field,
//     and a function_call item sent back with a namespace is shown to the
//     model under the qualified name again.
//   - hosted tools (web_search, file_search, code_interpreter,
//     computer_use, mcp, image_generation, …), which OpenAI runs on its
//     side: Tadpole runs none, so they are left out of what the model
//     sees, with a warning in the log (as llama-server does), never a 400.
//   - "custom" (free-form input, optionally held to a grammar): refused
//     with a 400 that says to declare a function instead.

// qualified is a namespace member's place: its namespace and its own
// name.
type qualified struct {
	Namespace string
	Name      string
}

// toolSet is what checkTools makes of a request's tools.
type toolSet struct {
	tools  []json.RawMessage // as the chat templates take them
	choice string            // "auto", "none" or "required"
	forced string            // the function a named tool_choice forces
	// members maps the qualified name of each namespace member to its
	// place, to answer its calls in the API's shape.
	members map[string]qualified
	skipped []string // the hosted tool types left out
}

// qualify is the name a namespace member reaches the model under
// (names have no dots, so it is never another tool's).
func qualify(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "." + name
}

// checkTools validates the tools and tool_choice.
func checkTools(tools []Tool, choice json.RawMessage, model string) (*toolSet, error) {
	if len(tools) > maxTools {
		return nil, invalid("tools", "Invalid 'tools': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", maxTools, len(tools))
	}
	ts := &toolSet{members: map[string]qualified{}}
	names := map[string]string{} // name as the model sees it → the field that declared it
	add := func(p, namespace string, t Tool) error {
		raw, err := functionTool(p, t, namespace)
		if err != nil {
			return err
		}
		name := qualify(namespace, t.Name)
		if prev, dup := names[name]; dup {
			return invalid(p+".name", "Invalid '%s.name': %q is already the name of '%s': tool names must be unique.", p, dialect.Trim(name), prev)
		}
		names[name] = p
		if namespace != "" {
			ts.members[name] = qualified{namespace, t.Name}
		}
		ts.tools = append(ts.tools, raw)
		return nil
	}
	for i, t := range tools {
		p := fmt.Sprintf("tools[%d]", i)
		switch t.Type {
		case "function":
			if len(t.Tools) > 0 {
				return nil, invalid(p+".tools", "Invalid '%s.tools': only a namespace tool has member tools.", p)
			}
			if err := add(p, "", t); err != nil {
				return nil, err
			}
		case "namespace":
			if err := dialect.CheckToolName(p+".name", t.Name); err != nil {
				return nil, err
			}
			if len(t.Tools) == 0 {
				return nil, invalid(p+".tools", "Invalid '%s.tools': namespace %q has no tools: expected an array with at least one function tool.", p, dialect.Trim(t.Name))
			}
			if len(ts.tools)+len(t.Tools) > maxTools {
				return nil, invalid(p+".tools", "Invalid '%s.tools': too many tools. Expected at most %d functions in all, namespace members included.", p, maxTools)
			}
			for j, m := range t.Tools {
				mp := fmt.Sprintf("%s.tools[%d]", p, j)
				if m.Type != "function" {
					return nil, notSupported(mp+".type", "Invalid value for '%s.type': %q is not supported in a namespace. Supported values are: 'function'.", mp, dialect.Trim(m.Type))
				}
				if len(m.Tools) > 0 {
					return nil, invalid(mp+".tools", "Invalid '%s.tools': namespaces do not nest.", mp)
				}
				if err := add(mp, t.Name, m); err != nil {
					return nil, err
				}
			}
		case "custom":
			return nil, notSupported(p+".type", "Invalid value for '%s.type': 'custom' tools (free-form input) are not supported: declare %q as a 'function' tool with a JSON schema.", p, dialect.Trim(t.Name))
		case "":
			return nil, invalid(p+".type", "Missing required parameter: '%s.type'.", p)
		default:
			// A hosted tool: OpenAI runs it, Tadpole does not. Left out,
			// so that clients that always declare them (Codex's
			// web_search) work, with a warning for the operator.
			slog.Warn("responses: hosted tool left out: this server runs none", "tool", p, "type", dialect.Trim(t.Type), "model", model)
			ts.skipped = append(ts.skipped, t.Type)
		}
	}
	var err error
	ts.choice, ts.forced, err = toolChoice(choice, len(ts.tools), names)
	if err != nil {
		return nil, err
	}
	return ts, nil
}

// functionTool checks a function tool and writes it as the chat
// templates take it (OpenAI's chat shape), under its qualified name.
func functionTool(p string, t Tool, namespace string) (json.RawMessage, error) {
	if err := dialect.CheckToolName(p+".name", t.Name); err != nil {
		return nil, err
	}
	ps, err := dialect.ToolParameters(p+".parameters", t.Parameters)
	if err != nil {
		return nil, err
	}
	fn := map[string]any{"name": qualify(namespace, t.Name)}
	if t.Description != "" {
		fn["description"] = t.Description
	}
	if ps != nil {
		fn["parameters"] = ps
	}
	raw, err := json.Marshal(map[string]any{"type": "function", "function": fn})
	if err != nil {
		return nil, invalid(p, "Invalid '%s': %v", p, err)
	}
	if err := infer.CheckTools([]json.RawMessage{raw}); err != nil {
		return nil, invalid(p+".parameters", "Invalid '%s.parameters': %v", p, err)
	}
	return raw, nil
}

// toolChoice reads tool_choice: "none", "auto", "required" or a named
// function ({"type": "function", "name", "namespace"?}), which must be
// one of the request's (names: the qualified names). n is the number of
// functions the model sees.
func toolChoice(choice json.RawMessage, n int, names map[string]string) (string, string, error) {
	raw := bytes.TrimSpace(choice)
	if len(raw) == 0 || string(raw) == "null" {
		return "auto", "", nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "none", "auto":
		case "required":
			if n == 0 {
				return "", "", invalid("tool_choice", "Invalid value for 'tool_choice': 'required' is only allowed when 'tools' are specified.")
			}
		default:
			return "", "", invalid("tool_choice", "Invalid value for 'tool_choice': %q. Supported values are: 'none', 'auto' and 'required'.", dialect.Trim(mode))
		}
		return mode, "", nil
	}
	var named struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type != "function" || named.Name == "" {
		return "", "", invalid("tool_choice", "Invalid 'tool_choice': expected 'none', 'auto', 'required' or {\"type\": \"function\", \"name\": ...}.")
	}
	name := qualify(named.Namespace, named.Name)
	if _, ok := names[name]; !ok {
		return "", "", invalid("tool_choice", "Invalid 'tool_choice': no function tool named %q in 'tools'.", dialect.Trim(name))
	}
	return "required", name, nil
}
