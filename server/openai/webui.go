package openai

import (
	"fmt"
	"math"
	"time"
)

// WebUIUsage is the usage of /api/chat/completions answers: OpenAI's
// token counts with Ollama's statistics, as Open WebUI reports them.
// Durations are in nanoseconds; the rates are tokens per second rounded
// to two decimals, or "N/A" when the duration is zero.
type WebUIUsage struct {
	ResponseTokensPerSecond any                     `json:"response_token/s"`
	PromptTokensPerSecond   any                     `json:"prompt_token/s"`
	TotalDuration           int64                   `json:"total_duration"`
	LoadDuration            int64                   `json:"load_duration"`
	PromptEvalCount         int                     `json:"prompt_eval_count"`
	PromptTokens            int                     `json:"prompt_tokens"`
	PromptEvalDuration      int64                   `json:"prompt_eval_duration"`
	EvalCount               int                     `json:"eval_count"`
	CompletionTokens        int                     `json:"completion_tokens"`
	EvalDuration            int64                   `json:"eval_duration"`
	ApproximateTotal        string                  `json:"approximate_total"`
	TotalTokens             int                     `json:"total_tokens"`
	CompletionTokensDetails CompletionTokensDetails `json:"completion_tokens_details"`
}

// webUIUsage builds the usage of a request that took total, load of it
// loading the model. prompt_tokens is the whole prompt; prompt_eval_count
// only the part evaluated (not found in a slot's cache).
func webUIUsage(t *tally, total, load time.Duration) *WebUIUsage {
	return &WebUIUsage{
		ResponseTokensPerSecond: rate(t.completion, t.evalDur),
		PromptTokensPerSecond:   rate(t.promptEval, t.promptEvalDur),
		TotalDuration:           total.Nanoseconds(),
		LoadDuration:            load.Nanoseconds(),
		PromptEvalCount:         t.promptEval,
		PromptTokens:            t.prompt,
		PromptEvalDuration:      t.promptEvalDur.Nanoseconds(),
		EvalCount:               t.completion,
		CompletionTokens:        t.completion,
		EvalDuration:            t.evalDur.Nanoseconds(),
		ApproximateTotal:        approximate(total),
		TotalTokens:             t.prompt + t.completion,
	}
}

// rate is tokens per second, rounded to two decimals, or "N/A".
func rate(tokens int, d time.Duration) any {
	if d <= 0 {
		return "N/A"
	}
	return math.Round(float64(tokens)/d.Seconds()*100) / 100
}

// approximate writes a duration in whole seconds as "1h2m3s".
func approximate(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%dh%dm%ds", s/3600, s%3600/60, s%60)
}
