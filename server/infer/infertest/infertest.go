// Package infertest fakes the generation path at the dialects' boundary,
// for their own fast tests (no engine, no model): Service answers the
// calls a dialect makes of infer.Service, and its generations deliver
// scripted events (infer.Scripted), the model's output already split
// into content, thinking and tool calls, as infer's Stream hands them
// over. The end-to-end tests in ./server run the dialects on the real
// engine; these pin their wire shapes, error shapes and event order.
package infertest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// Model is the name of the fake generations' instance.
const Model = "fake:latest"

// LoadDuration is the fake instance's load time.
const LoadDuration = 250 * time.Millisecond

// Generation is a generation on a fake instance (named Model, loaded in
// LoadDuration, without an engine model) with one stream per script.
// Its instance's Text reads each token as a byte (Tokens).
func Generation(ctx context.Context, scripts ...[]infer.Event) *infer.Generation {
	in := &infer.Instance{Name: Model, LoadDuration: LoadDuration}
	return infer.Scripted(ctx, in, Text, scripts...)
}

// Service is a fake of what the dialects call of infer.Service. Its
// zero value generates nothing useful: set Scripts (or Err).
type Service struct {
	// Scripts are the streams Generate starts, one per request given; a
	// request past the last script gets the last one again.
	Scripts [][]infer.Event
	// Err, when set, is what Generate, Load and CountTokens return.
	Err error
	// OptionsErr, when set, is what ModelOptions(From) return (an
	// unknown model: infer.Errorf(infer.NotFound, …)).
	OptionsErr error
	// PromptTokens is CountTokens' answer.
	PromptTokens int
	// Media is what Limits returns.
	Media infer.MediaLimits
	// Models are what Loaded lists; Idle is KeepAlive's answer.
	Models []infer.Loaded
	Idle   time.Duration
	// Template is ApplyTemplate's answer.
	Template string

	mu   sync.Mutex
	reqs []*infer.Request
}

// Requests are the requests Generate, Load and CountTokens were given,
// in order.
func (s *Service) Requests() []*infer.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*infer.Request(nil), s.reqs...)
}

func (s *Service) record(reqs ...*infer.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, reqs...)
	s.mu.Unlock()
}

// Generate records reqs and returns Err, or a Generation with a stream
// per request.
func (s *Service) Generate(ctx context.Context, reqs ...*infer.Request) (*infer.Generation, error) {
	s.record(reqs...)
	if s.Err != nil {
		return nil, s.Err
	}
	if len(reqs) == 0 {
		return nil, infer.Errorf(infer.BadRequest, "no request to generate")
	}
	scripts := make([][]infer.Event, len(reqs))
	for i := range reqs {
		if len(s.Scripts) > 0 {
			scripts[i] = s.Scripts[min(i, len(s.Scripts)-1)]
		}
	}
	return Generation(ctx, scripts...), nil
}

// Load records req and returns Err, or a generation without streams.
func (s *Service) Load(ctx context.Context, req *infer.Request) (*infer.Generation, error) {
	s.record(req)
	if s.Err != nil {
		return nil, s.Err
	}
	return Generation(ctx), nil
}

// ModelOptions is ModelOptionsFrom Ollama's defaults.
func (s *Service) ModelOptions(model string) (ollamaapi.Options, error) {
	return s.ModelOptionsFrom(model, ollamaapi.DefaultOptions())
}

// ModelOptionsFrom returns base (the fake model has no parameters of
// its own), or OptionsErr.
func (s *Service) ModelOptionsFrom(model string, base ollamaapi.Options) (ollamaapi.Options, error) {
	return base, s.OptionsErr
}

// CountTokens records req and returns PromptTokens, or Err.
func (s *Service) CountTokens(ctx context.Context, req *infer.Request) (int, error) {
	s.record(req)
	return s.PromptTokens, s.Err
}

// Limits returns Media.
func (s *Service) Limits() infer.MediaLimits { return s.Media }

// Embed records the target's model and returns Err, or one vector per
// text (Vector), Tokens(text) tokens each, ready now.
func (s *Service) Embed(ctx context.Context, t infer.Target, texts []string, truncate bool) (*infer.Embeddings, error) {
	s.record(&infer.Request{Model: t.Model, Options: t.Options, KeepAlive: t.KeepAlive})
	if s.Err != nil {
		return nil, s.Err
	}
	out := &infer.Embeddings{Ready: time.Now()}
	for _, text := range texts {
		out.Vectors = append(out.Vectors, Vector(text))
		out.Tokens += len(text)
	}
	return out, nil
}

// Dims is the length of the fake model's embeddings.
const Dims = 4

// Vector is the fake model's embedding of text: Dims values from its
// bytes, normalised.
func Vector(text string) []float32 {
	v := make([]float32, Dims)
	for i := 0; i < len(text); i++ {
		v[i%Dims] += float32(text[i])
	}
	if len(text) == 0 {
		v[0] = 1
	}
	return infer.Renormalize(v)
}

// Rerank records the target's model and returns OptionsErr or Err, or a
// score per document (Score), and the bytes of the pairs as tokens.
func (s *Service) Rerank(ctx context.Context, t infer.Target, query string, docs []string) ([]float32, int, error) {
	s.record(&infer.Request{Model: t.Model, Options: t.Options, KeepAlive: t.KeepAlive})
	if s.OptionsErr != nil {
		return nil, 0, s.OptionsErr
	}
	if s.Err != nil {
		return nil, 0, s.Err
	}
	scores := make([]float32, len(docs))
	n := 0
	for i, d := range docs {
		scores[i] = Score(query, d)
		n += len(query) + len(d)
	}
	return scores, n, nil
}

