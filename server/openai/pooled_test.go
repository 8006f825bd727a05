package openai

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/infer/infertest"
)

// The requests that do not generate, on the fake: /v1/embeddings,
// /v1/rerank, and llama-server's /tokenize and /detokenize. Their wire
// shapes and field errors; TestOpenAIEmbeddings, TestRerank* and
// TestUtilityEndpointsMatchLlamaServer in ./server run them on the engine.

// serveUtility starts the handler's /v1 routes and llama-server's
// utility routes on fake.
func serveUtility(t *testing.T, fake *infertest.Service) string {
	return infertest.Serve(t, func(e *echo.Echo) {
		h := &Handler{Infer: fake}
		h.RegisterV1(e.Group("/v1", Errors))
		h.RegisterLlamaServer(e)
	})
}

// Embeddings: one object per input in order, float or base64 (the same
// little-endian float32 values), dimensions cut and renormalised, the
// usage the tokens infer counted; a dimension past the model's and a bad
// encoding are 400s naming their field, before or after the model runs.
func TestEmbeddings(t *testing.T) {
	fake := &infertest.Service{}
	url := serveUtility(t, fake) + "/v1/embeddings"
	status, _, body := infertest.Post(t, url, `{"model": "fake", "input": ["ab", "xyz"]}`)
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			Object    string    `json:"object"`
			Embedding []float32 `json:"embedding"`
			Index     int       `json:"index"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	if status != 200 || json.Unmarshal(body, &list) != nil {
		t.Fatalf("%d %s", status, body)
	}
	if list.Object != "list" || len(list.Data) != 2 || list.Usage.PromptTokens != 5 || list.Usage.TotalTokens != 5 {
		t.Fatalf("%s", body)
	}
	for i, want := range [][]float32{infertest.Vector("ab"), infertest.Vector("xyz")} {
		if d := list.Data[i]; d.Object != "embedding" || d.Index != i || !reflect.DeepEqual(d.Embedding, want) {
			t.Errorf("data[%d] = %+v, want %v", i, d, want)
		}
	}

	status, _, body = infertest.Post(t, url, `{"model": "fake", "input": "ab", "encoding_format": "base64", "dimensions": 2}`)
	var b64 struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if status != 200 || json.Unmarshal(body, &b64) != nil || len(b64.Data) != 1 {
		t.Fatalf("%d %s", status, body)
	}
	got := decodeBase64(t, b64.Data[0].Embedding)
	if want := infer.Renormalize(infertest.Vector("ab")[:2]); !reflect.DeepEqual(got, want) {
		t.Errorf("base64, 2 dimensions: %v, want %v", got, want)
	}

	for _, tc := range []struct{ body, param string }{
		{`{"model": "fake", "input": "ab", "dimensions": 5}`, "dimensions"},
		{`{"model": "fake", "input": "ab", "dimensions": 0}`, "dimensions"},
		{`{"model": "fake", "input": "ab", "encoding_format": "int8"}`, "encoding_format"},
		{`{"model": "fake", "input": [1, 2]}`, "input"},
		{`{"input": "ab"}`, "model"},
	} {
		status, _, body := infertest.Post(t, url, tc.body)
		if status != 400 || errorParam(t, body) != tc.param {
			t.Errorf("%s: %d %s, want 400 about %s", tc.body, status, body, tc.param)
		}
	}
}

func decodeBase64(t *testing.T, s string) []float32 {
	t.Helper()
	var raw []byte
	if err := json.Unmarshal([]byte(`"`+s+`"`), &raw); err != nil || len(raw)%4 != 0 {
		t.Fatalf("base64 %q: %v", s, err)
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		bits := uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24
		out[i] = math.Float32frombits(bits)
	}
	return out
}

// errorParam is the param of an OpenAI error body.
func errorParam(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Param *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not an error body: %s", body)
	}
	if e.Error.Param == nil {
		return ""
	}
	return *e.Error.Param
}

// Rerank: the results best first with their documents' indexes, cut to
// top_n, documents returned when asked; a model that cannot rank is a
// 400 naming the model, from infer.
func TestRerank(t *testing.T) {
	url := serveUtility(t, &infertest.Service{}) + "/v1/rerank"
	status, _, body := infertest.Post(t, url, `{"model": "fake", "query": "cat", "documents": ["dog", "a cat", "cart"], "top_n": 2, "return_documents": true}`)
	var out struct {
		Results []struct {
			Index    int     `json:"index"`
			Score    float32 `json:"relevance_score"`
			Document struct {
				Text string `json:"text"`
			} `json:"document"`
		} `json:"results"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	if status != 200 || json.Unmarshal(body, &out) != nil || len(out.Results) != 2 {
		t.Fatalf("%d %s", status, body)
	}
	if r := out.Results[0]; r.Index != 1 || r.Score != infertest.Score("cat", "a cat") || r.Document.Text != "a cat" {
		t.Errorf("best: %+v", r)
	}
	if r := out.Results[1]; r.Index != 2 || r.Score != infertest.Score("cat", "cart") {
		t.Errorf("second: %+v", r)
	}
	if out.Usage.TotalTokens != 3*3+3+5+4 {
		t.Errorf("usage: %s", body)
	}

	notRanker := &infertest.Service{OptionsErr: &infer.ParamError{Param: "model", Message: `model "fake" cannot rerank`}}
	status, _, body = infertest.Post(t, serveUtility(t, notRanker)+"/v1/rerank", `{"model": "fake", "query": "q", "documents": ["d"]}`)
	if status != 400 || errorParam(t, body) != "model" {
		t.Errorf("not a reranker: %d %s", status, body)
	}
}

