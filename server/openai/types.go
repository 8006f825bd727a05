package openai

import "encoding/json"

// The wire types of OpenAI's API. Fields OpenAI defines that Tadpole
// accepts and ignores (store, metadata, service_tier, user, …) are not
// listed: unknown fields are ignored.

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	Model string `json:"model"`
	// LoRA is llama-server's per-request adapter list (docs/lora.md).
	LoRA                json.RawMessage    `json:"lora"`
	Messages            []ChatMessage      `json:"messages"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Temperature         *float64           `json:"temperature"`
	TopP                *float64           `json:"top_p"`
	Stop                json.RawMessage    `json:"stop"`
	Seed                *int64             `json:"seed"`
	FrequencyPenalty    *float64           `json:"frequency_penalty"`
	PresencePenalty     *float64           `json:"presence_penalty"`
	N                   *int               `json:"n"`
	LogitBias           map[string]float64 `json:"logit_bias"`
	ResponseFormat      *ResponseFormat    `json:"response_format"`
	Stream              bool               `json:"stream"`
	StreamOptions       *StreamOptions     `json:"stream_options"`
	User                string             `json:"user"`
	Tools               []Tool             `json:"tools"`
	ToolChoice          json.RawMessage    `json:"tool_choice"`
	ParallelToolCalls   *bool              `json:"parallel_tool_calls"`
	Logprobs            bool               `json:"logprobs"`
	TopLogprobs         *int               `json:"top_logprobs"`
	Modalities          []string           `json:"modalities"`
	Audio               json.RawMessage    `json:"audio"`
	// ReasoningEffort: "none" switches a thinking model's thinking off;
	// any value reaches the chat template as reasoning_effort.
	ReasoningEffort string `json:"reasoning_effort"`
	// ChatTemplateKwargs are further chat template variables (as
	// llama-server takes them), e.g. {"enable_thinking": false}.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`
}

// ChatMessage is one message of a chat request. Content is a string, an
// array of content parts or null.
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// ReasoningContent is an assistant turn's reasoning, as llama-server
	// answers and reads it back; templates that keep reasoning in the
	// history render it (reasoning_content).
	ReasoningContent string `json:"reasoning_content"`
}

// ContentPart is one part of a message's content.
type ContentPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
	// ImageURL is an image_url part's {"url", "detail"} (a bare URL
	// string is read too); the url must be a data URL.
	ImageURL json.RawMessage `json:"image_url"`
	// InputAudio is an input_audio part's audio.
	InputAudio *InputAudio `json:"input_audio"`
}

// InputAudio is an input_audio part: base64 data in a format ("wav").
type InputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// ResponseFormat is response_format: text, json_object or json_schema.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema"`
}

// JSONSchema is response_format.json_schema.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// StreamOptions are stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Tool is one entry of tools.
type Tool struct {
	Type     string        `json:"type"`
	Function *FunctionTool `json:"function"`
}

// FunctionTool is a function tool's definition.
type FunctionTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// ChatCompletion is a non-streamed chat answer (object
// "chat.completion").
type ChatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []ChatChoice `json:"choices"`
	Usage             any          `json:"usage"` // *Usage, or *WebUIUsage on /api/chat/completions
}

// ChatChoice is one choice of a chat answer.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      AnswerMessage `json:"message"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

// AnswerMessage is the assistant's message. A thinking model's thinking
// is in reasoning_content (as llama-server and DeepSeek's API return it).
type AnswerMessage struct {
	Role             string     `json:"role"`
	Content          string     `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	Refusal          *string    `json:"refusal"`
}

// ToolCall is a function call in an answer; Index is set in stream
// deltas only.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function; Arguments is a JSON object as a
// string.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatChunk is one streamed chat event (object "chat.completion.chunk").
type ChatChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []ChunkChoice `json:"choices"`
	Usage             any           `json:"usage,omitempty"`
}

// ChunkChoice is one choice's part of a chunk. FinishReason is null until
// the choice's last chunk.
type ChunkChoice struct {
	Index        int           `json:"index"`
	Delta        Delta         `json:"delta"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// Delta is the new part of the assistant's message.
type Delta struct {
	Role             string     `json:"role,omitempty"`
	Content          *string    `json:"content,omitempty"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ChatLogprobs are the log-probabilities of a choice's tokens.
type ChatLogprobs struct {
	Content []TokenLogprob `json:"content"`
	Refusal []TokenLogprob `json:"refusal"`
}

// TokenLogprob is one token's log-probability, with the most likely
// alternatives at its position when asked for.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is an alternative token.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// Usage counts a request's tokens.
type Usage struct {
	PromptTokens            int                     `json:"prompt_tokens"`
	CompletionTokens        int                     `json:"completion_tokens"`
	TotalTokens             int                     `json:"total_tokens"`
	PromptTokensDetails     PromptTokensDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails CompletionTokensDetails `json:"completion_tokens_details"`
}

// PromptTokensDetails: cached tokens are prompt tokens a slot's cache
// already held.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionTokensDetails are always zero: no reasoning tokens are
// counted apart and there are no predicted outputs.
type CompletionTokensDetails struct {
	ReasoningTokens          int `json:"reasoning_tokens"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

// CompletionRequest is the body of POST /v1/completions.
type CompletionRequest struct {
	Model string `json:"model"`
	// LoRA is llama-server's per-request adapter list (docs/lora.md).
	LoRA             json.RawMessage    `json:"lora"`
	Prompt           json.RawMessage    `json:"prompt"`
	Suffix           *string            `json:"suffix"`
	MaxTokens        *int               `json:"max_tokens"`
	Temperature      *float64           `json:"temperature"`
	TopP             *float64           `json:"top_p"`
	N                *int               `json:"n"`
	Stream           bool               `json:"stream"`
	StreamOptions    *StreamOptions     `json:"stream_options"`
	Logprobs         *int               `json:"logprobs"`
	Echo             bool               `json:"echo"`
	Stop             json.RawMessage    `json:"stop"`
	PresencePenalty  *float64           `json:"presence_penalty"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	BestOf           *int               `json:"best_of"`
	LogitBias        map[string]float64 `json:"logit_bias"`
	Seed             *int64             `json:"seed"`
	User             string             `json:"user"`
}

// Completion is a completions answer or stream event (object
// "text_completion").
type Completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []CompletionChoice `json:"choices"`
	Usage             *Usage             `json:"usage,omitempty"`
}

// CompletionChoice is one choice of a completion. FinishReason is null in
// a stream until the choice's last event.
type CompletionChoice struct {
	Text         string              `json:"text"`
	Index        int                 `json:"index"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// CompletionLogprobs are the legacy completions' log-probabilities.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// EmbeddingRequest is the body of POST /v1/embeddings.
type EmbeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

// EmbeddingList is the answer of /v1/embeddings.
type EmbeddingList struct {
	Object string      `json:"object"`
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// Embedding is one embedding: an array of numbers, or a base64 string of
// little-endian float32 values.
type Embedding struct {
	Object    string `json:"object"`
	Embedding any    `json:"embedding"`
	Index     int    `json:"index"`
}

// Model is an entry of /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the answer of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}
