package ollamagen

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/infer/infertest"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// The package's own tests run the translation over a fake generation
// path (infertest), without an engine: Ollama's non-streamed answers,
// built from infer's events, and its errors. The Ollama dialect's
// end-to-end tests in ./server run it on the real engine.

func runner(scripts ...[]infer.Event) (Runner, *infertest.Service) {
	fake := &infertest.Service{Scripts: scripts}
	return Runner{Infer: fake, Priority: -1}, fake
}

// A generate answer: the text, done_reason, the context (the final
// event's tokens, image placeholders left out) and the statistics.
func TestGenerateAnswer(t *testing.T) {
	final := infertest.Done("stop", 7, 2, 3)
	final.Tokens = []int32{1, 2, -5, 3, 4}
	r, fake := runner([]infer.Event{infertest.Content("Once"), infertest.Content(" upon"), final})
	resp, err := r.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "fake", Prompt: "Tell me",
		Options: map[string]any{"num_predict": 3, "temperature": 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "fake" || resp.Response != "Once upon" || !resp.Done || resp.DoneReason != "stop" || resp.CreatedAt.IsZero() {
		t.Errorf("answer: %+v", resp)
	}
	if !reflect.DeepEqual(resp.Context, []int{1, 2, 3, 4}) {
		t.Errorf("context %v", resp.Context)
	}
	m := resp.Metrics
	if m.PromptEvalCount != 5 || m.EvalCount != 3 || m.PromptEvalDuration != 10*time.Millisecond || m.EvalDuration != 20*time.Millisecond ||
		m.LoadDuration < 0 || m.TotalDuration < m.LoadDuration {
		t.Errorf("metrics: %+v", m)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Prompt != "Tell me" || reqs[0].Chat || reqs[0].Priority != -1 ||
		reqs[0].Options.NumPredict != 3 || reqs[0].Options.Temperature != 0.5 {
		t.Fatalf("requests: %+v", reqs)
	}
}

// A chat answer: content, thinking and tool calls gathered into one
// assistant message, length as done_reason.
func TestChatAnswer(t *testing.T) {
	r, fake := runner([]infer.Event{
		infertest.Thinking("Hmm."), infertest.Content("Let me look."),
		infertest.Call("call_1", "weather", `{"city":"Paris"}`), infertest.Done("length", 9, 0, 12),
	})
	resp, err := r.Chat(context.Background(), &ollamaapi.ChatRequest{Model: "fake", Messages: []ollamaapi.Message{{Role: "user", Content: "Weather?"}}})
	if err != nil {
		t.Fatal(err)
	}
	msg := resp.Message
	if msg.Role != "assistant" || msg.Content != "Let me look." || msg.Thinking != "Hmm." || resp.DoneReason != "length" || !resp.Done {
		t.Errorf("answer: %+v", resp)
	}
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].ID != "call_1" || msg.ToolCalls[0].Function.Name != "weather" ||
		string(msg.ToolCalls[0].Function.Arguments) != `{"city":"Paris"}` {
		t.Errorf("tool calls: %+v", msg.ToolCalls)
	}
	if resp.EvalCount != 12 || resp.PromptEvalCount != 9 {
		t.Errorf("metrics: %+v", resp.Metrics)
	}
	if reqs := fake.Requests(); len(reqs) != 1 || !reqs[0].Chat || len(reqs[0].Messages) != 1 || reqs[0].Messages[0].Content != "Weather?" {
		t.Fatalf("requests: %+v", reqs)
	}
}

// A request without a prompt only loads the model: done_reason "load",
// or "unload" with keep_alive 0; nothing is generated.
func TestLoadOnly(t *testing.T) {
	r, fake := runner()
	resp, err := r.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "fake"})
	if err != nil || resp.DoneReason != "load" || !resp.Done || resp.Response != "" {
		t.Errorf("load: %+v, %v", resp, err)
	}
	zero := ollamaapi.Duration{}
	chat, err := r.Chat(context.Background(), &ollamaapi.ChatRequest{Model: "fake", KeepAlive: &zero})
	if err != nil || chat.DoneReason != "unload" || chat.Message.Role != "assistant" {
		t.Errorf("unload: %+v, %v", chat, err)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d requests loaded, want 2", n)
	}
}

// Errors: of the generation path by kind as their status, a generation
// that fails or ends without its final event as a 500, bad options as a
// 400 before anything runs.
func TestErrors(t *testing.T) {
	status := func(err error) int {
		var e *dialect.Error
		if !errors.As(err, &e) {
			t.Fatalf("%v (%T) is not a dialect.Error", err, err)
		}
		return e.Status
	}
	gen := &ollamaapi.GenerateRequest{Model: "fake", Prompt: "Hi"}
	for _, tc := range []struct {
		err    error
		status int
	}{
		{infer.Errorf(infer.BadRequest, "prompt too long"), 400},
		{infer.Errorf(infer.NotFound, "model 'fake' not found"), 404},
		{infer.Errorf(infer.LoadFailed, "cannot load"), 500},
		{infer.Errorf(infer.Unavailable, "server busy"), 503},
		{infer.Errorf(infer.RateLimited, "too many streams"), 429},
	} {
		r := Runner{Infer: &infertest.Service{Err: tc.err}}
		_, err := r.Generate(context.Background(), gen)
		if err == nil || status(err) != tc.status || err.Error() != tc.err.Error() {
			t.Errorf("%v: %v, want %d", tc.err, err, tc.status)
		}
	}
	r, _ := runner([]infer.Event{infertest.Content("Once"), infertest.Failed(errors.New("decode: out of memory"))})
	if _, err := r.Generate(context.Background(), gen); err == nil || status(err) != 500 || err.Error() != "decode: out of memory" {
		t.Errorf("failed generation: %v", err)
	}
	r, _ = runner([]infer.Event{infertest.Content("Once")})
	if _, err := r.Chat(context.Background(), &ollamaapi.ChatRequest{Model: "fake", Messages: []ollamaapi.Message{{Role: "user", Content: "Hi"}}}); err == nil || status(err) != 500 {
		t.Errorf("generation without an end: %v", err)
	}
	r, fake := runner([]infer.Event{infertest.Done("stop", 1, 0, 1)})
	for _, req := range []*ollamaapi.GenerateRequest{
		{Prompt: "Hi"},
		{Model: "fake", Prompt: "Hi", Options: map[string]any{"temperature": "hot"}},
		{Model: "fake", Prompt: "Hi", Format: json.RawMessage(`"yaml"`)},
	} {
		if _, err := r.Generate(context.Background(), req); err == nil || status(err) != http.StatusBadRequest {
			t.Errorf("%+v: %v, want a 400", req, err)
		}
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d bad requests reached infer", n)
	}
	r = Runner{Infer: &infertest.Service{OptionsErr: infer.Errorf(infer.NotFound, "model 'nope' not found")}}
	if _, err := r.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "nope", Prompt: "Hi"}); err == nil || status(err) != 404 {
		t.Errorf("unknown model: %v", err)
	}
}
