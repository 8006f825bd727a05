package responses

import "encoding/json"

// CreateRequest is the body of POST /v1/responses.
type CreateRequest struct {
	// LoRA is Tadpole's per-request adapter list, an extra body field
	// (docs/lora.md); not stored with the response.
	LoRA               json.RawMessage   `json:"lora"`
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions,omitempty"`
	Tools              []Tool            `json:"tools,omitempty"`
	ToolChoice         json.RawMessage   `json:"tool_choice,omitempty"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls,omitempty"`
	Text               *TextConfig       `json:"text,omitempty"`
	Reasoning          *Reasoning        `json:"reasoning,omitempty"`
	MaxOutputTokens    *int64            `json:"max_output_tokens,omitempty"`
	Temperature        *float64          `json:"temperature,omitempty"`
	TopP               *float64          `json:"top_p,omitempty"`
	Stream             bool              `json:"stream,omitempty"`
	Store              *bool             `json:"store,omitempty"`
	Background         bool              `json:"background,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	PreviousResponseID string            `json:"previous_response_id,omitempty"`
	User               string            `json:"user,omitempty"`
	Truncation         string            `json:"truncation,omitempty"`
	Include            []string          `json:"include,omitempty"`
	Conversation       json.RawMessage   `json:"conversation,omitempty"`
	Prompt             json.RawMessage   `json:"prompt,omitempty"`
	MaxToolCalls       *int64            `json:"max_tool_calls,omitempty"`
	ServiceTier        string            `json:"service_tier,omitempty"`
}

// Tool is a tool of the request: a function, a namespace of functions
// (Tools), or a hosted or custom tool, which are left out or refused
// (see tools.go).
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
	Tools       []Tool          `json:"tools,omitempty"`
}

// TextConfig is the request's text: its output format.
type TextConfig struct {
	Format    *TextFormat `json:"format,omitempty"`
	Verbosity string      `json:"verbosity,omitempty"`
}

// TextFormat is text.format: text, json_object or json_schema (flat, as
// the Responses API has it).
type TextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Reasoning is the request's reasoning configuration.
type Reasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// Item is a conversation item, as given in input and as stored: a
// message, a function call, a function call's output or a reasoning
// item. Content is a message's string or parts, or a reasoning item's
// parts.
type Item struct {
	Type      string          `json:"type"`
	ID        string          `json:"id,omitempty"`
	Status    string          `json:"status,omitempty"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Namespace string          `json:"namespace,omitempty"` // a function call's namespace
	Arguments *string         `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Summary   json.RawMessage `json:"summary,omitempty"`
}

// Part is a content part.
type Part struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// ImageURL is an input_image part's image, a data URL.
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// MarshalJSON writes an input_image part as OpenAI does (no text) and
// other parts as they are.
func (p Part) MarshalJSON() ([]byte, error) {
	if p.Type == "input_image" {
		detail := p.Detail
		if detail == "" {
			detail = "auto"
		}
		return json.Marshal(struct {
			Type     string `json:"type"`
			ImageURL string `json:"image_url"`
			Detail   string `json:"detail"`
		}{p.Type, p.ImageURL, detail})
	}
	type plain Part
	return json.Marshal(plain(p))
}

// Response is the response object.
type Response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	CompletedAt        *int64            `json:"completed_at"`
	Status             string            `json:"status"`
	Background         bool              `json:"background"`
	Error              *ResponseError    `json:"error"`
	IncompleteDetails  *Incomplete       `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []json.RawMessage `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          ReasoningEcho     `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        float64           `json:"temperature"`
	Text               TextEcho          `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []Tool            `json:"tools"`
	TopP               float64           `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *Usage            `json:"usage"`
	User               *string           `json:"user"`
	Metadata           map[string]string `json:"metadata"`
}

// ResponseError is why a response failed.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Incomplete is why a response is incomplete.
type Incomplete struct {
	Reason string `json:"reason"`
}

// ReasoningEcho is the response's reasoning configuration.
type ReasoningEcho struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// TextEcho is the response's text configuration.
type TextEcho struct {
	Format    TextFormat `json:"format"`
	Verbosity string     `json:"verbosity"`
}

// Usage is a response's token counts.
type Usage struct {
	InputTokens         int          `json:"input_tokens"`
	InputTokensDetails  InputDetails `json:"input_tokens_details"`
	OutputTokens        int          `json:"output_tokens"`
	OutputTokensDetails OutDetails   `json:"output_tokens_details"`
	TotalTokens         int          `json:"total_tokens"`
}

// InputDetails are usage.input_tokens_details.
type InputDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutDetails are usage.output_tokens_details.
type OutDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// itemList is GET /v1/responses/{id}/input_items.
type itemList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}

// deleted is DELETE /v1/responses/{id}.
type deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}
