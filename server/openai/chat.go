package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/media"
	"github.com/tadpole-llm/tadpole/server/openaisampling"
)

// maxTopLogprobs bounds top_logprobs, as OpenAI does.
const maxTopLogprobs = 20

// roles maps OpenAI's message roles to the chat template's: developer
// messages are system messages, legacy function results are tool results.
var roles = map[string]string{
	"system": "system", "developer": "system", "user": "user",
	"assistant": "assistant", "tool": "tool", "function": "tool",
}

// prepareChat validates a chat request and turns it into one generation
// request per choice (n of them).
func (h *Handler) prepareChat(ctx context.Context, req *ChatRequest) ([]*infer.Request, int, error) {
	if req.Model == "" {
		return nil, 0, invalid("model", "you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return nil, 0, invalid("messages", "Invalid 'messages': expected a non-empty array.")
	}
	msgs, mi, err := messages(req.Messages, req.Model, h.Infer.Limits().Fetcher.Reader(ctx))
	if err != nil {
		return nil, 0, err
	}
	tools, choice, name, err := checkTools(req.Tools, req.ToolChoice)
	if err != nil {
		return nil, 0, err
	}
	gram, err := formatGrammar(req.ResponseFormat)
	if err != nil {
		return nil, 0, err
	}
	maxTokens, param := req.MaxCompletionTokens, "max_completion_tokens"
	if maxTokens == nil {
		maxTokens, param = req.MaxTokens, "max_tokens"
	}
	if maxTokens != nil && *maxTokens < 1 {
		return nil, 0, invalid(param, "Invalid '%s': %d. Expected a value >= 1.", param, *maxTokens)
	}
	top := 0
	if req.TopLogprobs != nil {
		top = *req.TopLogprobs
		if top < 0 || top > maxTopLogprobs {
			return nil, 0, invalid("top_logprobs", "Invalid 'top_logprobs': %d. Expected a value between 0 and %d.", top, maxTopLogprobs)
		}
		if top > 0 && !req.Logprobs {
			return nil, 0, invalid("top_logprobs", "'top_logprobs' requires 'logprobs' to be true.")
		}
	}
	for _, m := range req.Modalities {
		if m != "text" {
			return nil, 0, notSupported("modalities", "Invalid value for 'modalities': %q. Only 'text' output is supported.", m)
		}
	}
	if a := bytes.TrimSpace(req.Audio); len(a) > 0 && string(a) != "null" {
		return nil, 0, notSupported("audio", "Audio output is not supported.")
	}
	// Without a limit, a chat answer may fill the context (OpenAI's
	// meaning), unless the model's parameters set num_predict.
	opts, err := h.options(req.Model, -2)
	if err != nil {
		return nil, 0, err
	}
	smp := openaisampling.Fields{
		Temperature: req.Temperature, TopP: req.TopP, FrequencyPenalty: req.FrequencyPenalty, PresencePenalty: req.PresencePenalty,
		Stop: req.Stop, Seed: req.Seed, LogitBias: req.LogitBias,
	}
	n, err := sampling{Fields: smp, N: req.N}.apply(&opts)
	if err != nil {
		return nil, 0, err
	}
	if maxTokens != nil {
		opts.NumPredict = *maxTokens
	}
	if choice == "required" && gram != "" {
		return nil, 0, invalid("response_format", "A response_format cannot be combined with a required tool call (tool_choice).")
	}
	vars := map[string]any{}
	for k, v := range req.ChatTemplateKwargs {
		vars[k] = v
	}
	var think *bool
	if e, ok := vars["enable_thinking"].(bool); ok {
		think = &e
		delete(vars, "enable_thinking")
	}
	switch req.ReasoningEffort {
	case "":
	case "none":
		off := false
		think = &off
	case "minimal", "low", "medium", "high", "xhigh":
		vars["reasoning_effort"] = req.ReasoningEffort
	default:
		return nil, 0, invalid("reasoning_effort", "Invalid value for 'reasoning_effort': %q. Supported values are: 'none', 'minimal', 'low', 'medium', 'high' and 'xhigh'.", req.ReasoningEffort)
	}
	lora, err := infer.ParseLoRA(req.LoRA)
	if err != nil {
		return nil, 0, invalid("lora", "%v", err)
	}
	ireq := &infer.Request{
		LoRA: lora,
		// OpenAI refuses a prompt past the context (400
		// context_length_exceeded) rather than cutting it.
		Truncate: &noTruncate,
		Model:    req.Model, Chat: true, Messages: msgs, MediaInput: mi, Options: opts, Grammar: gram, LogitBias: smp.Bias(),
		Logprobs: req.Logprobs, TopLogprobs: top,
		Tools: tools, ToolChoice: choice, ToolName: name, Think: think, TemplateVars: vars,
	}
	return choices(ireq, n), n, nil
}

// messages converts the request's messages and their images and audio.
func messages(msgs []ChatMessage, model string, image func(string) ([]byte, error)) ([]infer.Message, infer.MediaInput, error) {
	var mi infer.MediaInput
	out := make([]infer.Message, 0, len(msgs))
	names := map[string]string{} // tool call id → function name
	for i, m := range msgs {
		role, ok := roles[m.Role]
		if !ok {
			return nil, mi, invalid(fmt.Sprintf("messages[%d].role", i),
				"Invalid value for 'messages[%d].role': %q. Supported values are: 'system', 'developer', 'user', 'assistant', 'tool' and 'function'.", i, m.Role)
		}
		content, parts, err := messageContent(i, m, image)
		if err != nil {
			return nil, mi, err
		}
		for _, p := range parts {
			mi.AddMessageMedia(len(out), p.offset, p.media)
		}
		msg := infer.Message{Role: role, Content: content}
		if role == "assistant" {
			msg.Thinking = m.ReasoningContent
		}
		if tc := bytes.TrimSpace(m.ToolCalls); len(tc) > 0 && string(tc) != "null" {
			var calls []ToolCall
			if m.Role != "assistant" || json.Unmarshal(tc, &calls) != nil {
				return nil, mi, invalid(fmt.Sprintf("messages[%d].tool_calls", i), "tool_calls must be an array of function calls, on assistant messages only")
			}
			for j, c := range calls {
				p := fmt.Sprintf("messages[%d].tool_calls[%d].function", i, j)
				if c.Function.Name == "" {
					return nil, mi, invalid(p+".name", "Missing required parameter: '%s.name'.", p)
				}
				args := json.RawMessage(strings.TrimSpace(c.Function.Arguments))
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				if args[0] != '{' || !json.Valid(args) {
					return nil, mi, invalid(p+".arguments", "Invalid '%s.arguments': expected a JSON object in a string.", p)
				}
				msg.ToolCalls = append(msg.ToolCalls, infer.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
				names[c.ID] = c.Function.Name
			}
		}
		if role == "tool" {
			msg.ToolCallID = m.ToolCallID
			msg.ToolName = m.Name // legacy function messages name their function
			if msg.ToolName == "" {
				msg.ToolName = names[m.ToolCallID]
			}
		}
		out = append(out, msg)
	}
	return out, mi, nil
}

// mediaPart is an image or audio part of a message and where it goes in
// the message's text.
type mediaPart struct {
	offset int
	media  infer.Media
}

// messageContent is a message's text: its content string, or its text
// parts joined by newlines; its image_url parts (data URLs) and
// input_audio parts (base64 WAV) are its media, placed where they came
// among the text. Whether the model takes them is checked when the
// request starts (infer.Request.CheckMedia). File parts are refused.
func messageContent(i int, m ChatMessage, image func(string) ([]byte, error)) (string, []mediaPart, error) {
	param := fmt.Sprintf("messages[%d].content", i)
	raw := bytes.TrimSpace(m.Content)
	if len(raw) == 0 || string(raw) == "null" {
		if m.Role == "assistant" || m.Role == "tool" || m.Role == "function" {
			return "", nil, nil
		}
		return "", nil, invalid(param, "Missing required parameter: '%s'.", param)
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", nil, invalid(param, "Invalid '%s': %v", param, err)
		}
		return s, nil, nil
	case '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", nil, invalid(param, "Invalid '%s': %v", param, err)
		}
		var text strings.Builder
		var found []mediaPart
		texts := 0
		addText := func(s string) {
			if texts > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(s)
			texts++
		}
		for j, p := range parts {
			pp := fmt.Sprintf("%s[%d]", param, j)
			var cp ContentPart
			if err := json.Unmarshal(p, &cp); err != nil {
				return "", nil, invalid(pp, "Invalid content part '%s': expected an object with a type.", pp)
			}
			switch cp.Type {
			case "text":
				addText(cp.Text)
			case "refusal":
				addText(cp.Refusal)
			case "image_url", "input_image":
				data, err := imagePart(pp, cp.ImageURL, image)
				if err != nil {
					return "", nil, err
				}
				found = append(found, mediaPart{text.Len(), infer.Media{Data: data, Field: pp}})
			case "input_audio":
				if cp.InputAudio == nil {
					return "", nil, invalid(pp+".input_audio", "Missing required parameter: '%s.input_audio'.", pp)
				}
				data, err := mediaData(pp+".input_audio", func() ([]byte, error) { return media.AudioData(cp.InputAudio.Data, cp.InputAudio.Format) })
				if err != nil {
					return "", nil, err
				}
				found = append(found, mediaPart{text.Len(), infer.Media{Data: data, Audio: true, Field: pp}})
			case "file":
				return "", nil, notSupported(pp, "File input is not supported: send a file's text as a text part.")
			case "":
				return "", nil, invalid(pp+".type", "Missing required parameter: '%s.type'.", pp)
			default:
				return "", nil, invalid(pp+".type", "Invalid value for '%s.type': %q. Supported values are: 'text', 'image_url', 'input_audio', 'file' and 'refusal'.", pp, cp.Type)
			}
		}
		return text.String(), found, nil
	}
	return "", nil, invalid(param, "Invalid type for '%s': expected a string or an array of content parts.", param)
}

