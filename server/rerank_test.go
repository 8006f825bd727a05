package server

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/auth"
)

// startRerankServer serves the generated reranker (testmodels.Reranker)
// as "reranker" and the demo model as "stories", with an API key.
func startRerankServer(t *testing.T, a *auth.Auth) *testServer {
	t.Helper()
	return serveConfig(t, Config{ModelsDir: testModels(t, "stories", "reranker"), Auth: a, Sched: testSched(2, 256)})
}

type rerankAnswer struct {
	Model   string `json:"model"`
	Object  string `json:"object"`
	Results []struct {
		Index          int                    `json:"index"`
		RelevanceScore float64                `json:"relevance_score"`
		Document       *struct{ Text string } `json:"document"`
	} `json:"results"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

const rerankKey = "rerank-key"

func rerankCall(t *testing.T, ts *testServer, path, body string) (int, rerankAnswer, string) {
	t.Helper()
	code, _, b := do(t, "POST", ts.URL+path, rerankKey, body)
	var a rerankAnswer
	if code == 200 {
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
	}
	return code, a, string(b)
}

// Both rerank endpoints score with the generated reranker as its
// construction predicts (testmodels.RerankerScore: the share of the pair's
// tokens that are "frog"), best first; top_n, return_documents, documents
// as strings and {"text"} objects; batched scores equal one-by-one
// scores; the tokens count for the API key and in the token counter; and
// /api/show lists the reranker's capability as "rerank" alone, and no
// "rerank" for a generative model.
func TestRerank(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{rerankKey}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startRerankServer(t, a)
	docs := []string{"a pond", "frog frog frog", "frog pond", "the frog in the green pond"}
	// Keyword tokens of each pair <s> frog </s> doc </s> (the query's frog
	// included) and the order they give: 4/7 > 2/6 > 2/9 > 1/6.
	keywords := []int{1, 4, 2, 2}
	order := []int{1, 2, 3, 0}
	totalTokens, aloneTokens := 0, 0
	alone := make([]float64, len(docs))
	for i, d := range docs {
		code, ans, body := rerankCall(t, ts, "/v1/rerank", fmt.Sprintf(`{"model":"reranker","query":"frog","documents":[%q]}`, d))
		if code != 200 || len(ans.Results) != 1 {
			t.Fatalf("%q: %d %s", d, code, body)
		}
		alone[i] = ans.Results[0].RelevanceScore
		want := testmodels.RerankerScore(keywords[i], ans.Usage.PromptTokens)
		if math.Abs(alone[i]-want) > 1e-4 {
			t.Errorf("%q (%d tokens): score %v, want %v", d, ans.Usage.PromptTokens, alone[i], want)
		}
		aloneTokens += ans.Usage.PromptTokens
	}
	totalTokens = aloneTokens
	for _, path := range []string{"/v1/rerank", "/api/rerank"} {
		body := `{"model":"reranker","query":"frog","documents":["a pond",{"text":"frog frog frog"},"frog pond",{"text":"the frog in the green pond"}]}`
		code, ans, raw := rerankCall(t, ts, path, body)
		if code != 200 || len(ans.Results) != len(docs) || ans.Model != "reranker" || ans.Object != "list" {
			t.Fatalf("%s: %d %s", path, code, raw)
		}
		for r, res := range ans.Results {
			if res.Index != order[r] {
				t.Errorf("%s: result %d is document %d, want %d (%s)", path, r, res.Index, order[r], raw)
			}
			if math.Abs(res.RelevanceScore-alone[res.Index]) > 1e-5 {
				t.Errorf("%s: document %d scores %v batched, %v alone", path, res.Index, res.RelevanceScore, alone[res.Index])
			}
			if res.Document != nil {
				t.Errorf("%s: document returned without return_documents", path)
			}
		}
		if ans.Usage.PromptTokens != aloneTokens || ans.Usage.TotalTokens != aloneTokens {
			t.Errorf("%s: usage %+v, want %d tokens (the one-by-one total)", path, ans.Usage, aloneTokens)
		}
		totalTokens += ans.Usage.PromptTokens
		code, ans, raw = rerankCall(t, ts, path, `{"model":"reranker","query":"frog","top_n":2,"return_documents":true,"documents":["a pond",{"text":"frog frog frog"},"frog pond"]}`)
		if code != 200 || len(ans.Results) != 2 || ans.Results[0].Index != 1 || ans.Results[1].Index != 2 ||
			ans.Results[0].Document == nil || ans.Results[0].Document.Text != "frog frog frog" || ans.Results[1].Document.Text != "frog pond" {
			t.Fatalf("%s top_n 2, return_documents: %d %s", path, code, raw)
		}
		totalTokens += ans.Usage.PromptTokens
		code, ans, raw = rerankCall(t, ts, path, `{"model":"reranker","query":"frog","top_n":1000000,"documents":["a pond","frog pond"]}`)
		if code != 200 || len(ans.Results) != 2 || ans.Results[0].Index != 1 {
			t.Fatalf("%s top_n past the documents: %d %s", path, code, raw)
		}
		totalTokens += ans.Usage.PromptTokens
	}
	if s := a.Usage().Snapshot(); len(s) != 1 || s[0].TokensIn != int64(totalTokens) || s[0].TokensOut != 0 {
		t.Errorf("key usage %+v, want %d tokens in", s, totalTokens)
	}
	_, _, b := do(t, "GET", ts.URL+"/metrics", rerankKey, "")
	if v := metricValue(string(b), "tadpole_tokens", `direction="in"`, `model="reranker`); v != float64(totalTokens) {
		t.Errorf("tadpole_tokens in for the reranker: %v, want %d", v, totalTokens)
	}
	for model, want := range map[string]bool{"reranker": true, "stories": false} {
		code, _, b := do(t, "POST", ts.URL+"/api/show", rerankKey, `{"model":"`+model+`"}`)
		var show struct{ Capabilities []string }
		if code != 200 || json.Unmarshal(b, &show) != nil {
			t.Fatalf("show %s: %d %s", model, code, b)
		}
		caps := strings.Join(show.Capabilities, ",")
		if strings.Contains(caps, "rerank") != want || strings.Contains(caps, "completion") == want {
			t.Errorf("show %s: capabilities %v", model, show.Capabilities)
		}
	}
}

