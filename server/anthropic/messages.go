package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/media"
)

// systemText is the system prompt: a string, or text blocks joined by
// newlines.
func systemText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	blocks, err := contentBlocks("system", raw)
	if err != nil {
		return "", err
	}
	texts := make([]string, 0, len(blocks))
	for i, b := range blocks {
		if b.Type != "text" {
			return "", invalid("system[%d].type: %q is not allowed: system blocks are text blocks", i, b.Type)
		}
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// contentBlocks reads content: a string is one text block.
func contentBlocks(field string, raw json.RawMessage) ([]Block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("%s: Field required", field)
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid("%s: %v", field, err)
		}
		return []Block{{Type: "text", Text: s}}, nil
	}
	var blocks []Block
	if raw[0] != '[' || json.Unmarshal(raw, &blocks) != nil {
		return nil, invalid("%s: expected a string or an array of content blocks", field)
	}
	return blocks, nil
}

// converter turns Anthropic's turns into chat messages: an assistant
// turn is one message (its thinking, text and tool calls); a user turn's
// tool_result blocks become tool messages and its text user messages, in
// their order.
type converter struct {
	model string
	out   []infer.Message
	media infer.MediaInput  // the images of out's messages
	calls map[string]string // tool_use id → tool name, of the turns so far
	// image reads a url image source (media.Fetcher.Reader: fetched only
	// with --allow-image-urls).
	image func(string) ([]byte, error)
}

// conversation converts and checks the messages, and gives their images.
func conversation(msgs []MessageParam, model string, image func(string) ([]byte, error)) ([]infer.Message, infer.MediaInput, error) {
	c := &converter{model: model, calls: map[string]string{}, image: image}
	for i, m := range msgs {
		field := fmt.Sprintf("messages[%d]", i)
		blocks, err := contentBlocks(field+".content", m.Content)
		if err != nil {
			return nil, infer.MediaInput{}, err
		}
		switch m.Role {
		case "user":
			err = c.user(field, blocks)
		case "assistant":
			err = c.assistant(field, blocks)
		case "system":
			if err = systemPlacement(msgs, i); err == nil {
				err = c.system(field, blocks, i > 0 && msgs[i-1].Role == "system")
			}
		default:
			err = invalid("%s.role: %q is not one of 'user', 'assistant' and 'system'", field, m.Role)
		}
		if err != nil {
			return nil, infer.MediaInput{}, err
		}
	}
	return c.out, c.media, nil
}

// systemPlacement checks a mid-conversation system message against the
// Messages API's placement rules: never first (the top-level system field
// is for that), right after a user turn (Tadpole runs no server tools,
// so no assistant turn ends in one), and last or right before an
// assistant turn. Consecutive system messages are one section, placed as
// a whole. The wordings are the API's where it has them.
func systemPlacement(msgs []MessageParam, i int) error {
	first, last := i, i
	for first > 0 && msgs[first-1].Role == "system" {
		first--
	}
	for last+1 < len(msgs) && msgs[last+1].Role == "system" {
		last++
	}
	field := fmt.Sprintf("messages[%d]", i)
	if first == 0 {
		return invalid("%s.role: a system message cannot be the first message: put the system prompt in the top-level system field", field)
	}
	if msgs[first-1].Role != "user" {
		return invalid("%s.role: role 'system' must follow a 'user' message or an 'assistant' message ending in a server tool result (it follows %q)", field, msgs[first-1].Role)
	}
	if last+1 < len(msgs) && msgs[last+1].Role != "assistant" {
		return invalid("%s.role: a system message must be the last message or be followed by an 'assistant' message (it is followed by %q)", field, msgs[last+1].Role)
	}
	return nil
}

