package chattemplate

import (
	"encoding/json"
	"strings"
)

// gemma4ToolResponses tells whether src is one of the older Gemma 4
// templates, which read a tool's result only from the assistant turn
// that called it (message.tool_responses) and render a "tool" message
// as a turn of its own that the model was never taught. llama-server
// detects them the same way (its call syntax without the newer
// template's OpenAI Chat Completions handling of tool messages) and
// moves the results there (workaround::convert_tool_responses_gemma4).
func gemma4ToolResponses(src string) bool {
	return strings.Contains(src, "'<|tool_call>call:'") && !strings.Contains(src, "{#- OpenAI Chat Completions:")
}

// gemma4Turns folds each assistant turn with calls, the tool results
// after it and an answer after those (an assistant message with content
// and no calls) into one assistant message: its tool_calls, the results
// as tool_responses ({"name", "response"}: the call's function by
// order, else the result's tool_call_id; the content parsed as JSON
// where it is JSON), the answer as its content and its
// reasoning_content, as llama-server does for these templates.
func gemma4Turns(msgs []*dict) []*dict {
	str := func(d *dict, k string) string {
		v, _ := d.get(k)
		s, _ := v.(string)
		return s
	}
	calls := func(d *dict) *list {
		v, _ := d.get("tool_calls")
		l, _ := v.(*list)
		if l != nil && len(l.items) == 0 {
			return nil
		}
		return l
	}
	var out []*dict
	for i := 0; i < len(msgs); {
		m := msgs[i]
		tc := calls(m)
		if str(m, "role") != "assistant" || tc == nil {
			out = append(out, m)
			i++
			continue
		}
		turn := newDict()
		turn.set("role", "assistant")
		turn.set("tool_calls", tc)
		responses := &list{}
		for i++; i < len(msgs) && str(msgs[i], "role") == "tool"; i++ {
			r := msgs[i]
			var response any = str(r, "content")
			if c := []byte(str(r, "content")); json.Valid(c) {
				if v, err := fromJSON(c); err == nil {
					response = v
				}
			}
			name := ""
			if k := len(responses.items); k < len(tc.items) {
				if c, ok := tc.items[k].(*dict); ok {
					if fn, ok := c.get("function"); ok {
						if f, ok := fn.(*dict); ok {
							name = str(f, "name")
						}
					}
				}
			}
			if name == "" {
				name = str(r, "tool_call_id")
			}
			resp := newDict()
			resp.set("name", name)
			resp.set("response", response)
			responses.items = append(responses.items, resp)
		}
		if len(responses.items) > 0 {
			turn.set("tool_responses", responses)
		}
		if i < len(msgs) && str(msgs[i], "role") == "assistant" && calls(msgs[i]) == nil && str(msgs[i], "content") != "" {
			turn.set("content", str(msgs[i], "content"))
			i++
		}
		if r := str(m, "reasoning_content"); r != "" {
			turn.set("reasoning_content", r)
		}
		out = append(out, turn)
	}
	return out
}
