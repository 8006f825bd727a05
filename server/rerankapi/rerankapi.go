// Package rerankapi holds the rerank API's wire types: llama-server's
// /v1/rerank request and answer (Jina's and Cohere's shape: documents as
// strings or {"text": …} objects, top_n, return_documents), which
// OpenAI's door (server/openai, /v1/rerank) and Ollama's (server/ollama,
// Tadpole's /api/rerank) both speak. Scoring is infer's
// (Service.Rerank). The types were infer's
// (infer.RerankRequest, …): server/infer speaks no API's vocabulary.
// Errors are infer.ParamErrors naming the field, which each dialect
// answers in its shape.
package rerankapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/tadpole-llm/tadpole/server/infer"
)

func paramError(param, format string, args ...any) *infer.ParamError {
	return &infer.ParamError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// MaxDocuments bounds the documents of one rerank request (Cohere's
// limit): each is a decode sequence and a result.
const MaxDocuments = 1000

// Request is the rerank request of both doors (Jina's and
// Cohere's shape, as llama-server takes it): documents are strings or
// {"text": …} objects.
type Request struct {
	Model     string     `json:"model"`
	Query     *string    `json:"query"`
	Documents []Document `json:"documents"`
	// TopN keeps the best TopN results (absent: all; more than the
	// documents: all).
	TopN            *int `json:"top_n,omitempty"`
	ReturnDocuments bool `json:"return_documents,omitempty"`
}

// Document is one document: a JSON string or an object with text.
type Document struct {
	Text string `json:"text"`
}

// UnmarshalJSON takes a string or {"text": string}.
func (d *Document) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &d.Text)
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("a document must be a string or an object with a text string")
	}
	var o struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	if o.Text == nil {
		return errors.New("a document object must have a text string")
	}
	d.Text = *o.Text
	return nil
}

// Result is one document's score, by its index in the request.
type Result struct {
	Index          int       `json:"index"`
	RelevanceScore float64   `json:"relevance_score"`
	Document       *Document `json:"document,omitempty"`
}

// Usage counts the tokens of every query/document pair evaluated.
type Usage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Response is llama-server's /v1/rerank answer, with Jina's and
// Cohere's optional documents.
type Response struct {
	Model   string   `json:"model"`
	Object  string   `json:"object"`
	Results []Result `json:"results"`
	Usage   Usage    `json:"usage"`
}

// Check refuses what no model can rank: no query or an empty one, no
// documents or more than MaxDocuments, a top_n below 1.
// Errors are ParamErrors naming the field.
func (r *Request) Check() error {
	switch {
	case r.Query == nil:
		return paramError("query", "Missing required parameter: 'query'.")
	case *r.Query == "":
		return paramError("query", "Invalid 'query': empty string. Expected a non-empty string.")
	case r.Documents == nil:
		return paramError("documents", "Missing required parameter: 'documents'.")
	case len(r.Documents) == 0:
		return paramError("documents", "Invalid 'documents': empty array. Expected an array with at least one document.")
	case len(r.Documents) > MaxDocuments:
		return paramError("documents", "Invalid 'documents': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", MaxDocuments, len(r.Documents))
	case r.TopN != nil && *r.TopN < 1:
		return paramError("top_n", "Invalid 'top_n': %d. Expected a value >= 1.", *r.TopN)
	}
	return nil
}

// Results sorts the scores, best first (ties by index), keeps the
// request's top_n and the documents when asked.
func Results(req *Request, scores []float32, tokens int) Response {
	res := make([]Result, len(scores))
	for i, s := range scores {
		res[i] = Result{Index: i, RelevanceScore: float64(s)}
		if req.ReturnDocuments {
			res[i].Document = &Document{Text: req.Documents[i].Text}
		}
	}
	sort.SliceStable(res, func(a, b int) bool { return res[a].RelevanceScore > res[b].RelevanceScore })
	if req.TopN != nil && *req.TopN < len(res) {
		res = res[:*req.TopN]
	}
	return Response{Model: req.Model, Object: "list", Results: res,
		Usage: Usage{PromptTokens: tokens, TotalTokens: tokens}}
}

// Texts are the documents' texts.
func (r *Request) Texts() []string {
	out := make([]string, len(r.Documents))
	for i, d := range r.Documents {
		out[i] = d.Text
	}
	return out
}
