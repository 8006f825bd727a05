package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestZZDiff(t *testing.T) {
	casesPath := os.Getenv("ZZ_CASES")
	if casesPath == "" {
		t.Skip()
	}
	var cases map[string]struct {
		BOS      string            `json:"bos_token"`
		EOS      string            `json:"eos_token"`
		AGP      bool              `json:"add_generation_prompt"`
		Messages []struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			Reasoning string  `json:"reasoning_content"`
			ID        string  `json:"tool_call_id"`
			Name      string  `json:"name"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
		Vars     map[string]any    `json:"vars"`
	}
	b, _ := os.ReadFile(casesPath)
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(os.Getenv("ZZ_TPL"))
	out := os.Getenv("ZZ_OUT")
	os.MkdirAll(out, 0o755)
	for _, f := range files {
		src, _ := os.ReadFile(f)
		for name, c := range cases {
			in := Input{BOSToken: c.BOS, EOSToken: c.EOS, AddGenerationPrompt: c.AGP, Tools: c.Tools, Vars: c.Vars,
				Now: func() time.Time { return time.Date(2024, 7, 26, 15, 4, 5, 0, time.UTC) }}
			for _, m := range c.Messages {
				msg := Message{Role: m.Role, Thinking: m.Reasoning, ToolCallID: m.ID, ToolName: m.Name}
				if m.Content != nil {
					msg.Content = *m.Content
				}
				for _, tc := range m.ToolCalls {
					msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
				}
				in.Messages = append(in.Messages, msg)
			}
			res, err := Render(string(src), in)
			if err != nil {
				res = "ERROR: " + strings.ReplaceAll(err.Error(), "\n", " ")
			}
			os.WriteFile(filepath.Join(out, strings.TrimSuffix(filepath.Base(f), ".jinja")+"."+name+".txt"), []byte(res), 0o644)
		}
	}
}