// The worst requests are refused with a 4xx naming what is wrong, on both
// endpoints, and the server keeps serving: a model that is not a reranker,
// 10k documents, an empty query, no documents, a document longer than the
// context, top_n negative, zero and past int64, documents of the wrong type.
func TestRerankRefusals(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{rerankKey}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startRerankServer(t, a)
	many := make([]string, 10000)
	for i := range many {
		many[i] = "frog pond"
	}
	manyJSON, _ := json.Marshal(many)
	cases := []struct {
		name, body string
		code       int
		want       string
	}{
		{"not a reranker", `{"model":"stories","query":"frog","documents":["a pond"]}`, 400, `stories\" cannot rerank`},
		{"unknown model", `{"model":"nosuch","query":"frog","documents":["a pond"]}`, 404, "nosuch"},
		{"no model", `{"query":"frog","documents":["a pond"]}`, 400, "model"},
		{"10k documents", `{"model":"reranker","query":"frog","documents":` + string(manyJSON) + `}`, 400, "1000"},
		{"empty query", `{"model":"reranker","query":"","documents":["a pond"]}`, 400, "query"},
		{"no query", `{"model":"reranker","documents":["a pond"]}`, 400, "query"},
		{"empty documents", `{"model":"reranker","query":"frog","documents":[]}`, 400, "documents"},
		{"no documents", `{"model":"reranker","query":"frog"}`, 400, "documents"},
		{"document past the context", `{"model":"reranker","query":"frog","documents":["a pond",` + fmt.Sprintf("%q", strings.Repeat("frog ", 300)) + `]}`, 400, "document 1"},
		{"query past the context", `{"model":"reranker","query":` + fmt.Sprintf("%q", strings.Repeat("pond ", 300)) + `,"documents":["a pond"]}`, 400, "more than the context"},
		{"top_n negative", `{"model":"reranker","query":"frog","top_n":-1,"documents":["a pond"]}`, 400, "top_n"},
		{"top_n zero", `{"model":"reranker","query":"frog","top_n":0,"documents":["a pond"]}`, 400, "top_n"},
		{"top_n 2^63", `{"model":"reranker","query":"frog","top_n":9223372036854775808,"documents":["a pond"]}`, 400, "top_n"},
		{"top_n -2^63", `{"model":"reranker","query":"frog","top_n":-9223372036854775808,"documents":["a pond"]}`, 400, "top_n"},
		{"document a number", `{"model":"reranker","query":"frog","documents":[7]}`, 400, "document"},
		{"document object without text", `{"model":"reranker","query":"frog","documents":[{"txt":"a"}]}`, 400, "text"},
		{"query a number", `{"model":"reranker","query":7,"documents":["a pond"]}`, 400, "query"},
	}
	for _, path := range []string{"/v1/rerank", "/api/rerank"} {
		for _, c := range cases {
			code, _, b := do(t, "POST", ts.URL+path, rerankKey, c.body)
			if code != c.code || !strings.Contains(string(b), c.want) {
				t.Errorf("%s %s: %d %.300s, want %d mentioning %s", path, c.name, code, b, c.code, c.want)
			}
			if path == "/v1/rerank" && code < 500 && !strings.Contains(string(b), `"error":{`) {
				t.Errorf("%s %s: not OpenAI's error shape: %.200s", path, c.name, b)
			}
			if path == "/api/rerank" && !strings.HasPrefix(string(b), `{"error":"`) {
				t.Errorf("%s %s: not Ollama's error shape: %.200s", path, c.name, b)
			}
		}
	}
	// Ollama's num_ctx narrows the window pairs must fit.
	code, _, b := do(t, "POST", ts.URL+"/api/rerank", rerankKey, `{"model":"reranker","query":"frog","documents":["frog pond",`+fmt.Sprintf("%q", strings.Repeat("frog ", 20))+`],"options":{"num_ctx":16}}`)
	if code != 400 || !strings.Contains(string(b), "document 1") || !strings.Contains(string(b), "more than the context of 16") {
		t.Errorf("/api/rerank num_ctx 16, a pair of 23 tokens: %d %s", code, b)
	}
	// A reranker has no embeddings.
	for _, path := range []string{"/api/embed", "/v1/embeddings"} {
		code, _, b := do(t, "POST", ts.URL+path, rerankKey, `{"model":"reranker","input":["frog pond"]}`)
		if code != 400 || !strings.Contains(string(b), "is a reranker") {
			t.Errorf("%s with the reranker: %d %s", path, code, b)
		}
	}
	// Nor does it generate: every door refuses it in its own shape.
	for _, tc := range []struct{ path, body string }{
		{"/api/generate", `{"model":"reranker","prompt":"frog","stream":false}`},
		{"/api/chat", `{"model":"reranker","messages":[{"role":"user","content":"frog"}],"stream":false}`},
		{"/v1/chat/completions", `{"model":"reranker","messages":[{"role":"user","content":"frog"}]}`},
		{"/v1/completions", `{"model":"reranker","prompt":"frog"}`},
	} {
		code, _, b := do(t, "POST", ts.URL+tc.path, rerankKey, tc.body)
		if code != 400 || !strings.Contains(string(b), "is a reranker") {
			t.Errorf("%s with the reranker: %d %s", tc.path, code, b)
		}
	}
	// Still serving: both models.
	code, ans, raw := rerankCall(t, ts, "/v1/rerank", `{"model":"reranker","query":"frog","documents":["a pond","frog pond"]}`)
	if code != 200 || len(ans.Results) != 2 || ans.Results[0].Index != 1 {
		t.Fatalf("rerank after the refusals: %d %s", code, raw)
	}
	code, _, b = do(t, "POST", ts.URL+"/api/generate", rerankKey, `{"model":"stories","prompt":"Once","stream":false,"options":{"num_predict":4}}`)
	if code != 200 {
		t.Fatalf("generate after the refusals: %d %s", code, b)
	}
}