// imagePart reads an image_url part's image: {"url": "data:…"} or the
// URL alone, through image (the request's media.Fetcher.Reader: an
// http(s) URL is fetched only with --allow-image-urls).
func imagePart(pp string, raw json.RawMessage, image func(string) ([]byte, error)) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	var url string
	if len(raw) > 0 && raw[0] == '"' {
		_ = json.Unmarshal(raw, &url)
	} else if len(raw) > 0 && raw[0] == '{' {
		var u struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, invalid(pp+".image_url", "Invalid '%s.image_url': expected an object with a url.", pp)
		}
		url = u.URL
	}
	if url == "" {
		return nil, invalid(pp+".image_url.url", "Missing required parameter: '%s.image_url.url'.", pp)
	}
	return mediaData(pp+".image_url.url", func() ([]byte, error) { return image(url) })
}

// mediaData runs a media decoder, answering its error as a 400 about
// param.
func mediaData(param string, decode func() ([]byte, error)) ([]byte, error) {
	data, err := decode()
	if errors.Is(err, media.ErrRemoteURL) {
		return nil, notSupported(param, "Invalid '%s': %v.", param, err)
	}
	if err != nil {
		return nil, invalid(param, "Invalid '%s': %v.", param, err)
	}
	return data, nil
}

// templateTool is a tool as chat templates see it, as llama-server
// passes it: type, then the function's name, description ("" when not
// given) and parameters ({} when not given), nothing else (no "strict").
func templateTool(f *FunctionTool) any {
	params := bytes.TrimSpace(f.Parameters)
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	return struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}{"function", function{f.Name, f.Description, params}}
}