// /tokenize and /detokenize in llama-server's shapes: ids, or ids with
// pieces (a string when valid UTF-8, else its bytes); a mixed prompt's
// ids kept; an id outside the vocabulary is a 400 naming content or
// tokens; detokenize gives the text back.
func TestTokenizeDetokenize(t *testing.T) {
	url := serveUtility(t, &infertest.Service{})
	for _, tc := range []struct{ body, want string }{
		{`{"model": "fake", "content": "hi"}`, `{"tokens":[104,105]}`},
		{`{"model": "fake", "content": ["a", 7, "b"]}`, `{"tokens":[97,7,98]}`},
		{`{"model": "fake", "content": "h\u00e9", "with_pieces": true}`, `{"tokens":[{"id":104,"piece":"h"},{"id":195,"piece":[195]},{"id":169,"piece":[169]}]}`},
		{`{"model": "fake"}`, `{"tokens":[]}`},
	} {
		status, _, body := infertest.Post(t, url+"/tokenize", tc.body)
		if status != 200 || string(body) != tc.want+"\n" {
			t.Errorf("%s: %d %s, want %s", tc.body, status, body, tc.want)
		}
	}
	status, _, body := infertest.Post(t, url+"/detokenize", `{"model": "fake", "tokens": [104, 105]}`)
	if status != 200 || string(body) != `{"content":"hi"}`+"\n" {
		t.Errorf("detokenize: %d %s", status, body)
	}
	for _, tc := range []struct{ path, body, param string }{
		{"/tokenize", `{"model": "fake", "content": ["a", 256]}`, "content"},
		{"/tokenize", `{"model": "fake", "content": [-1]}`, "content"},
		{"/detokenize", `{"model": "fake", "tokens": [300]}`, "tokens"},
		{"/tokenize", `{"content": "a"}`, "model"},
	} {
		status, _, body := infertest.Post(t, url+tc.path, tc.body)
		if status != 400 || errorParam(t, body) != tc.param {
			t.Errorf("%s %s: %d %s, want 400 about %s", tc.path, tc.body, status, body, tc.param)
		}
	}
}