// system converts a mid-conversation system message: its text blocks
// become a system turn at that place in the chat (the chat template
// renders it where it stands, as llama-server and Ollama do), joined to
// the system turn before it when the message before was a system
// message too (the API reads consecutive ones as one section).
func (c *converter) system(field string, blocks []Block, join bool) error {
	texts := make([]string, 0, len(blocks))
	for j, b := range blocks {
		if b.Type != "text" {
			return invalid("%s.content[%d].type: %q is not allowed: system messages hold text blocks only", field, j, b.Type)
		}
		texts = append(texts, b.Text)
	}
	text := strings.Join(texts, "\n")
	if n := len(c.out); join && n > 0 && c.out[n-1].Role == "system" {
		c.out[n-1].Content += "\n" + text
		return nil
	}
	c.out = append(c.out, infer.Message{Role: "system", Content: text})
	return nil
}

// user converts a user turn: its text, images, documents and search
// results make user messages, each tool_result a tool message, in their
// order.
func (c *converter) user(field string, blocks []Block) error {
	if len(blocks) == 0 {
		return invalid("%s.content: a user message needs at least one content block", field)
	}
	var p parts
	for j, b := range blocks {
		bf := fmt.Sprintf("%s.content[%d]", field, j)
		if b.Type != "tool_result" {
			if err := c.content(bf, b, &p, "text, image, document, search_result and tool_result blocks"); err != nil {
				return err
			}
			continue
		}
		msg, tp, err := c.toolResult(bf, b)
		if err != nil {
			return err
		}
		if !p.empty() {
			c.emit(infer.Message{Role: "user"}, &p)
			p = parts{}
		}
		c.emit(msg, &tp)
	}
	if !p.empty() {
		c.emit(infer.Message{Role: "user"}, &p)
	}
	return nil
}

// parts gathers one message's text and images, block by block: texts
// are joined by newlines, and each image sits where the text gathered
// before it ends.
type parts struct {
	prefix string // written before the texts ("Error: " of a failed tool)
	texts  []string
	images []imageAt
}

func (p *parts) text(s string) { p.texts = append(p.texts, s) }

func (p *parts) image(m infer.Media) {
	p.images = append(p.images, imageAt{len(p.prefix) + len(strings.Join(p.texts, "\n")), m})
}

func (p *parts) empty() bool { return len(p.texts) == 0 && len(p.images) == 0 }

// emit appends msg with the gathered parts as its content and images.
func (c *converter) emit(msg infer.Message, p *parts) {
	msg.Content = p.prefix + strings.Join(p.texts, "\n")
	for _, im := range p.images {
		c.media.AddMessageMedia(len(c.out), im.offset, im.media)
	}
	c.out = append(c.out, msg)
}

// imageAt is an image of a message and its offset in the text.
type imageAt struct {
	offset int
	media  infer.Media
}

// content reads a block of a user turn or of a tool result: text,
// image, document or search_result; allowed names them for the error
// of any other type.
func (c *converter) content(field string, b Block, p *parts, allowed string) error {
	switch b.Type {
	case "text":
		p.text(b.Text)
	case "image":
		data, err := c.imageBlock(field, b)
		if err != nil {
			return err
		}
		p.image(infer.Media{Data: data, Field: field})
	case "document":
		return c.document(field, b, p)
	case "search_result":
		return c.searchResult(field, b, p)
	default:
		return c.refuse(field, b.Type, allowed)
	}
	return nil
}

// source reads an image's or a document's source object.
func source(field string, raw json.RawMessage) (Source, error) {
	var src Source
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return src, invalid("%s.source: Field required", field)
	}
	if raw[0] != '{' || json.Unmarshal(raw, &src) != nil {
		return src, invalid("%s.source: expected an object", field)
	}
	return src, nil
}

