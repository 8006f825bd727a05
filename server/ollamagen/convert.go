package ollamagen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/tadpole-llm/tadpole/engine/grammar"

	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/media"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// thinkOption reads Ollama's think: true, false, or a level ("high",
// "medium", "low", for models that take a reasoning effort; "max" where
// the model's template takes it), which turns
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
		case "high", "medium", "low", "max": // "max": where the model's template takes it (infer checks)
			on := true
			return &on, map[string]any{"reasoning_effort": level}, nil
		}
	}
	return nil, nil, errorf(http.StatusBadRequest, "invalid think value %s: want true, false, \"high\", \"medium\", \"low\" or \"max\"", raw)
}

// tools converts a request's tools into the OpenAI-shaped objects chat
// templates take, checking their parameter schemas.
func tools(ts []ollamaapi.Tool) ([]json.RawMessage, error) {
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
		raw, err := json.Marshal(ollamaapi.Tool{Type: "function", Function: t.Function})
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

var chatRoles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

// ChatMessages converts an Ollama chat's messages, checking their roles,
// and their images (base64, or data URLs whose type must match the
// data), which go before each message's text as Ollama places them.
// Whether the model takes images, and the limits on them, are checked
// when the request starts (infer.Request.CheckMedia).
func ChatMessages(ms []ollamaapi.Message) ([]infer.Message, infer.MediaInput, error) {
	var mi infer.MediaInput
	out := make([]infer.Message, 0, len(ms))
	for i, m := range ms {
		if !chatRoles[m.Role] {
			return nil, mi, errorf(http.StatusBadRequest, "messages[%d]: invalid role %q (system, user, assistant or tool)", i, m.Role)
		}
		msg, err := message(i, m)
		if err != nil {
			return nil, mi, err
		}
		for j, img := range m.Images {
			field := fmt.Sprintf("messages[%d].images[%d]", i, j)
			data, err := imageData(field, img)
			if err != nil {
				return nil, mi, err
			}
			mi.AddMessageMedia(i, 0, infer.Media{Data: data, Field: field})
		}
		out = append(out, msg)
	}
	return out, mi, nil
}

// Images converts /api/generate's images, which go before the prompt.
func Images(imgs []string) ([]infer.Media, error) {
	var out []infer.Media
	for j, img := range imgs {
		field := fmt.Sprintf("images[%d]", j)
		data, err := imageData(field, img)
		if err != nil {
			return nil, err
		}
		out = append(out, infer.Media{Data: data, Field: field})
	}
	return out, nil
}

// imageData decodes one of Ollama's images: base64, with or without a
// data URL prefix.
func imageData(field, s string) ([]byte, error) {
	data, err := media.ImageData(s)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%s: %v", field, err)
	}
	return data, nil
}

// message converts an Ollama chat message.
func message(i int, m ollamaapi.Message) (infer.Message, error) {
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

// ToolCalls converts parsed calls into Ollama's shape.
func ToolCalls(calls []chatparse.ToolCall) []ollamaapi.ToolCall {
	var out []ollamaapi.ToolCall
	for _, c := range calls {
		out = append(out, ollamaapi.ToolCall{ID: c.ID, Function: ollamaapi.ToolCallFunction{Index: c.Index, Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}

// formatGrammar turns Ollama's format ("json" or a JSON schema) into a
// grammar.
func formatGrammar(format []byte) (string, error) {
	g, err := grammar.FromFormat(format)
	if err != nil {
		return "", errorf(http.StatusBadRequest, "%v", err)
	}
	return g, nil
}

// KeepAlive is a request's keep_alive as infer takes it.
func KeepAlive(d *ollamaapi.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	return &d.Duration
}

// loadReason is the done_reason of a load-only request.
func loadReason(keepAlive *time.Duration) string {
	if keepAlive != nil && *keepAlive == 0 {
		return "unload"
	}
	return "load"
}

// Metrics are Ollama's statistics of a request that started at start,
// waited load for its model and ended with ev.
func Metrics(ev infer.Event, start time.Time, load time.Duration) ollamaapi.Metrics {
	return ollamaapi.Metrics{
		TotalDuration: time.Since(start), LoadDuration: load,
		PromptEvalCount: ev.Stats.PromptEvalCount, PromptEvalDuration: ev.Stats.PromptEvalDuration,
		EvalCount: ev.Stats.EvalCount, EvalDuration: ev.Stats.EvalDuration,
	}
}

func errorf(code int, format string, args ...any) error {
	return dialect.Errorf(code, format, args...)
}

func inferError(err error) error { return dialect.FromInfer(err) }
