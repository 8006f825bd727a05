package infer

import (
	"bytes"
	"encoding/json"
	"text/template"
	"time"
)

// Ollama's TEMPLATE syntax is Go's text/template over Ollama's data:
// .System, .Prompt, .Response, .Messages (with .ToolCalls of .Function
// .Name/.Arguments, .ToolName, .Thinking), .Tools (of .Function .Name,
// .Description, .Parameters), .Think, .IsThinkSet, and the functions json,
// currentDate and yesterdayDate.

// jsonText prints as its JSON (Ollama's tool arguments and parameters
// print so).
type jsonText json.RawMessage

func (j jsonText) String() string { return string(j) }

// MarshalJSON keeps the JSON as it is for the json function.
func (j jsonText) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

type goTool struct {
	Type     string     `json:"type"`
	Function goFunction `json:"function"`
}

type goFunction struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Parameters  jsonText `json:"parameters,omitempty"`
}

type goMessage struct {
	Role       string       `json:"role"`
	Content    string       `json:"content"`
	Thinking   string       `json:"thinking,omitempty"`
	ToolCalls  []goToolCall `json:"tool_calls,omitempty"`
	ToolName   string       `json:"tool_name,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type goToolCall struct {
	ID       string         `json:"id,omitempty"`
	Function goCallFunction `json:"function"`
}

type goCallFunction struct {
	Index     int      `json:"index"`
	Name      string   `json:"name"`
	Arguments jsonText `json:"arguments"`
}

// goTemplateData is a chat's data for an Ollama template.
func goTemplateData(req *Request, msgs []Message) map[string]any {
	var tools []goTool
	if req.ToolChoice != "none" {
		for _, raw := range req.Tools {
			var t struct {
				Type     string `json:"type"`
				Function struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			}
			if json.Unmarshal(raw, &t) == nil {
				tools = append(tools, goTool{Type: t.Type, Function: goFunction{Name: t.Function.Name, Description: t.Function.Description, Parameters: jsonText(t.Function.Parameters)}})
			}
		}
	}
	gm := make([]goMessage, len(msgs))
	for i, m := range msgs {
		gm[i] = goMessage{Role: m.Role, Content: m.Content, Thinking: m.Thinking, ToolName: m.ToolName, ToolCallID: m.ToolCallID}
		for j, c := range m.ToolCalls {
			gm[i].ToolCalls = append(gm[i].ToolCalls, goToolCall{ID: c.ID, Function: goCallFunction{Index: j, Name: c.Name, Arguments: jsonText(c.Arguments)}})
		}
	}
	return map[string]any{
		"Messages": gm, "System": req.System, "Prompt": lastUser(msgs), "Response": "", "Tools": tools,
		"Think": req.Think != nil && *req.Think, "IsThinkSet": req.Think != nil,
	}
}

var goTemplateFuncs = template.FuncMap{
	"json": func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	},
	"currentDate":   func() string { return time.Now().Format("2006-01-02") },
	"yesterdayDate": func() string { return time.Now().AddDate(0, 0, -1).Format("2006-01-02") },
}

func execTemplate(tmpl string, data map[string]any) (string, error) {
	var b bytes.Buffer
	if err := renderGoTemplate(&b, tmpl, data, goTemplateBudget); err != nil {
		return "", err
	}
	return b.String(), nil
}
