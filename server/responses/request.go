package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/media"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/openaisampling"
)

// Bounds of what a request may carry, OpenAI's where it has them.
const (
	maxInputItems        = 2048 // items of one request's input
	maxConversationItems = 8192 // items of a continued conversation, input included
	maxTools             = 128  // tools of one request
	maxMetadataKeys      = 16   // metadata pairs
	maxMetadataKey       = 64   // characters of a metadata key
	maxMetadataValue     = 512  // characters of a metadata value
	maxOutputTokens      = 1 << 20
	maxIDLength          = 256 // characters of an id or call_id
	// maxInputBytes bounds the text of a conversation (instructions,
	// messages, calls and their outputs): llama.cpp's tokenizer takes
	// minutes over a megabyte of some texts (1 MiB of one repeated letter
	// with the test models' vocabulary), holding a CPU the while.
	maxInputBytes = 256 << 10
)

// prepared is a validated request: its input items (normalized, with
// ids), the conversation a previous response left (history), and the
// generation request.
type prepared struct {
	req      *CreateRequest
	input    []Item
	history  []Item
	ireq     *infer.Request
	parallel bool
	// members are the namespace members among the tools, by the
	// qualified name the model calls them by.
	members map[string]qualified
}

// parse validates the request's own fields and normalizes its input; the
// history of previous_response_id comes from st (nil: nothing is stored).
func (h *Handler) parse(ctx context.Context, req *CreateRequest, owner string) (*prepared, error) {
	if req.Model == "" {
		return nil, invalid("model", "Missing required parameter: 'model'.")
	}
	if c := bytes.TrimSpace(req.Conversation); len(c) > 0 && string(c) != "null" {
		return nil, notSupported("conversation", "Conversations are not supported: continue a response with 'previous_response_id'.")
	}
	if c := bytes.TrimSpace(req.Prompt); len(c) > 0 && string(c) != "null" {
		return nil, notSupported("prompt", "Prompt templates are not supported.")
	}
	if req.Background && !req.storeOn() {
		return nil, invalid("background", "Background responses must be stored: 'background' requires 'store' to be true.")
	}
	if req.Background && req.Stream {
		return nil, notSupported("stream", "Streaming a background response is not supported: poll it with GET /v1/responses/{id}.")
	}
	if (req.Background || req.storeOn() && req.Store != nil) && h.Jobs == nil {
		return nil, notSupported("store", "Responses cannot be stored: the server has no data directory.")
	}
	if len(req.Metadata) > maxMetadataKeys {
		return nil, invalid("metadata", "Invalid 'metadata': too many properties. Expected an object with at most %d properties, but got %d.", maxMetadataKeys, len(req.Metadata))
	}
	for k, v := range req.Metadata {
		if utf8.RuneCountInString(k) > maxMetadataKey {
			return nil, invalid("metadata", "Invalid 'metadata': keys may be at most %d characters long.", maxMetadataKey)
		}
		if utf8.RuneCountInString(v) > maxMetadataValue {
			return nil, invalid("metadata", "Invalid 'metadata': values may be at most %d characters long (key %q).", maxMetadataValue, dialect.Trim(k))
		}
	}
	if len(req.PreviousResponseID) > maxIDLength {
		return nil, invalid("previous_response_id", "Invalid 'previous_response_id': too long.")
	}
	p := &prepared{req: req, parallel: req.ParallelToolCalls == nil || *req.ParallelToolCalls}
	var err error
	if p.input, err = normalize(req.Input, req.Model, h.Infer.Limits().Fetcher.Reader(ctx)); err != nil {
		return nil, err
	}
	if req.PreviousResponseID != "" {
		notFound := invalid("previous_response_id", "Previous response with id '%s' not found.", dialect.Trim(req.PreviousResponseID))
		notFound.Code = "previous_response_not_found"
		if h.Jobs == nil {
			return nil, notFound
		}
		chain, err := h.Jobs.ResponseChain(ctx, req.PreviousResponseID, owner)
		if errors.Is(err, jobs.ErrResponseNotFound) {
			return nil, notFound
		}
		if err != nil {
			return nil, internal(err)
		}
		if p.history, err = h.conversation(ctx, chain); err != nil {
			return nil, invalid("previous_response_id", "Previous response with id '%s' cannot be continued: %v", dialect.Trim(req.PreviousResponseID), err)
		}
	}
	if len(p.history)+len(p.input) > maxConversationItems {
		return nil, invalid("input", "The conversation is too long: %d items, at most %d.", len(p.history)+len(p.input), maxConversationItems)
	}
	return p, nil
}

