package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// oaClient is the official OpenAI client pointed at the test server.
func oaClient(ts *testServer) openai.Client {
	return openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

func user(s string) []openai.ChatCompletionMessageParamUnion {
	return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(s)}
}

func asAPIError(t *testing.T, err error, status int, code, param string) {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an API error", err)
	}
	if e.StatusCode != status || e.Code != code || e.Param != param || e.Message == "" {
		t.Fatalf("error %d code %q param %q (%s), want %d %q %q", e.StatusCode, e.Code, e.Param, e.Message, status, code, param)
	}
}

// logit_bias reaches the sampler: banning the first token of the scripted
// answer changes it.
func TestOpenAILogitBias(t *testing.T) {
	ts := startServer(t)
	client := oaClient(ts)
	hello := -1
	for i, tok := range testmodels.BigramTokens() {
		if tok == "Hello" {
			hello = i
		}
	}
	if hello < 0 {
		t.Fatal("no Hello token")
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "bigram", Messages: msgs, Temperature: openai.Float(0), MaxCompletionTokens: openai.Int(10),
		LogitBias: map[string]int64{fmt.Sprint(hello): -100},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got == testmodels.BigramAnswer || strings.HasPrefix(got, "Hello") {
		t.Fatalf("banned token still chosen: %q", got)
	}
}

func TestOpenAIChat(t *testing.T) {
	ts := startServer(t)
	client := oaClient(ts)
	ctx := context.Background()
	before := time.Now().Unix()
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       "bigram",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.DeveloperMessage("Be brief."), openai.UserMessage("Hi")},
		Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("%d choices", len(resp.Choices))
	}
	ch := resp.Choices[0]
	if ch.Message.Content != testmodels.BigramAnswer || ch.Message.Role != "assistant" || ch.FinishReason != "stop" || ch.Index != 0 {
		t.Fatalf("choice %+v", ch)
	}
	u := resp.Usage
	if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Object != "chat.completion" || resp.Model != "bigram" ||
		!strings.HasPrefix(resp.SystemFingerprint, "fp_") || resp.Created < before || resp.Created > time.Now().Unix() {
		t.Fatalf("completion %s %s %s %s %d", resp.ID, resp.Object, resp.Model, resp.SystemFingerprint, resp.Created)
	}
	if u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v", u)
	}

	// Content as text parts; a history with an assistant turn and a tool
	// result; tools are accepted (the bigram model's ChatML template does not show
	// them, and its answer is not a call).
	parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("Hi"), openai.TextContentPart("Hi")}
	resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       "bigram",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi"), openai.AssistantMessage("Hello."), openai.ToolMessage("20 degrees", "call_1"), openai.UserMessage(parts)},
		Temperature: openai.Float(0),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != testmodels.BigramAnswer {
		t.Fatalf("with parts and tools: %q", resp.Choices[0].Message.Content)
	}

	// A token limit ends with "length".
	resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "bigram", Messages: user("Hi"), Temperature: openai.Float(0), MaxCompletionTokens: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0]; c.FinishReason != "length" || resp.Usage.CompletionTokens != 2 || !strings.HasPrefix(testmodels.BigramAnswer, c.Message.Content) || c.Message.Content == "" {
		t.Fatalf("max tokens: %q %s %+v", c.Message.Content, c.FinishReason, resp.Usage)
	}

	// n choices run in parallel slots; greedy, they are all the same. The
	// prompt counts once.
	one, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "bigram", Messages: user("Hi"), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	u = one.Usage
	resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "bigram", Messages: user("Hi"), Temperature: openai.Float(0), N: openai.Int(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 3 || resp.Usage.CompletionTokens != 3*u.CompletionTokens || resp.Usage.PromptTokens != u.PromptTokens {
		t.Fatalf("n=3: %d choices, usage %+v", len(resp.Choices), resp.Usage)
	}
	for i, c := range resp.Choices {
		if c.Index != int64(i) || c.Message.Content != testmodels.BigramAnswer || c.FinishReason != "stop" {
			t.Fatalf("choice %d: %+v", i, c)
		}
	}

	// Log-probabilities: one per generated token, the greedy token first
	// among the alternatives.
	resp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "bigram", Messages: user("Hi"), Temperature: openai.Float(0), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	lps := resp.Choices[0].Logprobs.Content
	var text strings.Builder
	for _, lp := range lps {
		text.WriteString(lp.Token)
		if lp.Logprob > 0 || len(lp.TopLogprobs) != 3 || lp.TopLogprobs[0].Token != lp.Token || len(lp.Bytes) != len(lp.Token) {
			t.Fatalf("logprob %+v", lp)
		}
		if lp.TopLogprobs[0].Logprob < lp.TopLogprobs[1].Logprob {
			t.Fatalf("alternatives out of order: %+v", lp.TopLogprobs)
		}
	}
	if len(lps) == 0 || !strings.HasPrefix(text.String(), testmodels.BigramAnswer) {
		t.Fatalf("logprob tokens %q", text.String())
	}

	// Unknown model: 404 model_not_found.
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope", Messages: user("Hi")})
	asAPIError(t, err, 404, "model_not_found", "model")
}

