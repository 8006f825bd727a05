package server

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// anSystem is a mid-conversation system message, as the SDK sends one.
func anSystem(s string) anthropic.MessageParam {
	return anthropic.MessageParam{Role: anthropic.MessageParamRoleSystem, Content: []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(s)}}
}

// Claude Code's request shape (issue 41): a system message inside
// messages, right after the user's turn ([user, system]), and after the
// tool result in the next turn. Tadpole answered 400 "messages[1].role";
// now the system text is rendered as a system turn where it stands, and
// the scripted model runs the whole tool loop through the official SDK:
// thinking and a get_weather call, then the answer from the result.
func TestAnthropicMidConversationSystem(t *testing.T) {
	ts := startToolServer(t)
	client := anClient(ts)
	ctx := context.Background()
	tools := []anthropic.ToolUnionParam{{OfTool: ptr(weatherToolParam())}}
	reminder := "<system-reminder>The user's working directory is /tmp.</system-reminder>"
	p := anthropic.MessageNewParams{
		Model: "script", MaxTokens: 2000, Tools: tools, Temperature: anthropic.Float(0),
		System:   []anthropic.TextBlockParam{{Text: "You are a coding agent."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Paris?")), anSystem(reminder)},
	}
	msg, err := client.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if blockTypes(msg.Content) != "thinking,tool_use" || msg.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("answer %s", msg.RawJSON())
	}
	checkWeatherCall(t, msg.Content[1])

	// The system text is in the prompt: count_tokens of the same
	// conversation without it is smaller by its turn.
	count := func(msgs []anthropic.MessageParam) int64 {
		t.Helper()
		n, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
			Model: "script", Messages: msgs, System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: p.System},
			Tools: []anthropic.MessageCountTokensToolUnionParam{{OfTool: ptr(weatherToolParam())}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return n.InputTokens
	}
	with, without := count(p.Messages), count(p.Messages[:1])
	if with <= without+10 || with != msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens {
		t.Fatalf("count_tokens %d with the system message, %d without; usage %s", with, without, msg.Usage.RawJSON())
	}

	// The next turn keeps the system message before the assistant's
	// call and adds two more after the tool result (consecutive ones
	// are one section, as the API reads them), streamed.
	p.Messages = append(p.Messages, msg.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(msg.Content[1].ID, "sunny, 22 °C", false)),
		anSystem("The user typed: answer briefly."), anSystem("Remaining budget: 1000 tokens."))
	final, _ := anStream(t, client, p)
	if blockTypes(final.Content) != "text" || final.Content[0].Text != testmodels.ScriptAnswer || final.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("final %s", final.RawJSON())
	}

	// Where the API forbids a system message: 400 in Anthropic's shape,
	// naming the message and the rule.
	user, asst := anthropic.NewUserMessage(anthropic.NewTextBlock("Hi")), anthropic.NewAssistantMessage(anthropic.NewTextBlock("Hello"))
	for _, c := range []struct {
		msgs []anthropic.MessageParam
		want string
	}{
		{[]anthropic.MessageParam{anSystem("first"), user}, "messages[0].role: a system message cannot be the first message"},
		{[]anthropic.MessageParam{user, asst, anSystem("after the assistant")}, "messages[2].role: role 'system' must follow a 'user' message"},
		{[]anthropic.MessageParam{user, anSystem("before a user"), user}, "messages[1].role: a system message must be the last message or be followed by an 'assistant' message"},
		{[]anthropic.MessageParam{user, anSystem("a"), anSystem("b"), user}, "messages[1].role: a system message must be the last message"},
		{[]anthropic.MessageParam{user, {Role: anthropic.MessageParamRoleSystem, Content: []anthropic.ContentBlockParamUnion{
			anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo=")}}}, "messages[1].content[0].type: \"image\" is not allowed: system messages hold text blocks only"},
	} {
		_, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "bigram", MaxTokens: 5, Messages: c.msgs})
		anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", c.want)
	}
}

// firstSystemTemplate is ChatML that, like Gemma's and Qwen3.5's
// templates, allows a system message only first.
const firstSystemTemplate = "{% for message in messages %}" +
	"{% if message['role'] == 'system' and not loop.first %}{{ raise_exception('System message must be at the beginning.') }}{% endif %}" +
	"{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
	"{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// A model whose chat template refuses a system message after the first
// still serves Claude Code's shape: the system text is folded into the
// user's turn before it, in place, instead of a 500 from the template.
func TestAnthropicSystemFoldedForFirstOnlyTemplates(t *testing.T) {
	dir := t.TempDir()
	kvs, tensors := testmodels.Bigram()
	for i := range kvs {
		if kvs[i].Key == "tokenizer.chat_template" {
			kvs[i].Value = firstSystemTemplate
		}
	}
	if err := gguf.WriteFile(filepath.Join(dir, "firstsys.gguf"), kvs, tensors); err != nil {
		t.Fatal(err)
	}
	ts := serveConfig(t, Config{ModelsDir: dir, Sched: testSched(1, 512)})
	client := anClient(ts)
	ctx := context.Background()
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi")), anSystem("Be brief and kind.")}
	msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "firstsys", MaxTokens: 20, Messages: msgs, Temperature: anthropic.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != testmodels.BigramAnswer {
		t.Fatalf("answer %s", msg.RawJSON())
	}
	count := func(msgs []anthropic.MessageParam) int64 {
		n, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "firstsys", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		return n.InputTokens
	}
	if with, without := count(msgs), count(msgs[:1]); with <= without {
		t.Fatalf("count_tokens %d with the folded system text, %d without", with, without)
	}
}