// checkTools validates tools and tool_choice and returns the tools as
// template objects, the choice ("auto", "none" or "required") and the
// function a named choice forces. A parameters schema the grammar cannot
// use is refused: a forced call could not be held to it. Two tools of
// one name are refused too, as the Responses and Anthropic dialects
// refuse them: a call of that name could not say which it meant.
func checkTools(tools []Tool, choice json.RawMessage) ([]json.RawMessage, string, string, error) {
	names := map[string]bool{}
	var out []json.RawMessage
	for i, t := range tools {
		p := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return nil, "", "", invalid(p+".type", "Invalid value for '%s.type': %q. Supported values are: 'function'.", p, t.Type)
		}
		if t.Function == nil {
			return nil, "", "", invalid(p+".function", "Missing required parameter: '%s.function'.", p)
		}
		if err := dialect.CheckToolName(p+".function.name", t.Function.Name); err != nil {
			return nil, "", "", err
		}
		if names[t.Function.Name] {
			return nil, "", "", invalid(p+".function.name", "Invalid '%s.function.name': %q is the name of an earlier tool: tool names must be unique.", p, dialect.Trim(t.Function.Name))
		}
		if _, err := dialect.ToolParameters(p+".function.parameters", t.Function.Parameters); err != nil {
			return nil, "", "", err
		}
		raw, err := json.Marshal(templateTool(t.Function))
		if err != nil {
			return nil, "", "", invalid(p, "Invalid '%s': %v", p, err)
		}
		if err := infer.CheckTools([]json.RawMessage{raw}); err != nil {
			return nil, "", "", invalid(p+".function.parameters", "Invalid '%s.function.parameters': %v", p, err)
		}
		names[t.Function.Name] = true
		out = append(out, raw)
	}
	raw := bytes.TrimSpace(choice)
	if len(raw) == 0 || string(raw) == "null" {
		return out, "auto", "", nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "none", "auto":
		case "required":
			if len(tools) == 0 {
				return nil, "", "", invalid("tool_choice", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
			}
		default:
			return nil, "", "", invalid("tool_choice", "Invalid value for 'tool_choice': %q. Supported values are: 'none', 'auto' and 'required'.", mode)
		}
		return out, mode, "", nil
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type != "function" || named.Function.Name == "" {
		return nil, "", "", invalid("tool_choice", "Invalid 'tool_choice': expected 'none', 'auto', 'required' or {\"type\": \"function\", \"function\": {\"name\": ...}}.")
	}
	if !names[named.Function.Name] {
		return nil, "", "", invalid("tool_choice", "Invalid 'tool_choice': no tool named %q in 'tools'.", named.Function.Name)
	}
	return out, "required", named.Function.Name, nil
}

// formatGrammar is the grammar of response_format (dialect.FormatGrammar);
// a json_schema without its schema is any JSON object.
func formatGrammar(rf *ResponseFormat) (string, error) {
	if rf == nil {
		return "", nil
	}
	f := dialect.OutputFormat{Type: rf.Type}
	if rf.Type == "json_schema" {
		if rf.JSONSchema == nil {
			return "", invalid("response_format.json_schema", "Missing required parameter: 'response_format.json_schema'.")
		}
		f.Name, f.Schema = rf.JSONSchema.Name, rf.JSONSchema.Schema
	}
	return dialect.FormatGrammar("response_format", "response_format.json_schema.schema", f, true)
}

// noTruncate is infer.Request.Truncate for the OpenAI door.
var noTruncate = false