func TestOpenAIChatStreaming(t *testing.T) {
	ts := startServer(t)
	client := oaClient(ts)
	for _, n := range []int64{1, 2} {
		stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: "bigram", Messages: user("Hi"), Temperature: openai.Float(0), N: openai.Int(n),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		var acc openai.ChatCompletionAccumulator
		chunks, finished := 0, 0
		var usage openai.CompletionUsage
		for stream.Next() {
			chunk := stream.Current()
			if !acc.AddChunk(chunk) {
				t.Fatalf("the accumulator refused chunk %d: %s", chunks, chunk.RawJSON())
			}
			if chunks == 0 && (len(chunk.Choices) != 1 || chunk.Choices[0].Delta.Role != "assistant") {
				t.Fatalf("first chunk %s", chunk.RawJSON())
			}
			if _, ok := acc.JustFinishedContent(); ok {
				finished++
			}
			if chunk.JSON.Usage.Valid() {
				if len(chunk.Choices) != 0 {
					t.Fatalf("usage chunk with choices: %s", chunk.RawJSON())
				}
				usage = chunk.Usage
			}
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != int(n) || chunks < 4 || usage.CompletionTokens <= 0 || usage.TotalTokens != usage.PromptTokens+usage.CompletionTokens {
			t.Fatalf("n=%d: %d choices, %d chunks, usage %+v", n, len(acc.Choices), chunks, usage)
		}
		for i, c := range acc.Choices {
			if c.Message.Content != testmodels.BigramAnswer || c.FinishReason != "stop" || c.Index != int64(i) {
				t.Fatalf("choice %d: %q (%s)", i, c.Message.Content, c.FinishReason)
			}
		}
		if !strings.HasPrefix(acc.ID, "chatcmpl-") || acc.Model != "bigram" || acc.Usage.CompletionTokens != usage.CompletionTokens || finished == 0 {
			t.Fatalf("accumulated %s %s %+v, %d finished", acc.ID, acc.Model, acc.Usage, finished)
		}
	}
}

func TestOpenAIStopAndSeed(t *testing.T) {
	ts := startServer(t)
	client := oaClient(ts)
	ctx := context.Background()
	// Stop strings, streamed or not: nothing of the stop string or after
	// it is sent.
	resp, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "stories", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(40), Temperature: openai.Float(0), Stop: openai.CompletionNewParamsStopUnion{OfString: openai.String("tle gi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0]; c.Text != ", there was a lit" || c.FinishReason != "stop" {
		t.Fatalf("completion stop: %q (%s)", c.Text, c.FinishReason)
	}
	for _, stream := range []bool{false, true} {
		params := openai.ChatCompletionNewParams{
			Model: "bigram", Messages: user("Hi"), Temperature: openai.Float(0),
			Stop: openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"never", "from"}},
		}
		var content, reason string
		if stream {
			s := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			content, reason = acc.Choices[0].Message.Content, acc.Choices[0].FinishReason
		} else {
			r, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			content, reason = r.Choices[0].Message.Content, r.Choices[0].FinishReason
		}
		if content != "Hello " || reason != "stop" {
			t.Fatalf("chat stop (stream %v): %q (%s)", stream, content, reason)
		}
	}

	// Sampling with a seed is reproducible; choice i of n uses seed+i.
	sample := func(seed, n int64) []string {
		r, err := client.Completions.New(ctx, openai.CompletionNewParams{
			Model: "stories", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
			MaxTokens: openai.Int(24), Temperature: openai.Float(1), Seed: openai.Int(seed), N: openai.Int(n),
		})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range r.Choices {
			out = append(out, c.Text)
		}
		return out
	}
	a, b, pair := sample(42, 1), sample(42, 1), sample(42, 2)
	if a[0] != b[0] || pair[0] != a[0] || pair[1] != sample(43, 1)[0] {
		t.Fatalf("seeded samples differ: %q %q %q", a, b, pair)
	}
	if pair[0] == pair[1] {
		t.Fatalf("choices with seeds 42 and 43 are the same: %q", pair)
	}
}

