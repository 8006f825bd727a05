package server

import (
	"context"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// The current Messages API's block types through the official SDK
// (issue 41): a document and a search result in the user's turn, the
// blocks of Anthropic's server tools echoed back in the assistant's
// turn, and a tool result made of a search result and a text document:
// the scripted model runs its whole tool loop over them. A PDF is a 400
// in Anthropic's shape saying what to send instead.
func TestAnthropicDocumentBlocks(t *testing.T) {
	ts := startToolServer(t)
	client := anClient(ts)
	ctx := context.Background()
	tools := []anthropic.ToolUnionParam{{OfTool: ptr(weatherToolParam())}}
	doc := anthropic.NewDocumentBlock(anthropic.PlainTextSourceParam{Data: "Paris is the capital of France."})
	doc.OfDocument.Title = anthropic.String("Atlas")
	doc.OfDocument.CacheControl = anthropic.NewCacheControlEphemeralParam()
	p := anthropic.MessageNewParams{
		Model: "script", MaxTokens: 2000, Tools: tools, Temperature: anthropic.Float(0),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
			anthropic.NewTextBlock("What is the weather in Paris?"), doc,
			anthropic.NewSearchResultBlock([]anthropic.TextBlockParam{{Text: "Weather pages list Paris."}}, "https://example.com/w", "Weather"))},
	}
	msg, err := client.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if blockTypes(msg.Content) != "thinking,tool_use" {
		t.Fatalf("answer %s", msg.RawJSON())
	}
	checkWeatherCall(t, msg.Content[1])

	// The document's text is in the prompt.
	count := func(msgs []anthropic.MessageParam) int64 {
		t.Helper()
		n, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "script", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		return n.InputTokens
	}
	if with, without := count(p.Messages), count(anUser("What is the weather in Paris?")); with < without+12 {
		t.Fatalf("count_tokens %d with the document and search result, %d without", with, without)
	}

	echoed := anthropic.MessageParam{Role: anthropic.MessageParamRoleAssistant, Content: []anthropic.ContentBlockParamUnion{
		anthropic.NewServerToolUseBlock("srvtoolu_1", map[string]any{"query": "paris weather"}, anthropic.ServerToolUseBlockParamNameWebSearch),
		anthropic.NewWebSearchToolResultBlock([]anthropic.WebSearchResultBlockParam{{URL: "https://example.com", Title: "w", EncryptedContent: "opaque"}}, "srvtoolu_1"),
		anthropic.NewToolUseBlock(msg.Content[1].ID, msg.Content[1].Input, msg.Content[1].Name),
	}}
	result := anthropic.ToolResultBlockParam{ToolUseID: msg.Content[1].ID, Content: []anthropic.ToolResultBlockParamContentUnion{
		{OfSearchResult: &anthropic.SearchResultBlockParam{Source: "weather:paris", Title: "Paris", Content: []anthropic.TextBlockParam{{Text: "sunny, 22 °C"}}}},
		{OfDocument: anthropic.NewDocumentBlock(anthropic.PlainTextSourceParam{Data: "Forecast: sunny."}).OfDocument},
	}}
	p.Messages = append(p.Messages, echoed, anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfToolResult: &result}))
	final, err := client.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if blockTypes(final.Content) != "text" || final.Content[0].Text != testmodels.ScriptAnswer || final.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("final %s", final.RawJSON())
	}

	pdf := p
	pdf.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewDocumentBlock(anthropic.Base64PDFSourceParam{Data: "JVBERi0xLjQK"}))}
	_, err = client.Messages.New(ctx, pdf)
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", `messages[0].content[0].source: PDF documents are not supported by this server: send the document's text as a "text" source`)
}
