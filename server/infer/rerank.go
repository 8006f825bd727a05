package infer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// MaxRerankDocuments bounds the documents of one rerank request (Cohere's
// limit): each is a decode sequence and a result.
const MaxRerankDocuments = 1000

// RerankRequest is the rerank request of both dialects (Jina's and
// Cohere's shape, as llama-server takes it): documents are strings or
// {"text": …} objects.
type RerankRequest struct {
	Model     string           `json:"model"`
	Query     *string          `json:"query"`
	Documents []RerankDocument `json:"documents"`
	// TopN keeps the best TopN results (absent: all; more than the
	// documents: all).
	TopN            *int `json:"top_n,omitempty"`
	ReturnDocuments bool `json:"return_documents,omitempty"`
}

// RerankDocument is one document: a JSON string or an object with text.
type RerankDocument struct {
	Text string `json:"text"`
}

// UnmarshalJSON takes a string or {"text": string}.
func (d *RerankDocument) UnmarshalJSON(b []byte) error {
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

// RerankResult is one document's score, by its index in the request.
type RerankResult struct {
	Index          int             `json:"index"`
	RelevanceScore float64         `json:"relevance_score"`
	Document       *RerankDocument `json:"document,omitempty"`
}

// RerankUsage counts the tokens of every query/document pair evaluated.
type RerankUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// RerankResponse is llama-server's /v1/rerank answer, with Jina's and
// Cohere's optional documents.
type RerankResponse struct {
	Model   string         `json:"model"`
	Object  string         `json:"object"`
	Results []RerankResult `json:"results"`
	Usage   RerankUsage    `json:"usage"`
}

// Check refuses what no model can rank: no query or an empty one, no
// documents or more than MaxRerankDocuments, a top_n below 1.
// Errors are ParamErrors naming the field.
func (r *RerankRequest) Check() error {
	switch {
	case r.Query == nil:
		return paramErrorf("query", "Missing required parameter: 'query'.")
	case *r.Query == "":
		return paramErrorf("query", "Invalid 'query': empty string. Expected a non-empty string.")
	case r.Documents == nil:
		return paramErrorf("documents", "Missing required parameter: 'documents'.")
	case len(r.Documents) == 0:
		return paramErrorf("documents", "Invalid 'documents': empty array. Expected an array with at least one document.")
	case len(r.Documents) > MaxRerankDocuments:
		return paramErrorf("documents", "Invalid 'documents': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", MaxRerankDocuments, len(r.Documents))
	case r.TopN != nil && *r.TopN < 1:
		return paramErrorf("top_n", "Invalid 'top_n': %d. Expected a value >= 1.", *r.TopN)
	}
	return nil
}

// CheckReranker refuses, from its GGUF header and before it is loaded, a
// model that cannot rank (engine.RerankError), naming it.
func (s *Service) CheckReranker(model string) error {
	entry, err := s.resolve(model)
	if err != nil {
		return err
	}
	f, err := gguf.Open(entry.Path)
	if err != nil {
		return Errorf(LoadFailed, "model %q: %v", model, err)
	}
	if err := engine.RerankError(f); err != nil {
		return &ParamError{Param: "model", Message: fmt.Sprintf("model %q cannot rerank: %v", model, err)}
	}
	return nil
}

// IsReranker reports whether a model's GGUF header makes it a reranker
// (for its capabilities).
func IsReranker(f *gguf.File) bool { return engine.RerankError(f) == nil }

// Rerank scores each document against the query with the instance's
// reranker, as llama-server does (engine.Model.RerankTokens builds each
// pair), within the request's window; a pair longer than the window (or
// the embedding context's batch) is an error naming the document. The
// tokens count towards the request's API key and the token counter like
// embeddings, and it holds a place in the queue bound as they do.
func (in *Instance) Rerank(ctx context.Context, query string, docs []string) ([]float32, int, error) {
	pairs := make([][]engine.Token, len(docs))
	for i, d := range docs {
		toks, err := in.si.Model.RerankTokens(query, d)
		if err != nil {
			return nil, 0, Errorf(BadRequest, "document %d: %v", i, err)
		}
		pairs[i] = toks
	}
	var scores []float32
	var n int
	err := in.queued(func() (err error) {
		scores, n, err = in.si.Runner.Rerank(ctx, pairs, in.Window)
		return err
	})
	if err != nil {
		if _, ok := err.(*Error); ok {
			return nil, 0, err // the queue bound
		}
		if errors.Is(err, runner.ErrNotReranker) {
			return nil, 0, &ParamError{Param: "model", Message: fmt.Sprintf("model %q cannot rerank: %v", in.Name, err)}
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, runner.ErrClosed) {
			return nil, 0, Errorf(Internal, "rerank: %v", err)
		}
		return nil, 0, &ParamError{Param: "documents", Message: err.Error()}
	}
	usage.AddTokens(ctx, n, 0)
	in.telemetry.Embedding(ctx, in.Name, n)
	return scores, n, nil
}

// RerankResults sorts the scores, best first (ties by index), keeps the
// request's top_n and the documents when asked.
func RerankResults(req *RerankRequest, scores []float32, tokens int) RerankResponse {
	res := make([]RerankResult, len(scores))
	for i, s := range scores {
		res[i] = RerankResult{Index: i, RelevanceScore: float64(s)}
		if req.ReturnDocuments {
			res[i].Document = &RerankDocument{Text: req.Documents[i].Text}
		}
	}
	sort.SliceStable(res, func(a, b int) bool { return res[a].RelevanceScore > res[b].RelevanceScore })
	if req.TopN != nil && *req.TopN < len(res) {
		res = res[:*req.TopN]
	}
	return RerankResponse{Model: req.Model, Object: "list", Results: res,
		Usage: RerankUsage{PromptTokens: tokens, TotalTokens: tokens}}
}

// Texts are the documents' texts.
func (r *RerankRequest) Texts() []string {
	out := make([]string, len(r.Documents))
	for i, d := range r.Documents {
		out[i] = d.Text
	}
	return out
}