func TestOpenAIStructuredOutput(t *testing.T) {
	ts := startServer(t)
	client := oaClient(ts)
	type answer struct {
		Answer string `json:"answer"`
		Count  int    `json:"count"`
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer": map[string]any{"type": "string", "enum": []string{"yes", "no"}},
			"count":  map[string]any{"type": "integer", "minimum": 0, "maximum": 9},
		},
		"required":             []string{"answer", "count"},
		"additionalProperties": false,
	}
	for _, model := range []string{"bigram", "stories"} {
		resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			// The greedy bigram model takes all the indentation the
			// grammar allows (a newline and 20 tabs at each place).
			Model: model, Messages: user("Answer in JSON."), Temperature: openai.Float(0), MaxCompletionTokens: openai.Int(230),
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: schema, Strict: openai.Bool(true)},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var got answer
		content := resp.Choices[0].Message.Content
		t.Logf("%s: %q", model, content)
		if err := json.Unmarshal([]byte(content), &got); err != nil {
			t.Fatalf("%s: %q is not the schema's JSON: %v", model, content, err)
		}
		// The exact greedy answers under the schema's grammar.
		want := map[string]answer{"bigram": {"no", 0}, "stories": {"yes", 3}}[model]
		if got != want || resp.Choices[0].FinishReason != "stop" {
			t.Fatalf("%s: %q (%s)", model, content, resp.Choices[0].FinishReason)
		}
	}
	// json_object: any JSON object.
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "stories", Messages: user("Answer in JSON."), Temperature: openai.Float(0), MaxCompletionTokens: openai.Int(100),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	content := resp.Choices[0].Message.Content
	t.Logf("json_object: %q (%s)", content, resp.Choices[0].FinishReason)
	if !strings.HasPrefix(content, "{") || (resp.Choices[0].FinishReason == "stop" && !json.Valid([]byte(content))) {
		t.Fatalf("json_object: %q (%s)", content, resp.Choices[0].FinishReason)
	}
}

func TestOpenAIModels(t *testing.T) {
	ts := startServer(t)
	client := oaClient(ts)
	ctx := context.Background()
	page, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy != "library" || m.Created <= 0 {
			t.Fatalf("model %+v", m)
		}
	}
	if !slices.Contains(ids, "stories:latest") || !slices.Contains(ids, "bigram:latest") {
		t.Fatalf("models %v", ids)
	}
	for _, name := range []string{"stories", "stories:latest"} {
		m, err := client.Models.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != "stories:latest" || m.Object != "model" {
			t.Fatalf("get %s: %+v", name, m)
		}
	}
	_, err = client.Models.Get(ctx, "nope")
	asAPIError(t, err, 404, "model_not_found", "model")

	// Names with slashes and colons: escaped by the SDK, or not.
	const long = "hf.co/someone/tiny-bigram:Q8_0"
	if err := ts.Client.Copy(ctx, &ollamaapi.CopyRequest{Source: "bigram", Destination: long}); err != nil {
		t.Fatal(err)
	}
	m, err := client.Models.Get(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != long || m.OwnedBy != "someone" {
		t.Fatalf("get %s: %+v", long, m)
	}
	resp, err := http.Get(ts.URL + "/v1/models/" + long)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if resp.StatusCode != 200 || raw["id"] != long {
		t.Fatalf("unescaped: %d %v", resp.StatusCode, raw)
	}
	chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: long, Messages: user("Hi"), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if chat.Choices[0].Message.Content != testmodels.BigramAnswer || chat.Model != long {
		t.Fatalf("chat with %s: %+v", long, chat)
	}
}