// imageBlock reads an image block's base64 source, whose media_type
// must match the data, or its url source (fetched only with
// --allow-image-urls). Whether the model takes images is checked when
// the request starts (infer.Request.CheckMedia).
func (c *converter) imageBlock(field string, b Block) ([]byte, error) {
	src, err := source(field, b.Source)
	if err != nil {
		return nil, err
	}
	switch src.Type {
	case "base64":
	case "url":
		if src.URL == "" {
			return nil, invalid("%s.source.url: Field required", field)
		}
		if u := strings.ToLower(src.URL); !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, invalid("%s.source.url: expected an http(s) URL (send image data as a base64 source)", field)
		}
		data, err := c.image(src.URL)
		if errors.Is(err, media.ErrRemoteURL) {
			return nil, invalid("%s.source.type: \"url\" image sources are not fetched: send the image as base64 data", field)
		}
		if err != nil {
			return nil, invalid("%s.source.url: %v", field, err)
		}
		return data, nil
	case "file":
		return nil, invalid("%s.source.file_id: the Files API is not available on this server: send the image as base64 data", field)
	default:
		return nil, invalid("%s.source.type: %q is not supported: expected \"base64\"", field, src.Type)
	}
	if src.MediaType == "" {
		return nil, invalid("%s.source.media_type: Field required", field)
	}
	data, err := media.ImageURL("data:" + src.MediaType + ";base64," + src.Data)
	if err != nil {
		return nil, invalid("%s.source: %v", field, err)
	}
	return data, nil
}

// document reads a document block: plain text ("text" source) or
// content blocks ("content" source: text and images), given to the
// model in the tags Anthropic's prompting guide uses for documents
// (<document>, with its <title> and <context> when set, and the text
// in <document_content>). PDFs and Files API files are refused: this
// server reads no PDF and keeps no files.
func (c *converter) document(field string, b Block, p *parts) error {
	src, err := source(field, b.Source)
	if err != nil {
		return err
	}
	open := func() {
		head := "<document>"
		if b.Title != "" {
			head += "\n<title>" + b.Title + "</title>"
		}
		if b.Context != "" {
			head += "\n<context>" + b.Context + "</context>"
		}
		p.text(head + "\n<document_content>")
	}
	const close = "</document_content>\n</document>"
	switch src.Type {
	case "text":
		if mt := src.MediaType; mt != "" && mt != "text/plain" {
			return invalid("%s.source.media_type: %q is not supported for a text source: expected \"text/plain\"", field, mt)
		}
		open()
		p.text(src.Data)
		p.text(close)
	case "content":
		blocks, err := contentBlocks(field+".source.content", src.Content)
		if err != nil {
			return err
		}
		open()
		for k, cb := range blocks {
			cf := fmt.Sprintf("%s.source.content[%d]", field, k)
			switch cb.Type {
			case "text":
				p.text(cb.Text)
			case "image":
				data, err := c.imageBlock(cf, cb)
				if err != nil {
					return err
				}
				p.image(infer.Media{Data: data, Field: cf})
			default:
				return c.refuse(cf, cb.Type, "text and image blocks")
			}
		}
		p.text(close)
	case "base64", "url":
		return invalid("%s.source: PDF documents are not supported by this server: send the document's text as a \"text\" source", field)
	case "file":
		return invalid("%s.source.file_id: the Files API is not available on this server: send the document's text as a \"text\" source", field)
	case "":
		return invalid("%s.source.type: Field required", field)
	default:
		return invalid("%s.source.type: %q is not supported: expected \"text\" or \"content\"", field, src.Type)
	}
	return nil
}

// searchResult reads a search_result block (a RAG result: source,
// title and text blocks), given to the model as a <search_result> with
// its <source>, <title> and <content>. Citations are not produced:
// answers are plain text.
func (c *converter) searchResult(field string, b Block, p *parts) error {
	var src string
	if raw := bytes.TrimSpace(b.Source); len(raw) == 0 || json.Unmarshal(raw, &src) != nil || src == "" {
		return invalid("%s.source: Field required (a string: the result's URL or identifier)", field)
	}
	if b.Title == "" {
		return invalid("%s.title: Field required", field)
	}
	blocks, err := contentBlocks(field+".content", b.Content)
	if err != nil {
		return err
	}
	texts := make([]string, 0, len(blocks))
	for k, cb := range blocks {
		if cb.Type != "text" {
			return c.refuse(fmt.Sprintf("%s.content[%d]", field, k), cb.Type, "text blocks")
		}
		texts = append(texts, cb.Text)
	}
	p.text("<search_result>\n<source>" + src + "</source>\n<title>" + b.Title + "</title>\n<content>\n" +
		strings.Join(texts, "\n") + "\n</content>\n</search_result>")
	return nil
}

