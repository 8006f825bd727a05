package server

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/openai/openai-go/v3"
)

// top_p 0 means "only the most likely token" through every door that
// takes OpenAI's sampling fields — OpenAI's chat and completions, Open
// WebUI's chat, Anura's chat —: at temperature 1.5 with a seed it gives
// the greedy answer, and the three chat doors give the same chat answer.
// (The engine reads top_p 0 as "off": a door that passed it through
// unmapped would sample at temperature 1.5 instead.)
func TestTopPZeroSameThroughEveryDoor(t *testing.T) {
	ts := startAPIServer(t, apiOptions{})
	client := oaClient(ts)
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}
	chat := func(temp float64, topP *float64) string {
		p := openai.ChatCompletionNewParams{Model: "stories", Messages: msgs, Temperature: openai.Float(temp), Seed: openai.Int(11), MaxCompletionTokens: openai.Int(24)}
		if topP != nil {
			p.TopP = openai.Float(*topP)
		}
		resp, err := client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Message.Content
	}
	zero := 0.0
	greedy := chat(0, nil)
	if got := chat(1.5, &zero); got != greedy {
		t.Fatalf("/v1/chat/completions top_p 0 at temperature 1.5: %q, greedy %q", got, greedy)
	}
	if hot := chat(1.5, nil); hot == greedy {
		t.Fatalf("temperature 1.5 without top_p gave the greedy answer %q: the test cannot tell the doors apart", hot)
	}

	complete := func(temp float64, topP *float64) string {
		p := openai.CompletionNewParams{Model: "stories", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
			MaxTokens: openai.Int(24), Temperature: openai.Float(temp), Seed: openai.Int(11)}
		if topP != nil {
			p.TopP = openai.Float(*topP)
		}
		resp, err := client.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Text
	}
	if got, want := complete(1.5, &zero), complete(0, nil); got != want {
		t.Fatalf("/v1/completions top_p 0 at temperature 1.5: %q, greedy %q", got, want)
	}

	body := `{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"temperature":1.5,"top_p":0,"seed":11,"max_tokens":24}`
	code, _, b := do(t, "POST", ts.URL+"/api/chat/completions", "", body)
	var webui struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if code != 200 || json.Unmarshal(b, &webui) != nil || len(webui.Choices) != 1 {
		t.Fatalf("/api/chat/completions: %d %s", code, b)
	}
	if got := webui.Choices[0].Message.Content; got != greedy {
		t.Fatalf("/api/chat/completions top_p 0: %q, greedy %q", got, greedy)
	}

	if got, _, _, _ := anuraChat(t, ts, "", body); got != greedy {
		t.Fatalf("/api/v1/chat/completions top_p 0: %q, greedy %q", got, greedy)
	}
	// Anura checks the fields like the OpenAI doors do.
	for _, bad := range []string{`"top_p":1.5`, `"temperature":-1`, `"frequency_penalty":3`, `"stop":[1]`} {
		code, _, b := do(t, "POST", ts.URL+"/api/v1/chat/completions", "", fmt.Sprintf(`{"model":"stories","messages":[{"role":"user","content":"hi"}],%s}`, bad))
		if code != 400 {
			t.Errorf("anura %s: %d %s", bad, code, b)
		}
	}
}