func (r *CreateRequest) storeOn() bool { return r.Store == nil || *r.Store }

// normalize reads input: a string (one user message) or an array of
// items, each given an id and its content as parts. image reads image
// URLs (media.Fetcher.Reader).
func normalize(raw json.RawMessage, model string, image func(string) ([]byte, error)) ([]Item, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("input", "Missing required parameter: 'input'.")
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid("input", "Invalid 'input': %v", err)
		}
		return []Item{{Type: "message", ID: dialect.NewID("msg_"), Status: "completed", Role: "user", Content: parts("input_text", s)}}, nil
	}
	var raws []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &raws) != nil {
		return nil, invalid("input", "Invalid type for 'input': expected a string or an array of input items.")
	}
	if len(raws) == 0 {
		return nil, invalid("input", "Invalid 'input': expected a non-empty array.")
	}
	if len(raws) > maxInputItems {
		return nil, invalid("input", "Invalid 'input': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", maxInputItems, len(raws))
	}
	out := make([]Item, 0, len(raws))
	for i, r := range raws {
		p := fmt.Sprintf("input[%d]", i)
		var it Item
		if err := json.Unmarshal(r, &it); err != nil {
			return nil, invalid(p, "Invalid '%s': expected an input item object (%v).", p, err)
		}
		if len(it.ID) > maxIDLength || len(it.CallID) > maxIDLength {
			return nil, invalid(p, "Invalid '%s': id or call_id too long.", p)
		}
		if it.Type == "" && it.Role != "" {
			it.Type = "message"
		}
		switch it.Type {
		case "message":
			if err := normalizeMessage(&it, p, model, image); err != nil {
				return nil, err
			}
		case "function_call":
			if it.CallID == "" {
				return nil, invalid(p+".call_id", "Missing required parameter: '%s.call_id'.", p)
			}
			if !dialect.OpenAIToolName.MatchString(it.Name) {
				return nil, invalid(p+".name", "Invalid '%s.name': %q. Expected a function name.", p, dialect.Trim(it.Name))
			}
			if it.Namespace != "" && !dialect.OpenAIToolName.MatchString(it.Namespace) {
				return nil, invalid(p+".namespace", "Invalid '%s.namespace': %q. Expected a namespace name.", p, dialect.Trim(it.Namespace))
			}
			args := "{}"
			if it.Arguments != nil && strings.TrimSpace(*it.Arguments) != "" {
				args = strings.TrimSpace(*it.Arguments)
			}
			if args[0] != '{' || !json.Valid([]byte(args)) {
				return nil, invalid(p+".arguments", "Invalid '%s.arguments': expected a JSON object in a string.", p)
			}
			it = Item{Type: it.Type, ID: orID(it.ID, "fc_"), Status: "completed", CallID: it.CallID, Name: it.Name, Namespace: it.Namespace, Arguments: &args}
		case "function_call_output":
			if it.CallID == "" {
				return nil, invalid(p+".call_id", "Missing required parameter: '%s.call_id'.", p)
			}
			text, err := callOutput(it.Output, p+".output", model)
			if err != nil {
				return nil, err
			}
			js, _ := json.Marshal(text)
			it = Item{Type: it.Type, ID: orID(it.ID, "fco_"), Status: "completed", CallID: it.CallID, Output: js}
		case "reasoning":
			text, err := reasoningText(it, p)
			if err != nil {
				return nil, err
			}
			it = Item{Type: it.Type, ID: orID(it.ID, "rs_"), Summary: json.RawMessage("[]"), Content: parts("reasoning_text", text)}
		case "":
			return nil, invalid(p+".type", "Missing required parameter: '%s.type'.", p)
		default:
			return nil, notSupported(p+".type", "Invalid value for '%s.type': %q is not supported. Supported values are: 'message', 'function_call', 'function_call_output' and 'reasoning'.", p, dialect.Trim(it.Type))
		}
		out = append(out, it)
	}
	return out, nil
}

