package ollama

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/infer/infertest"
)

// /api/embed, /api/embeddings and /api/rerank on the fake: Ollama's
// answer shapes, dimensions, the load-only request, keep_alive reaching
// infer, and errors in Ollama's {"error"} shape. The engine's numbers
// are tested in ./server (TestEmbed*, TestRerank*).

func TestEmbed(t *testing.T) {
	fake := &infertest.Service{}
	url := serveFake(t, fake)
	status, _, body := infertest.Post(t, url+"/api/embed", `{"model": "fake", "input": ["ab", "xyz"], "keep_alive": "7m"}`)
	var out struct {
		Model           string      `json:"model"`
		Embeddings      [][]float32 `json:"embeddings"`
		PromptEvalCount int         `json:"prompt_eval_count"`
		LoadDuration    *int64      `json:"load_duration"`
	}
	if status != 200 || json.Unmarshal(body, &out) != nil {
		t.Fatalf("%d %s", status, body)
	}
	if want := [][]float32{infertest.Vector("ab"), infertest.Vector("xyz")}; out.Model != "fake" || !reflect.DeepEqual(out.Embeddings, want) || out.PromptEvalCount != 5 || out.LoadDuration == nil {
		t.Errorf("%s", body)
	}
	if reqs := fake.Requests(); len(reqs) != 1 || reqs[0].KeepAlive == nil || reqs[0].KeepAlive.Minutes() != 7 {
		t.Errorf("keep_alive did not reach infer: %+v", reqs)
	}

	status, _, body = infertest.Post(t, url+"/api/embed", `{"model": "fake", "input": "ab", "dimensions": 2}`)
	if err := json.Unmarshal(body, &out); status != 200 || err != nil || !reflect.DeepEqual(out.Embeddings, [][]float32{infer.Renormalize(infertest.Vector("ab")[:2])}) {
		t.Errorf("dimensions 2: %d %s", status, body)
	}
	// No input loads the model only: no embeddings, not null.
	status, _, body = infertest.Post(t, url+"/api/embed", `{"model": "fake", "input": ""}`)
	if err := json.Unmarshal(body, &out); status != 200 || err != nil || out.Embeddings == nil || len(out.Embeddings) != 0 {
		t.Errorf("load only: %d %s", status, body)
	}
	// The legacy endpoint: one prompt, one embedding of float64s.
	status, _, body = infertest.Post(t, url+"/api/embeddings", `{"model": "fake", "prompt": "ab"}`)
	var legacy struct {
		Embedding []float64 `json:"embedding"`
	}
	if err := json.Unmarshal(body, &legacy); status != 200 || err != nil || len(legacy.Embedding) != infertest.Dims {
		t.Errorf("legacy: %d %s", status, body)
	}
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"model": "fake", "input": "ab", "dimensions": 5}`, 400},
		{`{"model": "fake", "input": "ab", "dimensions": -1}`, 400},
		{`{"model": "fake", "input": [1]}`, 400},
	} {
		status, _, body := infertest.Post(t, url+"/api/embed", tc.body)
		var e struct {
			Error string `json:"error"`
		}
		if status != tc.status || json.Unmarshal(body, &e) != nil || e.Error == "" {
			t.Errorf("%s: %d %s", tc.body, status, body)
		}
	}
	busy := serveFake(t, &infertest.Service{Err: infer.Errorf(infer.Unavailable, "server busy")})
	if status, h, body := infertest.Post(t, busy+"/api/embed", `{"model": "fake", "input": "ab"}`); status != 503 || h.Get("Retry-After") != "5" {
		t.Errorf("busy: %d %q %s", status, h.Get("Retry-After"), body)
	}
}

func TestRerank(t *testing.T) {
	url := serveFake(t, &infertest.Service{})
	status, _, body := infertest.Post(t, url+"/api/rerank", `{"model": "fake", "query": "cat", "documents": ["dog", "a cat"]}`)
	var out struct {
		Results []struct {
			Index int     `json:"index"`
			Score float32 `json:"relevance_score"`
		} `json:"results"`
	}
	if status != 200 || json.Unmarshal(body, &out) != nil || len(out.Results) != 2 || out.Results[0].Index != 1 || out.Results[0].Score != infertest.Score("cat", "a cat") {
		t.Fatalf("%d %s", status, body)
	}
	for _, b := range []string{`{"model": "fake", "documents": ["d"]}`, `{"query": "q", "documents": ["d"]}`} {
		if status, _, body := infertest.Post(t, url+"/api/rerank", b); status != 400 {
			t.Errorf("%s: %d %s", b, status, body)
		}
	}
}
