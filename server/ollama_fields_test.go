package server

import (
	"encoding/json"
	"testing"
)

// The fields Ollama always sends are always there (issue 41): the
// Vercel AI SDK's Ollama provider requires load_duration on /api/embed,
// which Tadpole left out when the model was already loaded. load_duration
// is Ollama's: the time until the model was ready, loaded by the request
// or not, so never zero.
func TestOllamaAlwaysSentFields(t *testing.T) {
	ts := startServer(t)
	check := func(name, path, body string, fields ...string) {
		t.Helper()
		code, _, b := do(t, "POST", ts.URL+path, "", body)
		var m map[string]json.RawMessage
		if code != 200 || json.Unmarshal(b, &m) != nil {
			t.Fatalf("%s: %d %s", name, code, b)
		}
		for _, f := range fields {
			var n float64
			if json.Unmarshal(m[f], &n) != nil || n <= 0 {
				t.Errorf("%s: %s is %s, want a positive number: %s", name, f, m[f], b)
			}
		}
	}
	embed := `{"model":"stories","input":"The cat sat."}`
	check("embed, loading", "/api/embed", embed, "total_duration", "load_duration", "prompt_eval_count")
	check("embed, loaded", "/api/embed", embed, "total_duration", "load_duration", "prompt_eval_count")
	metrics := []string{"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"}
	gen := `{"model":"stories","prompt":"Once upon a time","stream":false,"options":{"num_predict":4}}`
	check("generate", "/api/generate", gen, metrics...)
	check("generate again", "/api/generate", gen, metrics...)
	chat := `{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"stream":false,"options":{"num_predict":4}}`
	check("chat", "/api/chat", chat, metrics...)
	check("chat again", "/api/chat", chat, metrics...)
}
