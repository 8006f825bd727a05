package infer

import (
	"context"
	"time"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// The requests that do not generate (embeddings, reranking, the
// vocabulary's tokenize and detokenize) each take a model for one call:
// Embed, Rerank and WithVocab acquire it (loading it if need be), run,
// and release it before they return, as Generate's handle does for a
// generation, so no dialect pairs an acquire with a release itself.

// Target is the model a request without a generation runs on: its name,
// the request's options (load-time ones are the operator's, as for
// Acquire) and keep_alive (nil: the server's).
type Target struct {
	Model     string
	Options   ollamaapi.Options
	KeepAlive *time.Duration
}

// Embeddings is Embed's answer.
type Embeddings struct {
	// Vectors holds each text's pooled, normalised embedding, in order.
	Vectors [][]float32
	// Tokens is the number of tokens evaluated.
	Tokens int
	// Ready is when the model was loaded and acquired (Ollama's
	// load_duration ends there).
	Ready time.Time
}

// Embed computes each text's embedding on t's model (Instance.embed):
// no texts only loads the model (Ollama's "load the model" request). A
// text the model cannot take is a ParamError about "input".
func (s *Service) Embed(ctx context.Context, t Target, texts []string, truncate bool) (*Embeddings, error) {
	in, err := s.Acquire(ctx, t.Model, t.Options, t.KeepAlive)
	if err != nil {
		return nil, err
	}
	defer in.Release()
	out := &Embeddings{Ready: time.Now()}
	if len(texts) == 0 {
		return out, nil
	}
	out.Vectors, out.Tokens, err = in.embed(ctx, texts, truncate)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Rerank scores each document against query on t's model
// (Instance.rerank), after refusing a model that cannot rank from its
// header, before it is loaded (checkReranker).
func (s *Service) Rerank(ctx context.Context, t Target, query string, docs []string) (scores []float32, tokens int, err error) {
	if err := s.checkReranker(t.Model); err != nil {
		return nil, 0, err
	}
	in, err := s.Acquire(ctx, t.Model, t.Options, t.KeepAlive)
	if err != nil {
		return nil, 0, err
	}
	defer in.Release()
	return in.rerank(ctx, query, docs)
}

// WithVocab runs f with the vocabulary of t's model, held for f's call
// only: f must not keep it.
func (s *Service) WithVocab(ctx context.Context, t Target, f func(Vocab) error) error {
	in, err := s.Acquire(ctx, t.Model, t.Options, t.KeepAlive)
	if err != nil {
		return err
	}
	defer in.Release()
	return f(in.vocab())
}
