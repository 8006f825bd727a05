package server

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// The OpenAI door refuses a prompt past the context as OpenAI does (400,
// code context_length_exceeded) instead of cutting it; the Responses API
// does so with truncation "disabled" (its default) and cuts it with
// "auto"; another truncation value is a 400 naming the field.
func TestOpenAIContextLengthExceeded(t *testing.T) {
	ts := startServer(t) // 256-token context
	client := oaClient(ts)
	ctx := context.Background()
	long := strings.Repeat("Once upon a time there was a little dog. ", 60)

	_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "stories", Messages: user(long), MaxTokens: openai.Int(4)})
	asAPIError(t, err, 400, "context_length_exceeded", "")
	_, err = client.Completions.New(ctx, openai.CompletionNewParams{Model: "stories",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(long)}, MaxTokens: openai.Int(4)})
	asAPIError(t, err, 400, "context_length_exceeded", "")
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "stories", Messages: user(long), MaxTokens: openai.Int(4)})
	for stream.Next() {
	}
	asAPIError(t, stream.Err(), 400, "context_length_exceeded", "")
	// What fits is served.
	if _, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "stories", Messages: user("Once upon a time"), MaxTokens: openai.Int(4)}); err != nil {
		t.Fatal(err)
	}

	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "stories", Input: text(long), MaxOutputTokens: openai.Int(16)})
	asAPIError(t, err, 400, "context_length_exceeded", "")
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "stories", Input: text(long), MaxOutputTokens: openai.Int(16),
		Truncation: responses.ResponseNewParamsTruncationAuto})
	if err != nil || r.Truncation != responses.ResponseTruncationAuto || r.Usage.OutputTokens == 0 {
		t.Fatalf("truncation auto: %+v, %v", r, err)
	}
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "stories", Input: text("Hi"), Truncation: "sometimes"})
	asAPIError(t, err, 400, "", "truncation")
}
