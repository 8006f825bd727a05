package runner

import (
	"context"
	"fmt"

	"github.com/tadpole-llm/tadpole/engine"
)

// Rerank returns the relevance score of each tokenized query/document
// pair (engine.Model.RerankTokens builds them) and the number of tokens
// evaluated. Pairs are scored like embeddings: queued with them, on the
// runner's embedding context (the model's own pooling, rank for a
// reranker), several pairs and requests sharing a decode, each pair one
// sequence read with the classifier head (engine.Context.RankScore).
// A pair longer than window tokens (0: the runner's NumCtx; never more
// than the embedding context's real batch size, which llama.cpp asserts
// on) is an error, and so is a model that is not a reranker
// (engine.Model.RerankError): rank pooling without a classifier head
// reads scores out of bounds in llama.cpp. Cancelling ctx returns ctx's
// error at once and drops the request from the queue.
func (r *Runner) Rerank(ctx context.Context, pairs [][]engine.Token, window int) ([]float32, int, error) {
	if err := r.model.RerankError(); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrNotReranker, err)
	}
	if err := r.checkTokens(pairs, "document"); err != nil {
		return nil, 0, err
	}
	if len(pairs) == 0 {
		return nil, 0, nil
	}
	j := &embedJob{ctx: ctx, prompts: pairs, window: window, rank: true,
		scores: make([]float32, len(pairs)), done: make(chan error, 1)}
	if err := r.runEmbed(j); err != nil {
		return nil, 0, err
	}
	return j.scores, j.tokens, nil
}

// ErrNotReranker is the error of Rerank on a model that cannot rank.
var ErrNotReranker = fmt.Errorf("the model is not a reranker")