func orID(id, prefix string) string {
	if id == "" {
		return dialect.NewID(prefix)
	}
	return id
}

// parts is one text part of a type.
func parts(typ, text string) json.RawMessage {
	p := Part{Type: typ, Text: text}
	if typ == "output_text" {
		p.Annotations = json.RawMessage("[]")
	}
	js, _ := json.Marshal([]Part{p})
	return js
}

var roles = map[string]string{"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}

// normalizeMessage checks a message and makes its content parts.
func normalizeMessage(it *Item, p, model string, image func(string) ([]byte, error)) error {
	if _, ok := roles[it.Role]; !ok {
		return invalid(p+".role", "Invalid value for '%s.role': %q. Supported values are: 'user', 'assistant', 'system' and 'developer'.", p, dialect.Trim(it.Role))
	}
	typ := "input_text"
	if it.Role == "assistant" {
		typ = "output_text"
	}
	content := it.Content
	images, err := imageParts(content, p+".content", typ, image)
	if err != nil {
		return err
	}
	if images != nil {
		*it = Item{Type: "message", ID: orID(it.ID, "msg_"), Status: "completed", Role: it.Role, Content: images}
		return nil
	}
	text, err := contentText(content, p+".content", model)
	if err != nil {
		return err
	}
	*it = Item{Type: "message", ID: orID(it.ID, "msg_"), Status: "completed", Role: it.Role, Content: parts(typ, text)}
	return nil
}

// imageParts normalizes a user message's content that holds input_image
// parts: its text parts (as textType) and images, in their order, each
// image's data URL checked. An http(s) URL is fetched through image (only
// with --allow-image-urls) and kept as the data URL of what came, so that
// a continuation reads the same pixels without fetching again. nil when
// the content has no image: it is then one text part (contentText).
func imageParts(raw json.RawMessage, param, textType string, image func(string) ([]byte, error)) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	var ps []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &ps) != nil {
		return nil, nil
	}
	var part struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Refusal  string          `json:"refusal"`
		ImageURL json.RawMessage `json:"image_url"`
		FileID   string          `json:"file_id"`
		Detail   string          `json:"detail"`
	}
	has := false
	for _, r := range ps {
		part.Type = ""
		if json.Unmarshal(r, &part) == nil && part.Type == "input_image" {
			has = true
		}
	}
	if !has {
		return nil, nil
	}
	out := make([]Part, 0, len(ps))
	for j, r := range ps {
		pp := fmt.Sprintf("%s[%d]", param, j)
		part.Type, part.Text, part.Refusal, part.ImageURL, part.FileID, part.Detail = "", "", "", nil, "", ""
		if err := json.Unmarshal(r, &part); err != nil {
			return nil, invalid(pp, "Invalid content part '%s': expected an object with a type.", pp)
		}
		switch part.Type {
		case "input_image":
			if textType != "input_text" {
				return nil, invalid(pp+".type", "Invalid '%s.type': images may only be in user, system or developer messages.", pp)
			}
			var url string
			if len(part.ImageURL) > 0 && json.Unmarshal(part.ImageURL, &url) != nil {
				var obj struct {
					URL string `json:"url"`
				}
				json.Unmarshal(part.ImageURL, &obj)
				url = obj.URL
			}
			if url == "" {
				if part.FileID != "" {
					return nil, notSupported(pp+".file_id", "Files are not supported: send the image as a data URL in '%s.image_url'.", pp)
				}
				return nil, invalid(pp+".image_url", "Missing required parameter: '%s.image_url'.", pp)
			}
			data, err := image(url)
			if errors.Is(err, media.ErrRemoteURL) {
				return nil, notSupported(pp+".image_url", "Invalid '%s.image_url': %v.", pp, err)
			} else if err != nil {
				return nil, invalid(pp+".image_url", "Invalid '%s.image_url': %v.", pp, err)
			}
			if len(url) < 5 || !strings.EqualFold(url[:5], "data:") {
				url = media.DataURL(data)
			}
			out = append(out, Part{Type: "input_image", ImageURL: url, Detail: part.Detail})
		case "input_text", "output_text", "text":
			out = append(out, Part{Type: textType, Text: part.Text})
		case "refusal":
			out = append(out, Part{Type: textType, Text: part.Refusal})
		case "input_file":
			return nil, notSupported(pp, "File input is not supported: send the file's text as input_text.")
		case "input_audio":
			return nil, notSupported(pp, "Audio input is not supported here: send it to /v1/chat/completions as an input_audio part.")
		case "":
			return nil, invalid(pp+".type", "Missing required parameter: '%s.type'.", pp)
		default:
			return nil, invalid(pp+".type", "Invalid value for '%s.type': %q. Supported values are: 'input_text', 'output_text', 'refusal', 'input_image' and 'input_file'.", pp, dialect.Trim(part.Type))
		}
	}
	js, err := json.Marshal(out)
	return js, err
}

