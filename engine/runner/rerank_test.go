package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

func loadReranker(t testing.TB) *engine.Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reranker.gguf")
	if err := testmodels.WriteReranker(path); err != nil {
		t.Fatal(err)
	}
	m, err := engine.LoadModel(path, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// keywordCount is the number of keyword tokens in a pair.
func keywordCount(m *engine.Model, toks []engine.Token) int {
	n := 0
	for _, tok := range toks {
		if string(m.TokenPiece(tok, false)) == " "+testmodels.RerankerKeyword {
			n++
		}
	}
	return n
}

// Rank scoring on the generated reranker: each pair's score is the one
// its construction predicts (testmodels.RerankerScore), whether the pairs
// are scored one by one, in one request or by concurrent requests sharing
// decodes; a pair longer than the window and a model without a classifier
// head are refused with errors, and the runner keeps serving.
func TestRerankScores(t *testing.T) {
	m := loadReranker(t)
	if !m.IsReranker() {
		t.Fatalf("the generated reranker is not a reranker: %v", m.RerankError())
	}
	r := newRunner(t, m, Config{NumCtx: 128, Parallel: 1})
	query := "frog"
	docs := []string{"a pond", "frog pond", "frog frog frog", "the frog in the green pond", "lily pad on water", "frog", "sky bird tree frog jumps"}
	pairs := make([][]engine.Token, len(docs))
	total := 0
	for i, d := range docs {
		p, err := m.RerankTokens(query, d)
		if err != nil {
			t.Fatal(err)
		}
		if p[0] != m.BOS() || p[len(p)-1] != m.EOS() {
			t.Fatalf("pair %q: %v, want <s> query </s> document </s>", d, p)
		}
		pairs[i] = p
		total += len(p)
	}
	alone := make([]float32, len(docs))
	for i, p := range pairs {
		s, n, err := r.Rerank(context.Background(), [][]engine.Token{p}, 0)
		if err != nil || len(s) != 1 || n != len(p) {
			t.Fatalf("%q: %v, %d tokens, %v", docs[i], s, n, err)
		}
		want := testmodels.RerankerScore(keywordCount(m, p), len(p))
		if math.Abs(float64(s[0])-want) > 1e-4 {
			t.Errorf("%q (%d tokens, %d keywords): score %v, want %v", docs[i], len(p), keywordCount(m, p), s[0], want)
		}
		alone[i] = s[0]
	}
	// The query's frog counts too: 4/7 > 2/6 > 2/9 > 1/6 of the tokens.
	if !(alone[2] > alone[1] && alone[1] > alone[3] && alone[3] > alone[0] && alone[0] > 0) {
		t.Errorf("scores %v do not order frog frog frog > frog pond > the frog in the green pond > a pond > 0", alone)
	}
	none, err := m.RerankTokens("pond", "a pond")
	if err != nil {
		t.Fatal(err)
	}
	if s, _, err := r.Rerank(context.Background(), [][]engine.Token{none}, 0); err != nil || s[0] != 0 {
		t.Errorf("no keyword in the pair: score %v, %v; want 0", s, err)
	}
	all, n, err := r.Rerank(context.Background(), pairs, 0)
	if err != nil || n != total {
		t.Fatalf("batched: %d tokens (want %d), %v", n, total, err)
	}
	for i := range all {
		if math.Abs(float64(all[i]-alone[i])) > 1e-5 {
			t.Errorf("%q: batched score %v, alone %v", docs[i], all[i], alone[i])
		}
	}
	// Concurrent requests share decodes.
	var wg sync.WaitGroup
	errs := make(chan error, len(pairs))
	for i := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _, err := r.Rerank(context.Background(), [][]engine.Token{pairs[i], pairs[(i+1)%len(pairs)]}, 0)
			if err != nil {
				errs <- err
			} else if math.Abs(float64(s[0]-alone[i])) > 1e-5 || math.Abs(float64(s[1]-alone[(i+1)%len(pairs)])) > 1e-5 {
				errs <- errors.New("concurrent scores differ for " + docs[i])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// A reranker's pooled output is no embedding.
	if _, _, err := r.Embed(context.Background(), pairs[:1], 0, false); !errors.Is(err, ErrReranker) {
		t.Errorf("embedding with a reranker: %v", err)
	}
	// A pair longer than the window: refused, naming the document.
	long, err := m.RerankTokens(query, strings.Repeat("frog ", 200))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Rerank(context.Background(), [][]engine.Token{pairs[0], long}, 0); err == nil || !strings.Contains(err.Error(), "document 1") {
		t.Errorf("pair of %d tokens in a context of 128: %v, want an error about document 1", len(long), err)
	}
	if _, _, err := r.Rerank(context.Background(), [][]engine.Token{pairs[1]}, 4); err == nil || !strings.Contains(err.Error(), "more than the context of 4") {
		t.Errorf("window 4: %v", err)
	}
	if _, _, err := r.Rerank(context.Background(), [][]engine.Token{{engine.Token(m.VocabSize())}}, 0); err == nil || !strings.Contains(err.Error(), "not in the vocabulary") {
		t.Errorf("token past the vocabulary: %v", err)
	}
	if _, _, err := r.Rerank(context.Background(), [][]engine.Token{{}}, 0); err == nil {
		t.Error("an empty pair was scored")
	}
	s, _, err := r.Rerank(context.Background(), pairs[2:3], 0)
	if err != nil || math.Abs(float64(s[0]-alone[2])) > 1e-5 {
		t.Fatalf("after the refusals: %v, %v", s, err)
	}
}

// A model that is not a reranker is refused before anything reaches
// llama.cpp, and so is rank pooling on it at the engine.
func TestRerankNotReranker(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	if m.IsReranker() {
		t.Fatal("stories260K is a reranker?")
	}
	r := newRunner(t, m, Config{NumCtx: 64, Parallel: 1})
	_, _, err := r.Rerank(context.Background(), [][]engine.Token{tokenize(t, m, "Once")}, 0)
	if !errors.Is(err, ErrNotReranker) || !strings.Contains(err.Error(), "pooling_type") {
		t.Errorf("rerank on a generative model: %v", err)
	}
	if _, err := m.NewContext(engine.ContextParams{NumCtx: 64, Embeddings: true, Pooling: engine.PoolingRank, Threads: 1}); err == nil || !strings.Contains(err.Error(), "rank pooling") {
		t.Errorf("rank pooling context on a model without a classifier head: %v", err)
	}
}

// A model that declares rank pooling without a classifier output head
// loads in llama.cpp (the head tensors are optional) but would read its
// scores out of bounds, and with more classifier labels than n_embd abort
// the process in ggml_backend_tensor_get: the engine refuses its rank
// contexts, and the runner its rerank and embedding requests, with errors.
func TestRerankHeadless(t *testing.T) {
	kvs, tensors := testmodels.Reranker()
	var kept []gguf.Tensor
	for _, tt := range tensors {
		if !strings.HasPrefix(tt.Name, "cls.output.") {
			kept = append(kept, tt)
		}
	}
	labels := make([]string, 2*testmodels.RerankerEmbd)
	for i := range labels {
		labels[i] = fmt.Sprintf("label%d", i)
	}
	kvs = append(kvs, gguf.KV{Key: "bert.classifier.output_labels", Value: labels})
	path := filepath.Join(t.TempDir(), "headless.gguf")
	if err := gguf.WriteFile(path, kvs, kept); err != nil {
		t.Fatal(err)
	}
	m, err := engine.LoadModel(path, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if err := m.RerankError(); err == nil || !strings.Contains(err.Error(), "cls.output.weight") {
		t.Fatalf("headless model: RerankError %v", err)
	}
	for _, p := range []engine.Pooling{engine.PoolingModel, engine.PoolingRank} {
		if c, err := m.NewContext(engine.ContextParams{NumCtx: 64, Embeddings: true, Pooling: p, Threads: 1}); err == nil || !strings.Contains(err.Error(), "classifier head") {
			c.Close()
			t.Errorf("pooling %d on a headless rank model: %v", p, err)
		}
	}
	r := newRunner(t, m, Config{NumCtx: 64, Parallel: 1})
	pair, err := m.RerankTokens("frog", "frog pond")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Rerank(context.Background(), [][]engine.Token{pair, pair}, 0); !errors.Is(err, ErrNotReranker) {
		t.Errorf("rerank: %v", err)
	}
	if _, _, err := r.Embed(context.Background(), [][]engine.Token{pair, pair}, 0, false); err == nil || !strings.Contains(err.Error(), "classifier head") {
		t.Errorf("embed: %v", err)
	}
}

// A model with a rerank template (tokenizer.chat_template.rerank) has its
// pairs built from it, special tokens parsed, as llama-server does.
func TestRerankTemplate(t *testing.T) {
	kvs, tensors := testmodels.Reranker()
	kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template.rerank", Value: "<s>query: {query} frog</s>document: {document}</s>"})
	path := filepath.Join(t.TempDir(), "template.gguf")
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	m, err := engine.LoadModel(path, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	pair, err := m.RerankTokens("pond", "a pond")
	if err != nil {
		t.Fatal(err)
	}
	text := m.Detokenize(pair, true)
	if pair[0] != m.BOS() || !strings.Contains(text, "query: pond frog</s>") || !strings.HasSuffix(text, "document: a pond</s>") {
		t.Fatalf("template pair %v = %q", pair, text)
	}
	if keywordCount(m, pair) != 1 {
		t.Fatalf("template pair %q: %d keywords, want the template's one", text, keywordCount(m, pair))
	}
	r := newRunner(t, m, Config{NumCtx: 128, Parallel: 1})
	s, n, err := r.Rerank(context.Background(), [][]engine.Token{pair}, 0)
	if err != nil || n != len(pair) {
		t.Fatalf("rerank: %v, %d tokens, %v", s, n, err)
	}
	if want := testmodels.RerankerScore(1, len(pair)); math.Abs(float64(s[0])-want) > 1e-4 {
		t.Errorf("score %v, want %v (1 keyword in %d tokens)", s[0], want, len(pair))
	}
}
