package infer

import (
	"context"
	"errors"
	"fmt"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// checkReranker refuses, from its GGUF header and before it is loaded, a
// model that cannot rank (engine.RerankError), naming it.
func (s *Service) checkReranker(model string) error {
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

// rerank scores each document against the query with the instance's
// reranker, as llama-server does (engine.Model.RerankTokens builds each
// pair), within the request's window; a pair longer than the window (or
// the embedding context's batch) is an error naming the document. The
// tokens count towards the request's API key and the token counter like
// embeddings, and it holds a place in the queue bound as they do.
func (in *Instance) rerank(ctx context.Context, query string, docs []string) ([]float32, int, error) {
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