func TestOpenAICompletions(t *testing.T) {
	ts := startServer(t)
	client := oaClient(ts)
	ctx := context.Background()
	prompt := func(s string) openai.CompletionNewParamsPromptUnion {
		return openai.CompletionNewParamsPromptUnion{OfString: openai.String(s)}
	}
	resp, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "stories", Prompt: prompt("Once upon a time"), MaxTokens: openai.Int(30), Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := resp.Choices[0]
	if !strings.HasPrefix(c.Text, storiesContinuation) || c.FinishReason != "length" || resp.Usage.PromptTokens != 5 || resp.Usage.CompletionTokens != 30 ||
		resp.Object != "text_completion" || !strings.HasPrefix(resp.ID, "cmpl-") || resp.Model != "stories" {
		t.Fatalf("completion %q (%s) %+v %s %s", c.Text, c.FinishReason, resp.Usage, resp.Object, resp.ID)
	}
	// OpenAI's default limit is 16 tokens; echo puts the prompt first.
	resp, err = client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "stories", Prompt: prompt("Once upon a time"), Temperature: openai.Float(0), Echo: openai.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0]; resp.Usage.CompletionTokens != 16 || !strings.HasPrefix(c.Text, "Once upon a time, there was a little girl") {
		t.Fatalf("echo: %q %+v", c.Text, resp.Usage)
	}
	// Several prompts, n each: choice p*n+i answers prompt p. Raw text:
	// the bigram model counts and names colours.
	resp, err = client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "bigram", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{testmodels.CountPrompt, testmodels.ColorPrompt}},
		Temperature: openai.Float(0), N: openai.Int(2), MaxTokens: openai.Int(50),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{testmodels.CountAnswer, testmodels.CountAnswer, testmodels.ColorAnswer, testmodels.ColorAnswer}
	if len(resp.Choices) != 4 {
		t.Fatalf("%d choices", len(resp.Choices))
	}
	for i, c := range resp.Choices {
		if c.Index != int64(i) || c.Text != want[i] || c.FinishReason != "stop" {
			t.Fatalf("choice %d: %q (%s)", i, c.Text, c.FinishReason)
		}
	}
	// Token prompts.
	red := slices.Index(testmodels.BigramTokens(), "▁red")
	resp, err = client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "bigram", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{int64(red)}},
		Temperature: openai.Float(0), Echo: openai.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Choices[0]; c.Text != " red"+testmodels.ColorAnswer || resp.Usage.PromptTokens != 1 {
		t.Fatalf("token prompt: %q %+v", c.Text, resp.Usage)
	}
	// Log-probabilities in the legacy shape.
	resp, err = client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "bigram", Prompt: prompt(testmodels.LoopPrompt), Temperature: openai.Float(0), MaxTokens: openai.Int(6), Logprobs: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	lp := resp.Choices[0].Logprobs
	if resp.Choices[0].Text != testmodels.LoopAnswer(6) || strings.Join(lp.Tokens, "") != testmodels.LoopAnswer(6) || len(lp.TokenLogprobs) != 6 ||
		len(lp.TopLogprobs) != 6 || len(lp.TopLogprobs[0]) != 2 || lp.TextOffset[1] != int64(len(lp.Tokens[0])) {
		t.Fatalf("logprobs %q %+v", resp.Choices[0].Text, lp)
	}
	// Streaming with usage.
	stream := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model: "bigram", Prompt: prompt(testmodels.LoopPrompt), Temperature: openai.Float(0), MaxTokens: openai.Int(20),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	var reason string
	var usage openai.CompletionUsage
	for stream.Next() {
		ev := stream.Current()
		for _, c := range ev.Choices {
			text.WriteString(c.Text)
			if c.FinishReason != "" {
				reason = string(c.FinishReason)
			}
		}
		if ev.JSON.Usage.Valid() {
			usage = ev.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != testmodels.LoopAnswer(20) || reason != "length" || usage.CompletionTokens != 20 {
		t.Fatalf("stream %q (%s) %+v", text.String(), reason, usage)
	}
	// best_of is refused clearly; so is suffix (fill-in-the-middle) on a
	// model without FIM tokens.
	_, err = client.Completions.New(ctx, openai.CompletionNewParams{Model: "stories", Prompt: prompt("x"), BestOf: openai.Int(3)})
	asAPIError(t, err, 400, "unsupported_value", "best_of")
	_, err = client.Completions.New(ctx, openai.CompletionNewParams{Model: "stories", Prompt: prompt("x"), Suffix: openai.String("end")})
	asAPIError(t, err, 400, "", "")
	if e := (*openai.Error)(nil); !errors.As(err, &e) || !strings.Contains(e.Message, "fill-in-the-middle") {
		t.Fatalf("suffix error: %v", err)
	}
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func TestOpenAIEmbeddings(t *testing.T) {
	ts := startServer(t)
	client := oaClient(ts)
	ctx := context.Background()
	input := openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"Once upon a time", "Lily"}}
	resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "stories", Input: input})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 2 || resp.Model != "stories" || resp.Object != "list" || resp.Usage.PromptTokens <= 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens {
		t.Fatalf("embeddings: %d, %s, %+v", len(resp.Data), resp.Model, resp.Usage)
	}
	full := resp.Data[0].Embedding
	for i, d := range resp.Data {
		if d.Index != int64(i) || d.Object != "embedding" || len(d.Embedding) < 16 || math.Abs(norm(d.Embedding)-1) > 1e-4 {
			t.Fatalf("embedding %d: %d values, norm %g", i, len(d.Embedding), norm(d.Embedding))
		}
	}
	// base64 (little-endian float32, decoded by the SDK) holds the same.
	b64, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "stories", Input: input, EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range b64.Data[0].Embedding {
		if len(b64.Data[0].Embedding) != len(full) || float32(v) != float32(full[i]) {
			t.Fatalf("base64 embedding differs at %d: %v, %v", i, v, full[i])
		}
	}
	// dimensions keeps the first values, normalised again.
	short, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "stories", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("Once upon a time")}, Dimensions: openai.Int(8),
	})
	if err != nil {
		t.Fatal(err)
	}
	e := short.Data[0].Embedding
	scale := norm(full[:8])
	if len(e) != 8 || math.Abs(norm(e)-1) > 1e-4 || math.Abs(e[3]*scale-full[3]) > 1e-4 {
		t.Fatalf("dimensions: %v", e)
	}
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "stories", Input: input, Dimensions: openai.Int(100000)})
	asAPIError(t, err, 400, "", "dimensions")
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "stories", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{1, 2}}})
	asAPIError(t, err, 400, "unsupported_value", "input")
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "nope", Input: input})
	asAPIError(t, err, 404, "model_not_found", "model")
}

