package ollamaclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"github.com/tadpole-llm/tadpole/models/registry/registrytest"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// storiesContinuation is the demo model's greedy continuation of "Once
// upon a time".
const storiesContinuation = ", there was a little girl named Lily. She loved to play outside in the park."

func ptr[T any](v T) *T { return &v }

func greedy(n int) map[string]any { return map[string]any{"temperature": 0, "num_predict": n} }

// statusError asserts that err is the official client's StatusError with
// code and a message containing want.
func statusError(t *testing.T, what string, err error, code int, want string) {
	t.Helper()
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != code || !strings.Contains(se.ErrorMessage, want) {
		t.Errorf("%s: %v (%T), want a StatusError %d containing %q", what, err, err, code, want)
	}
}

// Ollama's official Go client against `tadpole serve`: every call it has
// for what Tadpole serves, streamed and not, decoded into its own types.
func TestOfficialClient(t *testing.T) {
	s := startTadpole(t)
	c := s.client
	ctx := context.Background()

	t.Run("version", func(t *testing.T) {
		if err := c.Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
		v, err := c.Version(ctx)
		if err != nil || v == "" {
			t.Fatalf("version %q %v", v, err)
		}
	})

	t.Run("list and show", func(t *testing.T) {
		list, err := c.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range list.Models {
			names = append(names, m.Name)
			if m.Size <= 0 || m.Digest == "" || m.Details.Format != "gguf" || m.ModifiedAt.IsZero() {
				t.Errorf("list entry %+v", m)
			}
		}
		for _, want := range []string{"stories:latest", "bigram:latest", "script:latest"} {
			if !slices.Contains(names, want) {
				t.Errorf("list %v lacks %s", names, want)
			}
		}
		show, err := c.Show(ctx, &api.ShowRequest{Model: "stories"})
		if err != nil {
			t.Fatal(err)
		}
		if show.Details.Family != "llama" || show.Details.Format != "gguf" || show.ModelInfo["general.architecture"] != "llama" ||
			show.ModelInfo["llama.context_length"] == nil || !slices.Contains(show.Capabilities, model.CapabilityCompletion) {
			t.Errorf("show stories: details %+v, capabilities %v, architecture %v", show.Details, show.Capabilities, show.ModelInfo["general.architecture"])
		}
		script, err := c.Show(ctx, &api.ShowRequest{Model: "script"})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []model.Capability{model.CapabilityCompletion, model.CapabilityTools, model.CapabilityThinking} {
			if !slices.Contains(script.Capabilities, want) {
				t.Errorf("show script: capabilities %v lack %s", script.Capabilities, want)
			}
		}
		if script.Template == "" {
			t.Error("show script: no template")
		}
	})

	t.Run("generate", func(t *testing.T) {
		var got api.GenerateResponse
		err := c.Generate(ctx, &api.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Stream: ptr(false), Options: greedy(30)},
			func(r api.GenerateResponse) error { got = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.Response, storiesContinuation) || !got.Done || got.DoneReason != "length" ||
			got.EvalCount != 30 || got.PromptEvalCount != 5 || len(got.Context) != 35 || got.Model != "stories" || got.CreatedAt.IsZero() ||
			got.TotalDuration <= 0 || got.LoadDuration <= 0 || got.PromptEvalDuration <= 0 || got.EvalDuration <= 0 {
			t.Fatalf("not streamed: %q %+v", got.Response, got)
		}
		// The returned context goes back in the next request.
		var next api.GenerateResponse
		err = c.Generate(ctx, &api.GenerateRequest{Model: "stories", Prompt: " She", Context: got.Context, Stream: ptr(false), Options: greedy(5)},
			func(r api.GenerateResponse) error { next = r; return nil })
		if err != nil || next.EvalCount != 5 || len(next.Context) <= len(got.Context) {
			t.Fatalf("continued: %v %+v", err, next)
		}

		var pieces []string
		var last api.GenerateResponse
		err = c.Generate(ctx, &api.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Options: greedy(30)},
			func(r api.GenerateResponse) error {
				if last.Done {
					t.Error("a line after done")
				}
				pieces = append(pieces, r.Response)
				last = r
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if len(pieces) < 20 || !strings.HasPrefix(strings.Join(pieces, ""), storiesContinuation) ||
			!last.Done || last.DoneReason != "length" || last.EvalCount != 30 || last.EvalDuration <= 0 {
			t.Fatalf("streamed %d lines %q, last %+v", len(pieces), strings.Join(pieces, ""), last)
		}

		// Stop strings, raw, the chat template of a chat model.
		var text string
		err = c.Generate(ctx, &api.GenerateRequest{Model: "stories", Prompt: "Once upon a time",
			Options: map[string]any{"temperature": 0, "num_predict": 40, "stop": []string{"tle gi"}}},
			func(r api.GenerateResponse) error { text += r.Response; last = r; return nil })
		if err != nil || text != ", there was a lit" || last.DoneReason != "stop" {
			t.Fatalf("stop: %v %q %s", err, text, last.DoneReason)
		}
		err = c.Generate(ctx, &api.GenerateRequest{Model: "bigram", Prompt: "Hi", Stream: ptr(false), Options: greedy(50)},
			func(r api.GenerateResponse) error { last = r; return nil })
		if err != nil || last.Response != testmodels.BigramAnswer {
			t.Fatalf("templated: %v %q", err, last.Response)
		}
		err = c.Generate(ctx, &api.GenerateRequest{Model: "bigram", Prompt: testmodels.CountPrompt, Raw: true, Stream: ptr(false), Options: greedy(50)},
			func(r api.GenerateResponse) error { last = r; return nil })
		if err != nil || last.Response != testmodels.CountAnswer {
			t.Fatalf("raw: %v %q", err, last.Response)
		}
	})

	t.Run("chat", func(t *testing.T) {
		msgs := []api.Message{{Role: "user", Content: "Hi"}}
		var got api.ChatResponse
		err := c.Chat(ctx, &api.ChatRequest{Model: "bigram", Messages: msgs, Stream: ptr(false), Options: greedy(50)},
			func(r api.ChatResponse) error { got = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if got.Message.Role != "assistant" || got.Message.Content != testmodels.BigramAnswer || !got.Done || got.DoneReason != "stop" ||
			got.PromptEvalCount <= 0 || got.EvalCount <= 0 || got.CreatedAt.IsZero() {
			t.Fatalf("not streamed: %+v", got)
		}
		var content strings.Builder
		lines := 0
		err = c.Chat(ctx, &api.ChatRequest{Model: "bigram", Messages: msgs, Options: greedy(50)},
			func(r api.ChatResponse) error { lines++; content.WriteString(r.Message.Content); got = r; return nil })
		if err != nil || lines < 3 || content.String() != testmodels.BigramAnswer || !got.Done || got.DoneReason != "stop" {
			t.Fatalf("streamed: %v, %d lines %q, last %+v", err, lines, content.String(), got)
		}
		// A model without thinking refuses think, as Ollama does.
		err = c.Chat(ctx, &api.ChatRequest{Model: "bigram", Messages: msgs, Stream: ptr(false), Think: &api.ThinkValue{Value: true}},
			func(api.ChatResponse) error { return nil })
		statusError(t, "think on bigram", err, http.StatusBadRequest, "does not support thinking")
	})

	t.Run("tools and thinking", func(t *testing.T) {
		props := api.NewToolPropertiesMap()
		props.Set("city", api.ToolProperty{Type: api.PropertyType{"string"}, Description: "The city."})
		tools := api.Tools{{Type: "function", Function: api.ToolFunction{
			Name: "get_weather", Description: "The weather in a city.",
			Parameters: api.ToolFunctionParameters{Type: "object", Properties: props, Required: []string{"city"}},
		}}}
		ask := []api.Message{{Role: "user", Content: "What is the weather in Paris?"}}
		for _, stream := range []bool{false, true} {
			msgs := ask
			var content, thinking strings.Builder
			var calls []api.ToolCall
			err := c.Chat(ctx, &api.ChatRequest{Model: "script", Messages: msgs, Tools: tools, Stream: ptr(stream),
				Think: &api.ThinkValue{Value: true}, Options: greedy(40)},
				func(r api.ChatResponse) error {
					content.WriteString(r.Message.Content)
					thinking.WriteString(r.Message.Thinking)
					calls = append(calls, r.Message.ToolCalls...)
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if content.String() != "" || thinking.String() != testmodels.ScriptThinking || len(calls) != 1 {
				t.Fatalf("stream %v: content %q thinking %q calls %+v", stream, content.String(), thinking.String(), calls)
			}
			fn := calls[0].Function
			if city, _ := fn.Arguments.Get("city"); fn.Name != testmodels.ScriptTool || city != "Paris" || fn.Arguments.Len() != 1 {
				t.Fatalf("stream %v: call %s(%s)", stream, fn.Name, fn.Arguments.String())
			}
			// The call and its result go back; the model answers from it.
			msgs = append(msgs,
				api.Message{Role: "assistant", Thinking: thinking.String(), ToolCalls: calls},
				api.Message{Role: "tool", Content: "sunny, 22 °C", ToolName: fn.Name})
			var answer strings.Builder
			var last api.ChatResponse
			err = c.Chat(ctx, &api.ChatRequest{Model: "script", Messages: msgs, Tools: tools, Stream: ptr(stream), Options: greedy(40)},
				func(r api.ChatResponse) error { answer.WriteString(r.Message.Content); last = r; return nil })
			if err != nil || answer.String() != testmodels.ScriptAnswer || len(last.Message.ToolCalls) != 0 || last.DoneReason != "stop" {
				t.Fatalf("stream %v: answer %v %q %+v", stream, err, answer.String(), last)
			}
		}
		// think false: no thinking, the call at once.
		var got api.ChatResponse
		err := c.Chat(ctx, &api.ChatRequest{Model: "script", Messages: ask, Tools: tools, Stream: ptr(false),
			Think: &api.ThinkValue{Value: false}, Options: greedy(40)},
			func(r api.ChatResponse) error { got = r; return nil })
		if err != nil || got.Message.Thinking != "" || got.Message.Content != "" || len(got.Message.ToolCalls) != 1 {
			t.Fatalf("think false: %v %+v", err, got.Message)
		}
	})

	t.Run("embed", func(t *testing.T) {
		resp, err := c.Embed(ctx, &api.EmbedRequest{Model: "stories", Input: []string{"The cat sat.", "A dog ran."}})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Embeddings) != 2 || len(resp.Embeddings[0]) != 64 || resp.PromptEvalCount == 0 || resp.Model != "stories" {
			t.Fatalf("%d embeddings, prompt_eval_count %d", len(resp.Embeddings), resp.PromptEvalCount)
		}
		one, err := c.Embed(ctx, &api.EmbedRequest{Model: "stories", Input: "The cat sat.", Dimensions: 16})
		if err != nil || len(one.Embeddings) != 1 || len(one.Embeddings[0]) != 16 {
			t.Fatalf("one, 16 dimensions: %v %+v", err, one)
		}
		legacy, err := c.Embeddings(ctx, &api.EmbeddingRequest{Model: "stories", Prompt: "The cat sat."})
		if err != nil || len(legacy.Embedding) != 64 {
			t.Fatalf("legacy: %v %+v", err, legacy)
		}
		for i, v := range legacy.Embedding {
			if d := v - float64(resp.Embeddings[0][i]); d > 1e-6 || d < -1e-6 {
				t.Fatalf("legacy and embed disagree at %d: %v vs %v", i, v, resp.Embeddings[0][i])
			}
		}
	})

	t.Run("ps and keep_alive", func(t *testing.T) {
		// An empty prompt loads; keep_alive 0 unloads.
		var got api.GenerateResponse
		if err := c.Generate(ctx, &api.GenerateRequest{Model: "stories", KeepAlive: &api.Duration{Duration: time.Hour}},
			func(r api.GenerateResponse) error { got = r; return nil }); err != nil || got.DoneReason != "load" {
			t.Fatalf("load: %v %+v", err, got)
		}
		ps, err := c.ListRunning(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ps.Models, func(m api.ProcessModelResponse) bool { return m.Name == "stories:latest" })
		if i < 0 {
			t.Fatalf("ps: %+v", ps.Models)
		}
		m := ps.Models[i]
		if m.Model != "stories:latest" || m.Size <= 0 || m.ContextLength <= 0 || m.Details.Family != "llama" ||
			m.ExpiresAt.Before(time.Now().Add(50*time.Minute)) || m.ExpiresAt.After(time.Now().Add(61*time.Minute)) {
			t.Fatalf("ps entry %+v", m)
		}
		if err := c.Generate(ctx, &api.GenerateRequest{Model: "stories", KeepAlive: &api.Duration{Duration: 0}},
			func(r api.GenerateResponse) error { got = r; return nil }); err != nil || got.DoneReason != "unload" {
			t.Fatalf("unload: %v %+v", err, got)
		}
		ps, err = c.ListRunning(ctx)
		if err != nil || slices.ContainsFunc(ps.Models, func(m api.ProcessModelResponse) bool { return m.Name == "stories:latest" }) {
			t.Fatalf("ps after unload: %v %+v", err, ps)
		}
	})

	t.Run("create copy delete", func(t *testing.T) {
		// The official client uploads a blob as application/json.
		data, err := os.ReadFile(testmodels.Testdata("stories260K.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		if err := c.CreateBlob(ctx, digest, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		// A wrong digest is refused.
		statusError(t, "blob with a wrong digest", c.CreateBlob(ctx, "sha256:"+strings.Repeat("1", 64), strings.NewReader("data")), http.StatusBadRequest, "")
		var statuses []string
		err = c.Create(ctx, &api.CreateRequest{
			Model: "mystories", Files: map[string]string{"stories260K.gguf": digest},
			System: "Tell a story.", Parameters: map[string]any{"temperature": 0, "num_predict": 12, "stop": []string{"Lily"}},
			License: "MIT",
		}, func(p api.ProgressResponse) error { statuses = append(statuses, p.Status); return nil })
		if err != nil || len(statuses) == 0 || statuses[len(statuses)-1] != "success" {
			t.Fatalf("create: %v %v", err, statuses)
		}
		show, err := c.Show(ctx, &api.ShowRequest{Model: "mystories"})
		if err != nil || show.System != "Tell a story." || show.License != "MIT" || !strings.Contains(show.Parameters, "num_predict") ||
			!strings.Contains(show.Modelfile, "PARAMETER stop Lily") || show.Details.QuantizationLevel != "F32" {
			t.Fatalf("show: %v %+v", err, show)
		}
		// The model's parameters apply: greedy, 12 tokens at most, stop at "Lily".
		want := ", there was a little girl named "
		var got api.GenerateResponse
		err = c.Generate(ctx, &api.GenerateRequest{Model: "mystories", Prompt: "Once upon a time", Raw: true, Stream: ptr(false)},
			func(r api.GenerateResponse) error { got = r; return nil })
		if err != nil || got.Response != want || got.DoneReason != "stop" {
			t.Fatalf("created model: %v %q %s", err, got.Response, got.DoneReason)
		}
		if err := c.Copy(ctx, &api.CopyRequest{Source: "mystories", Destination: "tales:v2"}); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, &api.DeleteRequest{Model: "mystories"}); err != nil {
			t.Fatal(err)
		}
		_, err = c.Show(ctx, &api.ShowRequest{Model: "mystories"})
		statusError(t, "show a deleted model", err, http.StatusNotFound, "not found")
		statusError(t, "delete it again", c.Delete(ctx, &api.DeleteRequest{Model: "mystories"}), http.StatusNotFound, "not found")
		err = c.Generate(ctx, &api.GenerateRequest{Model: "tales:v2", Prompt: "Once upon a time", Raw: true, Stream: ptr(false)},
			func(r api.GenerateResponse) error { got = r; return nil })
		if err != nil || got.Response != want {
			t.Fatalf("the copy: %v %q", err, got.Response)
		}
		list, err := c.List(ctx)
		if err != nil || !slices.ContainsFunc(list.Models, func(m api.ListModelResponse) bool { return m.Name == "tales:v2" }) ||
			slices.ContainsFunc(list.Models, func(m api.ListModelResponse) bool { return m.Name == "mystories:latest" }) {
			t.Fatalf("list after copy and delete: %v %+v", err, list)
		}
	})

	t.Run("errors", func(t *testing.T) {
		// An unknown model: a StatusError 404 from every call, streamed or
		// not.
		err := c.Generate(ctx, &api.GenerateRequest{Model: "nope", Prompt: "x"}, func(api.GenerateResponse) error { return nil })
		statusError(t, "generate", err, http.StatusNotFound, `"nope"`)
		err = c.Chat(ctx, &api.ChatRequest{Model: "nope", Messages: []api.Message{{Role: "user", Content: "x"}}, Stream: ptr(false)},
			func(api.ChatResponse) error { return nil })
		statusError(t, "chat", err, http.StatusNotFound, `"nope"`)
		_, err = c.Show(ctx, &api.ShowRequest{Model: "nope"})
		statusError(t, "show", err, http.StatusNotFound, `"nope"`)
		_, err = c.Embed(ctx, &api.EmbedRequest{Model: "nope", Input: "x"})
		statusError(t, "embed", err, http.StatusNotFound, `"nope"`)
		statusError(t, "copy", c.Copy(ctx, &api.CopyRequest{Source: "nope", Destination: "other"}), http.StatusNotFound, `"nope"`)
		// Images (the client's []byte, base64 on the wire) to a text-only
		// model.
		err = c.Generate(ctx, &api.GenerateRequest{Model: "stories", Prompt: "What is this?", Images: []api.ImageData{testPNG(t)}, Stream: ptr(false)},
			func(api.GenerateResponse) error { return nil })
		statusError(t, "generate with an image", err, http.StatusBadRequest, `model "stories" does not support images`)
		err = c.Chat(ctx, &api.ChatRequest{Model: "stories", Stream: ptr(false),
			Messages: []api.Message{{Role: "user", Content: "What is this?", Images: []api.ImageData{testPNG(t)}}}},
			func(api.ChatResponse) error { return nil })
		statusError(t, "chat with an image", err, http.StatusBadRequest, `model "stories" does not support images`)
		// A bad option.
		err = c.Generate(ctx, &api.GenerateRequest{Model: "stories", Prompt: "x", Options: map[string]any{"temperature": "hot"}},
			func(api.GenerateResponse) error { return nil })
		statusError(t, "bad option", err, http.StatusBadRequest, `"temperature"`)
	})
}

// Pull and push with the official client, against a local registry that
// the server is allowed to reach.
func TestOfficialClientPullPush(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	s := startTadpole(t, "--allow-registry", reg.Host())
	c := s.client
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bigram.gguf")
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reg.PublishModel("library/chatty", "latest", data, "Be nice.")
	name := reg.Host() + "/library/chatty"

	var last api.ProgressResponse
	sawBytes := false
	err = c.Pull(ctx, &api.PullRequest{Model: name, Insecure: true}, func(p api.ProgressResponse) error {
		if p.Total > 0 && p.Completed > 0 {
			sawBytes = true
		}
		last = p
		return nil
	})
	if err != nil || last.Status != "success" || !sawBytes {
		t.Fatalf("pull: %v, last %+v, bytes seen %v", err, last, sawBytes)
	}
	var chat api.ChatResponse
	err = c.Chat(ctx, &api.ChatRequest{Model: name, Messages: []api.Message{{Role: "user", Content: "Hi"}}, Stream: ptr(false), Options: greedy(40)},
		func(r api.ChatResponse) error { chat = r; return nil })
	if err != nil || chat.Message.Content != testmodels.BigramAnswer {
		t.Fatalf("chat with the pulled model: %v %q", err, chat.Message.Content)
	}
	if err := c.Copy(ctx, &api.CopyRequest{Source: name, Destination: reg.Host() + "/me/chatty:v1"}); err != nil {
		t.Fatal(err)
	}
	err = c.Push(ctx, &api.PushRequest{Model: reg.Host() + "/me/chatty:v1", Insecure: true}, func(p api.ProgressResponse) error { last = p; return nil })
	if err != nil || last.Status != "success" {
		t.Fatalf("push: %v %+v", err, last)
	}
	// Pulled back under its pushed name: the same model.
	err = c.Pull(ctx, &api.PullRequest{Model: reg.Host() + "/me/chatty:v1", Insecure: true, Stream: ptr(false)}, func(p api.ProgressResponse) error { last = p; return nil })
	if err != nil || last.Status != "success" {
		t.Fatalf("pull of the pushed model: %v %+v", err, last)
	}
	err = c.Pull(ctx, &api.PullRequest{Model: reg.Host() + "/library/missing", Insecure: true}, func(api.ProgressResponse) error { return nil })
	if err == nil {
		t.Fatal("pulling a missing model succeeded")
	}
}

// testPNG is a small red PNG.
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 8, 8))
	for y := range 8 {
		for x := range 8 {
			img.Set(x, y, color.NRGBA{R: 255, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
