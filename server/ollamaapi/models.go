package ollamaapi

import "time"

// ListModel is one entry of GET /api/tags.
type ListModel struct {
	Name       string       `json:"name"`
	Model      string       `json:"model"`
	ModifiedAt time.Time    `json:"modified_at"`
	Size       int64        `json:"size"`
	Digest     string       `json:"digest"`
	Details    ModelDetails `json:"details"`
}

// ListResponse is the answer of GET /api/tags.
type ListResponse struct {
	Models []ListModel `json:"models"`
}

// ShowRequest is the body of POST /api/show.
type ShowRequest struct {
	Model   string `json:"model"`
	Name    string `json:"name,omitempty"` // deprecated spelling of Model
	Verbose bool   `json:"verbose,omitempty"`
}

// ShowResponse is the answer of POST /api/show.
type ShowResponse struct {
	License    string         `json:"license,omitempty"`
	Modelfile  string         `json:"modelfile,omitempty"`
	Parameters string         `json:"parameters,omitempty"`
	Template   string         `json:"template,omitempty"`
	System     string         `json:"system,omitempty"`
	Details    ModelDetails   `json:"details"`
	Messages   []Message      `json:"messages,omitempty"`
	ModelInfo  map[string]any `json:"model_info"`
	// ProjectorInfo is the multimodal projector's general.* and clip.*
	// metadata, for a model with one.
	ProjectorInfo map[string]any `json:"projector_info,omitempty"`
	Capabilities  []string       `json:"capabilities,omitempty"`
	ModifiedAt    time.Time      `json:"modified_at,omitempty"`
}

// CreateRequest is the body of POST /api/create.
type CreateRequest struct {
	Model      string            `json:"model"`
	Name       string            `json:"name,omitempty"` // deprecated spelling of Model
	Stream     *bool             `json:"stream,omitempty"`
	Quantize   string            `json:"quantize,omitempty"`
	From       string            `json:"from,omitempty"`
	Files      map[string]string `json:"files,omitempty"`    // file name → blob digest
	Adapters   map[string]string `json:"adapters,omitempty"` // file name → blob digest
	Template   string            `json:"template,omitempty"`
	License    any               `json:"license,omitempty"` // a string or a list of strings
	System     string            `json:"system,omitempty"`
	Parameters map[string]any    `json:"parameters,omitempty"`
	Messages   []Message         `json:"messages,omitempty"`
	Modelfile  string            `json:"modelfile,omitempty"` // Tadpole extra: a whole Modelfile
}

// CopyRequest is the body of POST /api/copy.
type CopyRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// DeleteRequest is the body of DELETE /api/delete.
type DeleteRequest struct {
	Model string `json:"model"`
	Name  string `json:"name,omitempty"` // deprecated spelling of Model
}

// PullRequest is the body of POST /api/pull (and /api/push).
type PullRequest struct {
	Model    string `json:"model"`
	Name     string `json:"name,omitempty"` // deprecated spelling of Model
	Insecure bool   `json:"insecure,omitempty"`
	Stream   *bool  `json:"stream,omitempty"`
}

// ProgressResponse is one status line of create, pull and push.
type ProgressResponse struct {
	Status    string `json:"status"`
	Digest    string `json:"digest,omitempty"`
	Total     int64  `json:"total,omitempty"`
	Completed int64  `json:"completed,omitempty"`
}
