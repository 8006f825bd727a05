package ollamaapi

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// GenerateRequest is the body of POST /api/generate.
type GenerateRequest struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	Suffix    string          `json:"suffix,omitempty"`
	System    string          `json:"system,omitempty"`
	Template  string          `json:"template,omitempty"`
	Context   []int           `json:"context,omitempty"`
	Stream    *bool           `json:"stream,omitempty"`
	Raw       bool            `json:"raw,omitempty"`
	Format    json.RawMessage `json:"format,omitempty"`
	KeepAlive *Duration       `json:"keep_alive,omitempty"`
	Images    []string        `json:"images,omitempty"`
	Options   map[string]any  `json:"options,omitempty"`
	Truncate  *bool           `json:"truncate,omitempty"`
	Shift     *bool           `json:"shift,omitempty"`
	// Think is true, false or a level ("high", "medium", "low").
	Think json.RawMessage `json:"think,omitempty"`
}

// Metrics are the timings and counts Ollama reports, in nanoseconds.
type Metrics struct {
	TotalDuration      time.Duration `json:"total_duration,omitempty"`
	LoadDuration       time.Duration `json:"load_duration,omitempty"`
	PromptEvalCount    int           `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration time.Duration `json:"prompt_eval_duration,omitempty"`
	EvalCount          int           `json:"eval_count,omitempty"`
	EvalDuration       time.Duration `json:"eval_duration,omitempty"`
}

// GenerateResponse is one NDJSON line of /api/generate (or the whole
// answer when not streaming).
type GenerateResponse struct {
	Model      string    `json:"model"`
	CreatedAt  time.Time `json:"created_at"`
	Response   string    `json:"response"`
	Thinking   string    `json:"thinking,omitempty"`
	Done       bool      `json:"done"`
	DoneReason string    `json:"done_reason,omitempty"`
	Context    []int     `json:"context,omitempty"`
	Metrics
}

// VersionResponse is the body of GET /api/version.
type VersionResponse struct {
	Version string `json:"version"`
}

// ErrorResponse is Ollama's error body.
type ErrorResponse struct {
	Error string `json:"error"`
}

// Duration is keep_alive: a number of seconds or a Go duration string
// ("5m", "1h"); a negative value means forever.
type Duration struct {
	time.Duration
}

// MarshalJSON writes the duration as a string, or -1 for forever.
func (d Duration) MarshalJSON() ([]byte, error) {
	if d.Duration < 0 {
		return []byte("-1"), nil
	}
	return json.Marshal(d.Duration.String())
}

// UnmarshalJSON accepts seconds (a number) or a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch t := v.(type) {
	case float64:
		if t < 0 {
			d.Duration = -1
		} else {
			d.Duration = time.Duration(t * float64(time.Second))
		}
	case string:
		if n, err := strconv.ParseFloat(t, 64); err == nil {
			return d.UnmarshalJSON([]byte(strconv.FormatFloat(n, 'f', -1, 64)))
		}
		dur, err := time.ParseDuration(t)
		if err != nil {
			return fmt.Errorf("invalid keep_alive %q: %w", t, err)
		}
		if dur < 0 {
			dur = -1
		}
		d.Duration = dur
	default:
		return fmt.Errorf("invalid keep_alive %s: want seconds or a duration string", b)
	}
	if d.Duration > math.MaxInt64/2 {
		d.Duration = -1
	}
	return nil
}