// sseEvents reads a Server-Sent Events body: every event must be one
// "data: …" line followed by a blank line.
func sseEvents(t *testing.T, body io.Reader) []string {
	t.Helper()
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasSuffix(s, "data: [DONE]\n\n") {
		t.Fatalf("stream does not end with [DONE]: %q", s[max(0, len(s)-200):])
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("bad event %q", ev)
		}
		out = append(out, data)
	}
	return out
}

func postJSON(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestOpenAIRawSSE(t *testing.T) {
	ts := startServer(t)
	// One event per token.
	resp := postJSON(t, ts.URL+"/v1/completions", `{"model":"bigram","prompt":"ping","max_tokens":40,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	events := sseEvents(t, resp.Body)
	resp.Body.Close()
	var text strings.Builder
	pieces := 0
	for _, data := range events[:len(events)-1] {
		var ev struct {
			Object  string
			Choices []struct {
				Text         string
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Object != "text_completion" {
			t.Fatalf("event %q: %v", data, err)
		}
		for _, c := range ev.Choices {
			if c.Text != "" {
				pieces++
				text.WriteString(c.Text)
			}
		}
		if ev.Usage != nil && ev.Usage.CompletionTokens != 40 {
			t.Fatalf("usage %s", data)
		}
	}
	if pieces != 40 || text.String() != testmodels.LoopAnswer(40) {
		t.Fatalf("%d pieces: %q", pieces, text.String())
	}

	// A chat stream: the role first, the content, the finish_reason, the
	// usage, [DONE].
	resp = postJSON(t, ts.URL+"/v1/chat/completions", `{"model":"bigram","messages":[{"role":"user","content":"Hi"}],"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`)
	events = sseEvents(t, resp.Body)
	resp.Body.Close()
	type chunk struct {
		ID      string
		Object  string
		Choices []struct {
			Index int
			Delta struct {
				Role    string
				Content *string
			}
			FinishReason *string `json:"finish_reason"`
		}
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	var chunks []chunk
	for _, data := range events[:len(events)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if c.ID != "" && len(chunks) > 0 && c.ID != chunks[0].ID {
			t.Fatalf("chunk ids differ: %s", data)
		}
		chunks = append(chunks, c)
	}
	first, last, fin := chunks[0], chunks[len(chunks)-1], chunks[len(chunks)-2]
	if first.Choices[0].Delta.Role != "assistant" || first.Choices[0].FinishReason != nil {
		t.Fatalf("first chunk %+v", first)
	}
	if len(last.Choices) != 0 || last.Usage == nil || last.Usage.CompletionTokens <= 0 || last.Usage.PromptTokens <= 0 {
		t.Fatalf("usage chunk %+v", last)
	}
	if fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "stop" || fin.Usage != nil {
		t.Fatalf("final chunk %+v", fin)
	}
	var content strings.Builder
	for _, c := range chunks[1 : len(chunks)-2] {
		if c.Choices[0].FinishReason != nil || c.Choices[0].Delta.Content == nil {
			t.Fatalf("content chunk %+v", c)
		}
		content.WriteString(*c.Choices[0].Delta.Content)
	}
	if content.String() != testmodels.BigramAnswer {
		t.Fatalf("content %q", content.String())
	}
}

// busy counts the requests running or waiting on every loaded model.
func busy(ts *testServer) int {
	n := 0
	for _, in := range ts.srv.sched.Loaded() {
		n += in.Runner.Busy()
	}
	return n
}

func TestOpenAIDisconnectFreesSlot(t *testing.T) {
	ts := startServer(t)
	// A chat model whose answers never end: the bigram model with a
	// template that passes the messages through, so "ping" is continued
	// with " pong ping pong ..." until the client leaves.
	err := ts.Client.Create(context.Background(), &ollamaapi.CreateRequest{Model: "pingchat", From: "bigram", Template: "{{ range .Messages }}{{ .Content }}{{ end }}"},
		func(ollamaapi.ProgressResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/api/chat/completions"} {
		body := `{"model":"bigram","prompt":"ping","max_tokens":100000,"stream":true,"temperature":0}`
		if path != "/v1/completions" {
			body = `{"model":"pingchat","messages":[{"role":"user","content":"ping"}],"max_tokens":100000,"stream":true,"temperature":0,"n":2}`
		}
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		events := 0
		for events < 3 {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v after %d events", path, err, events)
			}
			if strings.HasPrefix(line, "data: ") {
				events++
			}
		}
		// Events arrive while the generation runs (flushed per token).
		if busy(ts) == 0 {
			t.Fatalf("%s: the generation ended before the client read its first events", path)
		}
		cancel()
		resp.Body.Close()
		testkit.Eventually(t, 5*time.Second, path+": the slots of the client that left to be free", func() bool { return busy(ts) == 0 })
	}
}

func TestOpenAIWebUIChat(t *testing.T) {
	ts := startServer(t)
	idRE := regexp.MustCompile(`^bigram-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	body := `{"model":"bigram","messages":[{"role":"user","content":"Hi"}],"temperature":0`
	checkUsage := func(u map[string]any) {
		t.Helper()
		num := func(k string) float64 {
			v, ok := u[k].(float64)
			if !ok {
				t.Fatalf("usage %s = %#v, want a number (%v)", k, u[k], u)
			}
			return v
		}
		evalCount, evalDur := num("eval_count"), num("eval_duration")
		promptTokens, completion := num("prompt_tokens"), num("completion_tokens")
		if evalCount <= 0 || evalDur <= 0 || completion != evalCount || num("prompt_eval_count") <= 0 || promptTokens < num("prompt_eval_count") ||
			num("prompt_eval_duration") <= 0 || num("total_duration") <= 0 || num("load_duration") < 0 ||
			num("total_tokens") != promptTokens+completion {
			t.Fatalf("usage %v", u)
		}
		rate := math.Round(evalCount/(evalDur/1e9)*100) / 100
		if num("response_token/s") != rate || num("prompt_token/s") <= 0 {
			t.Fatalf("rates %v, want response_token/s %v", u, rate)
		}
		if !regexp.MustCompile(`^\d+h\d+m\d+s$`).MatchString(fmt.Sprint(u["approximate_total"])) {
			t.Fatalf("approximate_total %v", u["approximate_total"])
		}
		d, _ := u["completion_tokens_details"].(map[string]any)
		if len(d) != 3 || d["reasoning_tokens"] != 0.0 || d["accepted_prediction_tokens"] != 0.0 || d["rejected_prediction_tokens"] != 0.0 {
			t.Fatalf("completion_tokens_details %v", u["completion_tokens_details"])
		}
		if len(u) != 13 {
			t.Fatalf("usage has %d fields: %v", len(u), u)
		}
	}

	resp := postJSON(t, ts.URL+"/api/chat/completions", body+`}`)
	var got map[string]any
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if resp.StatusCode != 200 || !idRE.MatchString(fmt.Sprint(got["id"])) || got["object"] != "chat.completion" || got["model"] != "bigram" {
		t.Fatalf("answer %d %v", resp.StatusCode, got)
	}
	if c, ok := got["created"].(float64); !ok || c <= 0 {
		t.Fatalf("created %v", got["created"])
	}
	choices, _ := got["choices"].([]any)
	if len(choices) != 1 {
		t.Fatalf("choices %v", got["choices"])
	}
	ch := choices[0].(map[string]any)
	msg, _ := ch["message"].(map[string]any)
	if ch["index"] != 0.0 || ch["finish_reason"] != "stop" || msg["role"] != "assistant" || msg["content"] != testmodels.BigramAnswer {
		t.Fatalf("choice %v", ch)
	}
	if v, ok := ch["logprobs"]; !ok || v != nil {
		t.Fatalf("logprobs %v", ch)
	}
	checkUsage(got["usage"].(map[string]any))

	// Streamed: content deltas with finish_reason null, then the last
	// chunk with the finish_reason and the usage, then [DONE].
	resp = postJSON(t, ts.URL+"/api/chat/completions", body+`,"stream":true}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	events := sseEvents(t, resp.Body)
	resp.Body.Close()
	var content strings.Builder
	var id string
	for i, data := range events[:len(events)-1] {
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			id = fmt.Sprint(c["id"])
		}
		if c["id"] != id || !idRE.MatchString(id) || c["object"] != "chat.completion.chunk" || c["model"] != "bigram" {
			t.Fatalf("chunk %s", data)
		}
		choices, _ := c["choices"].([]any)
		if len(choices) != 1 {
			t.Fatalf("chunk %s", data)
		}
		ch := choices[0].(map[string]any)
		delta, _ := ch["delta"].(map[string]any)
		last := i == len(events)-2
		if !last {
			text, ok := delta["content"].(string)
			if v, has := ch["finish_reason"]; !has || v != nil || !ok || c["usage"] != nil {
				t.Fatalf("chunk %d: %s", i, data)
			}
			content.WriteString(text)
			continue
		}
		if ch["finish_reason"] != "stop" || len(delta) != 0 {
			t.Fatalf("last chunk %s", data)
		}
		checkUsage(c["usage"].(map[string]any))
	}
	if content.String() != testmodels.BigramAnswer {
		t.Fatalf("content %q", content.String())
	}

	// Errors are OpenAI's too.
	resp = postJSON(t, ts.URL+"/api/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"Hi"}]}`)
	checkError(t, resp, 404, "model_not_found", "model")
}

// checkError checks an answer is an error in OpenAI's shape.
func checkError(t *testing.T, resp *http.Response, status int, code, param string) {
	t.Helper()
	defer resp.Body.Close()
	var body struct {
		Error map[string]any `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil || resp.StatusCode != status {
		t.Fatalf("%d %s, want %d", resp.StatusCode, b, status)
	}
	e := body.Error
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e[k]; !ok {
			t.Fatalf("error without %s: %s", k, b)
		}
	}
	wantType := "invalid_request_error"
	if status >= 500 {
		wantType = "server_error"
	}
	str := func(v any) string {
		if v == nil {
			return ""
		}
		return fmt.Sprint(v)
	}
	if e["message"] == "" || e["type"] != wantType || str(e["code"]) != code || str(e["param"]) != param {
		t.Fatalf("error %s, want code %q param %q", b, code, param)
	}
}

func TestOpenAIBadInput(t *testing.T) {
	ts := startServer(t)
	const msgs = `"messages":[{"role":"user","content":"Hi"}]`
	chat := func(extra string) string { return `{"model":"bigram",` + msgs + extra + `}` }
	for _, tc := range []struct {
		path, body  string
		status      int
		code, param string
	}{
		{"/v1/chat/completions", `{"model":"nope",` + msgs + `}`, 404, "model_not_found", "model"},
		{"/v1/chat/completions", `{"model":"bigram","messages":`, 400, "", ""},
		{"/v1/chat/completions", ``, 400, "", ""},
		{"/v1/chat/completions", `[1]`, 400, "", ""},
		{"/v1/chat/completions", `{` + msgs + `}`, 400, "", "model"},
		{"/v1/chat/completions", `{"model":"bigram","messages":[]}`, 400, "", "messages"},
		{"/v1/chat/completions", chat(`,"temperature":"hot"`), 400, "", "temperature"},
		{"/v1/chat/completions", chat(`,"max_tokens":1.5`), 400, "", "max_tokens"},
		{"/v1/chat/completions", chat(`,"n":"2"`), 400, "", "n"},
		{"/v1/chat/completions", chat(`,"stream":"yes"`), 400, "", "stream"},
		{"/v1/chat/completions", chat(`,"stream_options":{"include_usage":1}`), 400, "", "stream_options.include_usage"},
		{"/v1/chat/completions", chat(`,"stop":[1]`), 400, "", "stop"},
		{"/v1/chat/completions", chat(`,"temperature":3`), 400, "", "temperature"},
		{"/v1/chat/completions", chat(`,"max_completion_tokens":0`), 400, "", "max_completion_tokens"},
		{"/v1/chat/completions", chat(`,"n":0`), 400, "", "n"},
		{"/v1/chat/completions", chat(`,"logprobs":true,"top_logprobs":21`), 400, "", "top_logprobs"},
		{"/v1/chat/completions", chat(`,"top_logprobs":2`), 400, "", "top_logprobs"},
		{"/v1/chat/completions", chat(`,"logit_bias":{"x":1}`), 400, "", "logit_bias"},
		{"/v1/chat/completions", chat(`,"logit_bias":{"99999":1}`), 400, "", ""},
		{"/v1/chat/completions", chat(`,"response_format":{"type":"xml"}`), 400, "", "response_format.type"},
		{"/v1/chat/completions", chat(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"not":{}}}}`), 400, "", "response_format.json_schema.schema"},
		{"/v1/chat/completions", chat(`,"tools":[{"type":"code"}]`), 400, "", "tools[0].type"},
		{"/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"a b"}}]`), 400, "", "tools[0].function.name"},
		{"/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`), 400, "", "tools[1].function.name"},
		{"/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","required":"x"}}}]`), 400, "", "tools[0].function.parameters"},
		{"/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","response_format":{"type":"json_object"}`), 400, "", "response_format"},
		{"/v1/chat/completions", chat(`,"tools":[{"type":"function","function":{"name":"f","parameters":{"not":{}}}}],"tool_choice":"required"`), 400, "", ""},
		{"/v1/chat/completions", chat(`,"reasoning_effort":"extreme"`), 400, "", "reasoning_effort"},
		{"/v1/chat/completions", chat(`,"tool_choice":{"type":"function","function":{"name":"g"}}`), 400, "", "tool_choice"},
		{"/v1/chat/completions", `{"model":"bigram","messages":[{"role":1}]}`, 400, "", "messages.role"},
		{"/v1/chat/completions", `{"model":"bigram","messages":[{"role":"wizard","content":"Hi"}]}`, 400, "", "messages[0].role"},
		{"/v1/chat/completions", `{"model":"bigram","messages":[{"role":"user","content":5}]}`, 400, "", "messages[0].content"},
		{"/v1/chat/completions", `{"model":"bigram","messages":[{"role":"user"}]}`, 400, "", "messages[0].content"},
		{"/v1/chat/completions", `{"model":"bigram","messages":[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]}`, 400, "", "messages[0].content[1].image_url.url"},
		{"/v1/completions", `{"model":"stories","prompt":5}`, 400, "", "prompt"},
		{"/v1/completions", `{"model":"stories"}`, 400, "", "prompt"},
		{"/v1/completions", `{"model":"stories","prompt":"x","logprobs":6}`, 400, "", "logprobs"},
		{"/v1/completions", `{"model":"stories","prompt":"x","logprobs":1,"echo":true}`, 400, "unsupported_value", "echo"},
		{"/v1/completions", `{"model":"nope","prompt":"x"}`, 404, "model_not_found", "model"},
		{"/v1/embeddings", `{"model":"stories","input":""}`, 400, "", "input"},
		{"/v1/embeddings", `{"model":"stories","input":[]}`, 400, "", "input"},
		{"/v1/embeddings", `{"model":"stories","input":{}}`, 400, "", "input"},
		{"/v1/embeddings", `{"model":"stories","input":"x","dimensions":0}`, 400, "", "dimensions"},
		{"/v1/embeddings", `{"model":"stories","input":"x","encoding_format":"hex"}`, 400, "", "encoding_format"},
	} {
		resp := postJSON(t, ts.URL+tc.path, tc.body)
		t.Run(tc.path+" "+tc.body, func(t *testing.T) { checkError(t, resp, tc.status, tc.code, tc.param) })
	}
	// Unknown routes and wrong methods under /v1 answer in OpenAI's shape.
	resp, _ := http.Get(ts.URL + "/v1/nope")
	checkError(t, resp, 404, "unknown_url", "")
	resp, _ = http.Get(ts.URL + "/v1/chat/completions")
	checkError(t, resp, 405, "method_not_allowed", "")
	resp = postJSON(t, ts.URL+"/v1/models", `{}`)
	checkError(t, resp, 405, "method_not_allowed", "")
	if len(ts.srv.sched.Loaded()) > 1 {
		t.Fatalf("bad requests loaded %d models", len(ts.srv.sched.Loaded()))
	}
}