// itemMedia is a normalized message's text and its images placed in it
// (input_image parts, whose data URLs were checked by normalize).
func itemMedia(raw json.RawMessage, field string) (string, []infer.Media, []int) {
	var ps []Part
	if json.Unmarshal(raw, &ps) != nil {
		return itemText(raw), nil, nil
	}
	var text strings.Builder
	var imgs []infer.Media
	var offsets []int
	texts := 0
	for j, p := range ps {
		if p.Type == "input_image" {
			data, err := media.ImageURL(p.ImageURL)
			if err != nil {
				continue // checked when it came in
			}
			imgs = append(imgs, infer.Media{Data: data, Field: fmt.Sprintf("%s.content[%d]", field, j)})
			offsets = append(offsets, text.Len())
			continue
		}
		if texts > 0 {
			text.WriteByte('\n')
		}
		text.WriteString(p.Text)
		texts++
	}
	return text.String(), imgs, offsets
}

// contentText is a message's text: its content string or its text parts
// joined by newlines. Images, files and audio are refused: no model
// Tadpole serves takes them yet.
func contentText(raw json.RawMessage, param, model string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", invalid(param, "Missing required parameter: '%s'.", param)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", invalid(param, "Invalid '%s': %v", param, err)
		}
		return s, nil
	}
	var ps []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &ps) != nil {
		return "", invalid(param, "Invalid type for '%s': expected a string or an array of content parts.", param)
	}
	texts := make([]string, 0, len(ps))
	for j, r := range ps {
		pp := fmt.Sprintf("%s[%d]", param, j)
		var part struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Refusal string `json:"refusal"`
		}
		if err := json.Unmarshal(r, &part); err != nil {
			return "", invalid(pp, "Invalid content part '%s': expected an object with a type.", pp)
		}
		switch part.Type {
		case "input_text", "output_text", "text", "reasoning_text", "summary_text":
			texts = append(texts, part.Text)
		case "refusal":
			texts = append(texts, part.Refusal)
		case "input_image":
			return "", notSupported(pp, "Image input is not supported: model '%s' does not support images.", dialect.Trim(model))
		case "input_file":
			return "", notSupported(pp, "File input is not supported: model '%s' takes text only.", dialect.Trim(model))
		case "input_audio":
			return "", notSupported(pp, "Audio input is not supported: model '%s' takes text only.", dialect.Trim(model))
		case "":
			return "", invalid(pp+".type", "Missing required parameter: '%s.type'.", pp)
		default:
			return "", invalid(pp+".type", "Invalid value for '%s.type': %q. Supported values are: 'input_text', 'output_text', 'refusal', 'input_image' and 'input_file'.", pp, dialect.Trim(part.Type))
		}
	}
	return strings.Join(texts, "\n"), nil
}