// Score is the fake reranker's score of doc for query: the share of the
// query's bytes that doc holds.
func Score(query, doc string) float32 {
	if query == "" {
		return 0
	}
	n := 0
	for i := 0; i < len(query); i++ {
		if strings.IndexByte(doc, query[i]) >= 0 {
			n++
		}
	}
	return float32(n) / float32(len(query))
}

// WithVocab records the target's model and returns Err, or f's answer
// on the fake vocabulary: each byte a token (Tokens, Text), ids
// 0..255; special tokens are none, so add and parse change nothing.
func (s *Service) WithVocab(ctx context.Context, t infer.Target, f func(infer.Vocab) error) error {
	s.record(&infer.Request{Model: t.Model, Options: t.Options, KeepAlive: t.KeepAlive})
	if s.Err != nil {
		return s.Err
	}
	return f(byteVocab{})
}

// byteVocab is the fake model's vocabulary: one token a byte.
type byteVocab struct{}

func (byteVocab) VocabSize() int { return 256 }

func (byteVocab) Tokenize(text string, addSpecial, parseSpecial bool) ([]infer.Token, error) {
	return Tokens(text), nil
}

func (byteVocab) TokenPiece(t infer.Token, special bool) []byte {
	if t < 0 || t > 255 {
		return nil
	}
	return []byte{byte(t)}
}

func (byteVocab) Detokenize(toks []infer.Token, special bool) string { return Text(toks) }

// ApplyTemplate records req and returns Template, or Err.
func (s *Service) ApplyTemplate(ctx context.Context, req *infer.Request) (string, error) {
	s.record(req)
	return s.Template, s.Err
}

// LoRAAdapters, SetLoRAScales and LoadLoRA return Err, else no adapters:
// the fake model has none.
func (s *Service) LoRAAdapters(ctx context.Context, model string) ([]infer.LoRAAdapter, error) {
	return nil, s.Err
}

// SetLoRAScales: see LoRAAdapters.
func (s *Service) SetLoRAScales(ctx context.Context, model string, scales map[int]float32) ([]infer.LoRAAdapter, error) {
	return nil, s.Err
}

// LoadLoRA: see LoRAAdapters.
func (s *Service) LoadLoRA(ctx context.Context, model, name string) ([]infer.LoRAAdapter, error) {
	return nil, s.Err
}

// Loaded returns Models.
func (s *Service) Loaded() []infer.Loaded { return s.Models }

// KeepAlive returns Idle.
func (s *Service) KeepAlive() time.Duration { return s.Idle }

// PromptCache reports no prompt cache.
func (s *Service) PromptCache() (infer.CacheStats, bool) { return infer.CacheStats{}, false }

// Unload unloads nothing: it returns the requests holding the loaded
// model at path (Models), as infer does when one is busy.
func (s *Service) Unload(path string) (requests int) {
	for _, m := range s.Models {
		if m.Path == path {
			return m.Requests
		}
	}
	return 0
}

// Content is an event with content.
func Content(text string) infer.Event {
	return infer.Event{Delta: chatparse.Delta{Content: text}}
}

// Thinking is an event with thinking.
func Thinking(text string) infer.Event {
	return infer.Event{Delta: chatparse.Delta{Thinking: text}}
}

// Call is an event with one complete tool call (args a JSON object).
func Call(id, name, args string) infer.Event {
	return infer.Event{Delta: chatparse.Delta{ToolCalls: []chatparse.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}}
}

// Done is a final event ending for reason ("stop", "length") after
// prompt tokens read (cached of them from a cache) and eval generated.
func Done(reason string, prompt, cached, eval int) infer.Event {
	return infer.Event{Done: true, DoneReason: reason, Stats: infer.Stats{
		PromptTokens: prompt, PromptEvalCount: prompt - cached, CachedTokens: cached, EvalCount: eval,
		PromptEvalDuration: 10 * time.Millisecond, EvalDuration: 20 * time.Millisecond,
	}}
}

// Failed is a final event that ends the generation with err.
func Failed(err error) infer.Event { return infer.Event{Done: true, Err: err} }

// Tokens are text's bytes as tokens, one each: what a final event's
// Tokens hold for the fake instance's Text.
func Tokens(text string) []int32 {
	toks := make([]int32, len(text))
	for i := 0; i < len(text); i++ {
		toks[i] = int32(text[i])
	}
	return toks
}

// Text is the fake instance's detokenizer: each token a byte.
func Text(tokens []int32) string {
	b := make([]byte, len(tokens))
	for i, t := range tokens {
		b[i] = byte(t)
	}
	return string(b)
}

// Serve starts an echo server on a real loopback listener until the test
// ends, with the routes register puts on it (a dialect's handler over a
// fake Service, and the error handler it is served with), and returns
// its base URL.
func Serve(t testing.TB, register func(e *echo.Echo)) string {
	t.Helper()
	e := echo.New()
	register(e)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Post sends body (JSON) to url, a handler on a real listener, and
// returns the answer's status, headers and body.
func Post(t testing.TB, url, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}
