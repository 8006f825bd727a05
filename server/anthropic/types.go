package anthropic

import "encoding/json"

// The wire types of Anthropic's Messages API. Fields Anthropic defines
// that Tadpole accepts and ignores (metadata, service_tier, container,
// cache_control, …) are not listed: unknown fields are ignored.

// MessagesRequest is the body of POST /v1/messages and, without
// max_tokens and the sampling fields, of POST /v1/messages/count_tokens.
type MessagesRequest struct {
	Model string `json:"model"`
	// LoRA is Tadpole's per-request adapter list, an extra body field
	// (docs/lora.md).
	LoRA json.RawMessage `json:"lora"`
	// MaxTokens is required by /v1/messages; int64 so that a number past
	// int's range is still read and refused with its range.
	MaxTokens     *int64          `json:"max_tokens"`
	System        json.RawMessage `json:"system"` // a string or text blocks
	Messages      []MessageParam  `json:"messages"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int64          `json:"top_k"`
	Stream        bool            `json:"stream"`
	Tools         []Tool          `json:"tools"`
	ToolChoice    *ToolChoice     `json:"tool_choice"`
	Thinking      *Thinking       `json:"thinking"`
	OutputConfig  *OutputConfig   `json:"output_config"`
}

// MessageParam is one turn: role "user", "assistant" or "system" (a
// mid-conversation system message, placed as the API's rules say; see
// systemPlacement), content a string or an array of blocks.
type MessageParam struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Block is one input content block, any type; which fields count
// depends on Type. cache_control (on any block) and citations are
// accepted and ignored.
type Block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result: Content is a string or blocks (text, image, document,
	// search_result). search_result and a document's "content" source:
	// text blocks.
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	// thinking
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	// image and document: an object (see Source); search_result: a
	// string (the result's URL or identifier).
	Source json.RawMessage `json:"source"`
	// document and search_result
	Title string `json:"title"`
	// document
	Context string `json:"context"`
}

// Source is an image's or a document's source. Images: base64 data of a
// media type ("base64"), or an http(s) URL ("url"), fetched only when
// the operator allows it (--allow-image-urls) and refused otherwise.
// Documents: plain text ("text", Data), content blocks ("content",
// Content), or a PDF ("base64", "url") or a Files API file ("file"),
// which this server refuses.
type Source struct {
	Type      string          `json:"type"`
	MediaType string          `json:"media_type"`
	Data      string          `json:"data"`
	URL       string          `json:"url"`
	Content   json.RawMessage `json:"content"`
	FileID    string          `json:"file_id"`
}

// Tool is a client tool: a function the model may call. Type is empty
// or "custom"; Anthropic's server tools (web search, code execution, …)
// have other types and are refused.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ToolChoice is tool_choice: auto, any, tool (with Name) or none.
// disable_parallel_tool_use is accepted and ignored.
type ToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// Thinking is the thinking configuration: enabled (with BudgetTokens),
// disabled, adaptive or between_tools.
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens *int64 `json:"budget_tokens"`
}

// OutputConfig is output_config: Format holds the answer to a JSON
// schema; Effort reaches the chat template as reasoning_effort.
type OutputConfig struct {
	Effort string        `json:"effort"`
	Format *OutputFormat `json:"format"`
}

// OutputFormat is output_config.format: {"type": "json_schema",
// "schema": {...}}.
type OutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// Message is the answer of POST /v1/messages (and, with empty content
// and no stop reason, the message of the message_start event).
type Message struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // "message"
	Role         string         `json:"role"` // "assistant"
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        Usage          `json:"usage"`
}

// ContentBlock is one output block: text (Text), thinking (Thinking and
// Signature) or tool_use (ID, Name, Input).
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
}

// Usage counts tokens as Anthropic does: InputTokens are the prompt's
// tokens not read from the cache (the slot's prompt cache), so the
// prompt is InputTokens + CacheReadInputTokens. Nothing is ever written
// to a cache on request, so CacheCreationInputTokens is 0.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Delta is the delta of a content_block_delta event: text_delta (Text),
// input_json_delta (PartialJSON), thinking_delta (Thinking) or
// signature_delta (Signature).
type Delta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
}

// The streamed events, each the data of the SSE event of its type.
type (
	messageStart struct {
		Type    string  `json:"type"`
		Message Message `json:"message"`
	}
	blockStart struct {
		Type         string       `json:"type"`
		Index        int          `json:"index"`
		ContentBlock ContentBlock `json:"content_block"`
	}
	blockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta Delta  `json:"delta"`
	}
	blockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	messageDelta struct {
		Type  string           `json:"type"`
		Delta messageDeltaBody `json:"delta"`
		Usage Usage            `json:"usage"`
	}
	messageDeltaBody struct {
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	typeOnly struct {
		Type string `json:"type"`
	}
)

// CountTokensResponse is the answer of POST /v1/messages/count_tokens.
type CountTokensResponse struct {
	InputTokens int `json:"input_tokens"`
}