// callOutput is a function call output: a string or text parts.
func callOutput(raw json.RawMessage, param, model string) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", invalid(param, "Missing required parameter: '%s'.", param)
	}
	return contentText(raw, param, model)
}

// reasoningText is a reasoning item's text: its content, else its
// summary.
func reasoningText(it Item, p string) (string, error) {
	for _, f := range []struct {
		raw   json.RawMessage
		param string
	}{{it.Content, p + ".content"}, {it.Summary, p + ".summary"}} {
		raw := bytes.TrimSpace(f.raw)
		if len(raw) == 0 || string(raw) == "null" || string(raw) == "[]" {
			continue
		}
		return contentText(raw, f.param, "")
	}
	return "", nil
}

// itemText is the text of a normalized item's parts.
func itemText(raw json.RawMessage) string {
	var ps []Part
	if json.Unmarshal(raw, &ps) != nil {
		var s string
		json.Unmarshal(raw, &s)
		return s
	}
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = p.Text
	}
	return strings.Join(texts, "\n")
}

// messages turns a conversation's items into chat turns: reasoning
// becomes the next assistant turn's thinking, function calls join the
// assistant turn before them, and every function call output must answer
// a call made earlier in the conversation.
func messages(items []Item, offset int) ([]infer.Message, infer.MediaInput, error) {
	var out []infer.Message
	var mi infer.MediaInput
	names := map[string]string{} // call id → function name
	thinking := ""
	assistantOpen := false // the last turn is an assistant's that calls may join
	for i, it := range items {
		p := fmt.Sprintf("input[%d]", i-offset)
		switch it.Type {
		case "message":
			role := roles[it.Role]
			text, imgs, offsets := itemMedia(it.Content, p)
			for k, img := range imgs {
				mi.AddMessageMedia(len(out), offsets[k], img)
			}
			m := infer.Message{Role: role, Content: text}
			if role == "assistant" {
				m.Thinking, thinking = thinking, ""
			}
			out = append(out, m)
			assistantOpen = role == "assistant"
		case "reasoning":
			thinking += itemText(it.Content)
		case "function_call":
			args := "{}"
			if it.Arguments != nil {
				args = *it.Arguments
			}
			// A namespace member's call, under the name the model
			// knows it by.
			name := qualify(it.Namespace, it.Name)
			call := infer.ToolCall{ID: it.CallID, Name: name, Arguments: json.RawMessage(args)}
			if !assistantOpen {
				out = append(out, infer.Message{Role: "assistant", Thinking: thinking})
				thinking, assistantOpen = "", true
			}
			last := &out[len(out)-1]
			last.ToolCalls = append(last.ToolCalls, call)
			names[it.CallID] = name
		case "function_call_output":
			name, ok := names[it.CallID]
			if !ok {
				return nil, mi, invalid(p+".call_id", "No tool call found for function call output with call_id %s.", dialect.Trim(it.CallID))
			}
			var text string
			json.Unmarshal(it.Output, &text)
			out = append(out, infer.Message{Role: "tool", Content: text, ToolCallID: it.CallID, ToolName: name})
			assistantOpen = false
		}
	}
	return out, mi, nil
}