// toolResult converts a tool_result block, which must answer a tool_use
// of an earlier assistant turn, into a tool message and its parts: text,
// images, documents and search results. A result with is_error set
// reaches the model as "Error: " and its content.
func (c *converter) toolResult(field string, b Block) (infer.Message, parts, error) {
	var p parts
	name, ok := c.calls[b.ToolUseID]
	if !ok {
		return infer.Message{}, p, invalid("%s.tool_use_id: %q matches no tool_use block of an earlier assistant message", field, b.ToolUseID)
	}
	if b.IsError {
		p.prefix = "Error: "
	}
	if raw := bytes.TrimSpace(b.Content); len(raw) > 0 && string(raw) != "null" {
		blocks, err := contentBlocks(field+".content", raw)
		if err != nil {
			return infer.Message{}, p, err
		}
		for k, cb := range blocks {
			if err := c.content(fmt.Sprintf("%s.content[%d]", field, k), cb, &p, "text, image, document and search_result blocks"); err != nil {
				return infer.Message{}, p, err
			}
		}
	}
	return infer.Message{Role: "tool", ToolCallID: b.ToolUseID, ToolName: name}, p, nil
}

// assistant converts an assistant turn: its thinking, text and tool_use
// blocks. redacted_thinking blocks and the blocks of Anthropic's server
// tools (which this server never writes) are dropped. Signatures are not checked: they sign nothing secret here
// (see signature).
func (c *converter) assistant(field string, blocks []Block) error {
	msg := infer.Message{Role: "assistant"}
	var texts, thoughts []string
	for j, b := range blocks {
		bf := fmt.Sprintf("%s.content[%d]", field, j)
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "thinking":
			thoughts = append(thoughts, b.Thinking)
		case "redacted_thinking":
		case "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
			"bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result",
			"mcp_tool_use", "mcp_tool_result":
			// Echoed back from a conversation with Anthropic's own
			// servers, which run these tools: their results are
			// encrypted or meant for that server's tools, so they are
			// dropped, as redacted thinking is.
		case "tool_use":
			call, err := c.toolUse(bf, b)
			if err != nil {
				return err
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		default:
			return c.refuse(bf, b.Type, "text, thinking, redacted_thinking and tool_use blocks")
		}
	}
	msg.Content, msg.Thinking = strings.Join(texts, "\n"), strings.Join(thoughts, "\n")
	c.out = append(c.out, msg)
	return nil
}

// toolUse checks and converts a tool_use block: an id not used before,
// a name and an object input.
func (c *converter) toolUse(field string, b Block) (infer.ToolCall, error) {
	if b.ID == "" {
		return infer.ToolCall{}, invalid("%s.id: Field required", field)
	}
	if _, dup := c.calls[b.ID]; dup {
		return infer.ToolCall{}, invalid("%s.id: %q is the id of an earlier tool_use block: ids must be unique", field, b.ID)
	}
	if !toolName.MatchString(b.Name) {
		return infer.ToolCall{}, invalid("%s.name: %q must be 1 to 128 letters, digits, '_' and '-'", field, b.Name)
	}
	input := bytes.TrimSpace(b.Input)
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	if input[0] != '{' {
		return infer.ToolCall{}, invalid("%s.input: expected an object", field)
	}
	c.calls[b.ID] = b.Name
	return infer.ToolCall{ID: b.ID, Name: b.Name, Arguments: input}, nil
}

// refuse answers a block this turn cannot hold: images and documents
// with what the model lacks, other types as unknown.
func (c *converter) refuse(field, typ, allowed string) *Error {
	switch typ {
	case "image":
		return invalid("%s: image blocks are not supported here: only in a user message's content, a tool result or a document", field)
	case "document", "search_result":
		return invalid("%s: %s blocks are not supported here: only in a user message's content or a tool result", field, typ)
	case "container_upload":
		return invalid("%s: container_upload blocks need Anthropic's code execution tool, which this server does not run", field)
	case "":
		return invalid("%s.type: Field required", field)
	}
	return invalid("%s.type: %q is not supported here: expected %s", field, typ, allowed)
}
