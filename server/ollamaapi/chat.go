package ollamaapi

import (
	"encoding/json"
	"time"
)

// Message is one chat turn of /api/chat.
type Message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	Thinking  string     `json:"thinking,omitempty"`
	Images    []string   `json:"images,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolName and ToolCallID identify the call a tool message answers.
	ToolName   string `json:"tool_name,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call made by the model.
type ToolCall struct {
	ID       string           `json:"id,omitempty"`
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction names a function and its arguments.
type ToolCallFunction struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Arguments is a JSON object, kept as sent (member order included).
	Arguments json.RawMessage `json:"arguments"`
}

// Tool is a function the model may call.
type Tool struct {
	Type     string          `json:"type"`
	Function json.RawMessage `json:"function"`
}

// ChatRequest is the body of POST /api/chat.
type ChatRequest struct {
	Model     string          `json:"model"`
	Messages  []Message       `json:"messages"`
	Stream    *bool           `json:"stream,omitempty"`
	Format    json.RawMessage `json:"format,omitempty"`
	KeepAlive *Duration       `json:"keep_alive,omitempty"`
	Tools     []Tool          `json:"tools,omitempty"`
	Options   map[string]any  `json:"options,omitempty"`
	Think     json.RawMessage `json:"think,omitempty"`
	Truncate  *bool           `json:"truncate,omitempty"`
	Shift     *bool           `json:"shift,omitempty"`
}

// ChatResponse is one NDJSON line of /api/chat (or the whole answer).
type ChatResponse struct {
	Model      string    `json:"model"`
	CreatedAt  time.Time `json:"created_at"`
	Message    Message   `json:"message"`
	Done       bool      `json:"done"`
	DoneReason string    `json:"done_reason,omitempty"`
	Metrics
}

// EmbedRequest is the body of POST /api/embed. Input is a string or a
// list of strings.
type EmbedRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	KeepAlive  *Duration       `json:"keep_alive,omitempty"`
	Truncate   *bool           `json:"truncate,omitempty"`
	Dimensions int             `json:"dimensions,omitempty"`
	Options    map[string]any  `json:"options,omitempty"`
}

// EmbedResponse is the answer of /api/embed. Its fields are always
// sent, as Ollama's are (its durations are never zero there; the Vercel
// AI SDK's Ollama provider requires load_duration).
type EmbedResponse struct {
	Model           string        `json:"model"`
	Embeddings      [][]float32   `json:"embeddings"`
	TotalDuration   time.Duration `json:"total_duration"`
	LoadDuration    time.Duration `json:"load_duration"`
	PromptEvalCount int           `json:"prompt_eval_count"`
}

// EmbeddingRequest is the body of the legacy POST /api/embeddings.
type EmbeddingRequest struct {
	Model     string         `json:"model"`
	Prompt    string         `json:"prompt"`
	KeepAlive *Duration      `json:"keep_alive,omitempty"`
	Options   map[string]any `json:"options,omitempty"`
}

// EmbeddingResponse is the answer of /api/embeddings.
type EmbeddingResponse struct {
	Embedding []float64 `json:"embedding"`
}

// ModelDetails describe a model's file.
type ModelDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// ProcessModel is one loaded model of GET /api/ps.
type ProcessModel struct {
	Name          string       `json:"name"`
	Model         string       `json:"model"`
	Size          int64        `json:"size"`
	Digest        string       `json:"digest"`
	Details       ModelDetails `json:"details"`
	ExpiresAt     time.Time    `json:"expires_at"`
	SizeVRAM      int64        `json:"size_vram"`
	ContextLength int          `json:"context_length"`
	// Tadpole holds what Ollama's shape has no field for.
	Tadpole *ProcessExtras `json:"tadpole,omitempty"`
}

// ProcessExtras are Tadpole's additions to /api/ps.
type ProcessExtras struct {
	Processor  string    `json:"processor"` // "100% CPU", "100% GPU", "48%/52% CPU/GPU"
	Placement  any       `json:"placement"`
	SlotsBusy  int       `json:"slots_busy"`
	SlotsTotal int       `json:"slots_total"`
	QueueDepth int       `json:"queue_depth"`
	LoadedAt   time.Time `json:"loaded_at"`
	// Sizing is how the slots and default context were chosen: "mode"
	// is "auto" (from free memory) or "flags" (--parallel and
	// --context-length).
	Sizing any `json:"sizing,omitempty"`
	// PromptCache is the server's prompt cache (shared by every model):
	// its sizes by tier.
	PromptCache *PromptCacheStatus `json:"prompt_cache,omitempty"`
	// DraftModel is the file of the draft model that drafts for this one
	// (--draft), if any.
	DraftModel string `json:"draft_model,omitempty"`
	// LoRAAdapters are the LoRA adapters loaded on the instance, as
	// GET /lora-adapters lists them (docs/lora.md).
	LoRAAdapters []LoRAAdapterStatus `json:"lora_adapters,omitempty"`
}

// LoRAAdapterStatus is a loaded LoRA adapter in /api/ps.
type LoRAAdapterStatus struct {
	ID    int     `json:"id"`
	Path  string  `json:"path"`
	Scale float32 `json:"scale"`
	Bytes uint64  `json:"bytes"`
}

// PromptCacheStatus is the prompt cache's size in /api/ps.
type PromptCacheStatus struct {
	RAMBytes    int64 `json:"ram_bytes"`
	RAMEntries  int   `json:"ram_entries"`
	DiskBytes   int64 `json:"disk_bytes"`
	DiskEntries int   `json:"disk_entries"`
}

// ProcessResponse is the answer of GET /api/ps.
type ProcessResponse struct {
	Models []ProcessModel `json:"models"`
}