// build makes the generation request.
func (h *Handler) build(p *prepared) error {
	req := p.req
	var msgs []infer.Message
	if req.Instructions != nil && *req.Instructions != "" {
		msgs = append(msgs, infer.Message{Role: "system", Content: *req.Instructions})
	}
	conv, mi, err := messages(append(append([]Item{}, p.history...), p.input...), len(p.history))
	if err != nil {
		return err
	}
	if len(msgs) > 0 && len(mi.MessageMedia) > 0 { // the instructions come first
		mi.MessageMedia = append(make([][]infer.MediaRef, len(msgs)), mi.MessageMedia...)
	}
	msgs = append(msgs, conv...)
	size := 0
	for _, m := range msgs {
		size += len(m.Content) + len(m.Thinking)
		for _, c := range m.ToolCalls {
			size += len(c.Arguments)
		}
	}
	if size > maxInputBytes {
		return invalid("input", "The input is too large: %d bytes of text, at most %d.", size, maxInputBytes)
	}
	ts, err := checkTools(req.Tools, req.ToolChoice, req.Model)
	if err != nil {
		return err
	}
	p.members = ts.members
	tools, choice, name := ts.tools, ts.choice, ts.forced
	gram, err := formatGrammar(req.Text)
	if err != nil {
		return err
	}
	if choice == "required" && gram != "" {
		return invalid("text.format", "A JSON output format cannot be combined with a required tool call (tool_choice).")
	}
	if req.MaxOutputTokens != nil && (*req.MaxOutputTokens < 1 || *req.MaxOutputTokens > maxOutputTokens) {
		return invalid("max_output_tokens", "Invalid 'max_output_tokens': %d. Expected a value between 1 and %d.", *req.MaxOutputTokens, maxOutputTokens)
	}
	var think *bool
	vars := map[string]any{}
	if req.Reasoning != nil && req.Reasoning.Effort != nil {
		switch e := *req.Reasoning.Effort; e {
		case "none":
			off := false
			think = &off
		case "minimal", "low", "medium", "high", "xhigh":
			on := true
			think = &on
			vars["reasoning_effort"] = e
		default:
			return invalid("reasoning.effort", "Invalid value for 'reasoning.effort': %q. Supported values are: 'none', 'minimal', 'low', 'medium', 'high' and 'xhigh'.", dialect.Trim(e))
		}
	}
	base := ollamaapi.DefaultOptions()
	openaisampling.Defaults(&base)
	base.NumPredict = -2 // without a limit the answer may fill the context
	opts, err := h.Infer.ModelOptionsFrom(req.Model, base)
	if err != nil {
		return inferError(err, req.Model)
	}
	smp := openaisampling.Fields{Temperature: req.Temperature, TopP: req.TopP}
	if err := smp.Apply(&opts); err != nil {
		return dialect.FromInfer(err)
	}
	if req.MaxOutputTokens != nil {
		opts.NumPredict = int(*req.MaxOutputTokens)
	}
	truncate := false // "disabled", OpenAI's default: a prompt past the context is a 400
	switch req.Truncation {
	case "", "disabled":
	case "auto":
		truncate = true // drop what does not fit from the start (Ollama's truncation)
	default:
		return invalid("truncation", "Invalid value: '%s'. Supported values are: 'auto' and 'disabled'.", req.Truncation)
	}
	lora, err := infer.ParseLoRA(req.LoRA)
	if err != nil {
		return invalid("lora", "%v", err)
	}
	p.ireq = &infer.Request{
		LoRA:     lora,
		Truncate: &truncate,
		Model:    req.Model, Chat: true, Messages: msgs, MediaInput: mi, Options: opts, Grammar: gram,
		Tools: tools, ToolChoice: choice, ToolName: name, Think: think, TemplateVars: vars,
	}
	return nil
}

// formatGrammar is the grammar of text.format (dialect.FormatGrammar); a
// json_schema format must carry its schema.
func formatGrammar(t *TextConfig) (string, error) {
	if t == nil || t.Format == nil {
		return "", nil
	}
	f := t.Format
	return dialect.FormatGrammar("text.format", "text.format.schema", dialect.OutputFormat{Type: f.Type, Name: f.Name, Schema: f.Schema}, false)
}
