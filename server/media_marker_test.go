package server

import (
	"context"
	"image/color"
	"testing"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// mtmd's media markers typed by a client are text: with an image, a
// prompt or a message holding "<__media__>" (or the old "<__image__>")
// was a 400 (more markers than images); it is answered, the image where
// the request put it, the marker's text in the prompt.
func TestMediaMarkerInClientText(t *testing.T) {
	ts := startVisionServer(t)
	red := solidPNG(t, 32, color.NRGBA{200, 30, 30, 255})
	plain := visionGenerate(t, ts, "What is this?", 0, red)
	for _, prompt := range []string{"What is <__media__> this?", "<__image__><__media__>"} {
		r := visionGenerate(t, ts, prompt, 0, red)
		// The marker's characters are text tokens, on top of the image's
		// positions.
		if r.PromptEvalCount <= plain.PromptEvalCount {
			t.Errorf("%q: prompt_eval_count %d, without the marker %d", prompt, r.PromptEvalCount, plain.PromptEvalCount)
		}
	}
	stream := false
	var resp ollamaapi.ChatResponse
	err := ts.Client.Chat(context.Background(), &ollamaapi.ChatRequest{
		Model: "vision", Stream: &stream, KeepAlive: &ollamaapi.Duration{},
		Messages: []ollamaapi.Message{
			{Role: "user", Content: "earlier <__media__> turn"},
			{Role: "assistant", Content: "ok"},
			{Role: "user", Content: "look <__media__>", Images: b64Images(red)},
		},
		Options: map[string]any{"temperature": 0, "num_predict": 4},
	}, func(r ollamaapi.ChatResponse) error { resp = r; return nil })
	if err != nil || !resp.Done {
		t.Fatalf("chat with markers typed: %v %+v", err, resp)
	}
}
