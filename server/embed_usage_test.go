package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/auth"
)

// metricValue is the value of the first /metrics sample whose name starts
// with prefix and whose labels hold every label given (-1: none).
func metricValue(text, prefix string, labels ...string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		ok := true
		for _, lb := range labels {
			ok = ok && strings.Contains(l, lb)
		}
		if i := strings.LastIndexByte(l, ' '); ok && i > 0 {
			if v, err := strconv.ParseFloat(l[i+1:], 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// Embedding tokens count as the key's prompt tokens (usage snapshot and
// tadpole_key_tokens) and in the model's token counter, through both
// dialects' embedding endpoints.
func TestEmbedUsage(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"embed-key"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	tokensIn := func() (int64, int64) {
		s := a.Usage().Snapshot()
		if len(s) == 0 {
			return 0, 0
		}
		return s[0].TokensIn, s[0].TokensOut
	}
	code, _, b := do(t, "POST", ts.URL+"/api/embed", "embed-key", `{"model":"stories","input":["The cat sat.","A dog ran."]}`)
	var ol struct {
		Embeddings      [][]float32 `json:"embeddings"`
		PromptEvalCount int64       `json:"prompt_eval_count"`
	}
	if code != 200 || json.Unmarshal(b, &ol) != nil || len(ol.Embeddings) != 2 || ol.PromptEvalCount < 4 {
		t.Fatalf("/api/embed: %d %s", code, b)
	}
	if in, out := tokensIn(); in != ol.PromptEvalCount || out != 0 {
		t.Fatalf("after /api/embed of %d tokens: key tokens in %d, out %d", ol.PromptEvalCount, in, out)
	}
	code, _, b = do(t, "POST", ts.URL+"/v1/embeddings", "embed-key", `{"model":"stories","input":"Once upon a time"}`)
	var oa struct {
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if code != 200 || json.Unmarshal(b, &oa) != nil || oa.Usage.PromptTokens < 2 {
		t.Fatalf("/v1/embeddings: %d %s", code, b)
	}
	total := ol.PromptEvalCount + oa.Usage.PromptTokens
	if in, out := tokensIn(); in != total || out != 0 {
		t.Fatalf("after both: key tokens in %d, out %d, want %d in", in, out, total)
	}
	code, _, b = do(t, "GET", ts.URL+"/metrics", "embed-key", "")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	if v := metricValue(string(b), "tadpole_key_tokens", `direction="in"`); v != float64(total) {
		t.Errorf("tadpole_key_tokens in: %v, want %d", v, total)
	}
	if v := metricValue(string(b), "tadpole_tokens", `direction="in"`, `model="stories`); v != float64(total) {
		t.Errorf("tadpole_tokens in: %v, want %d", v, total)
	}
}