func TestCORS(t *testing.T) {
	ts := startServer(t)
	preflight := func(url, origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, url+"/v1/chat/completions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, origin := range []string{"http://localhost:3000", "http://127.0.0.1", "app://obsidian.md", "vscode-webview://abc"} {
		resp := preflight(ts.URL, origin)
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != origin ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "authorization") {
			t.Fatalf("preflight from %s: %d %v", origin, resp.StatusCode, h)
		}
	}
	if h := preflight(ts.URL, "https://evil.example").Header; h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a foreign origin was allowed: %v", h)
	}
	// Simple requests carry the header too, on every dialect's routes.
	for _, path := range []string{"/v1/models", "/api/tags"} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.Header.Set("Origin", "http://localhost:8080")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:8080" {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
	// Configured origins replace the defaults.
	custom := serveConfig(t, Config{ModelsDir: t.TempDir(), Sched: sched.Config{Threads: 1}, CORSOrigins: []string{"https://ui.example"}})
	if h := preflight(custom.URL, "https://ui.example").Header; h.Get("Access-Control-Allow-Origin") != "https://ui.example" {
		t.Fatalf("configured origin refused: %v", h)
	}
	if h := preflight(custom.URL, "http://localhost:3000").Header; h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("default origin still allowed: %v", h)
	}
}
