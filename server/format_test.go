package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// format "json" and a JSON schema constrain generation through the grammar
// sampler: the answers parse, and match the schema.
func TestFormat(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	for _, model := range []string{"bigram", "stories"} {
		var got ollamaapi.GenerateResponse
		err := ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{
			Model: model, Prompt: "Hi", Format: json.RawMessage(`"json"`), Stream: ptr(false),
			Options: map[string]any{"temperature": 0, "num_predict": 200},
		}, func(r ollamaapi.GenerateResponse) error { got = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if got.DoneReason == "stop" {
			if err := json.Unmarshal([]byte(got.Response), &obj); err != nil {
				t.Fatalf("%s: json mode gave %q: %v", model, got.Response, err)
			}
		} else if !strings.HasPrefix(strings.TrimSpace(got.Response), "{") {
			t.Fatalf("%s: json mode output %q does not start an object", model, got.Response)
		}
		t.Logf("%s json: %q (%s)", model, got.Response, got.DoneReason)
	}
	schema := json.RawMessage(`{"type":"object","properties":{
		"mood":{"enum":["happy","sad","brave"]},
		"age":{"type":"integer","minimum":1,"maximum":9},
		"friend":{"type":"boolean"}},
		"required":["mood","age","friend"],"additionalProperties":false}`)
	for _, stream := range []bool{false, true} {
		text := ""
		var last ollamaapi.ChatResponse
		err := ts.Client.Chat(ctx, &ollamaapi.ChatRequest{
			Model: "stories", Messages: []ollamaapi.Message{{Role: "user", Content: "Once upon a time"}}, Format: schema, Stream: ptr(stream),
			Options: map[string]any{"temperature": 0.7, "seed": 5, "num_predict": 100},
		}, func(r ollamaapi.ChatResponse) error { text += r.Message.Content; last = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Mood   string `json:"mood"`
			Age    int    `json:"age"`
			Friend *bool  `json:"friend"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || last.DoneReason != "stop" {
			t.Fatalf("schema output %q (%s): %v", text, last.DoneReason, err)
		}
		if (v.Mood != "happy" && v.Mood != "sad" && v.Mood != "brave") || v.Age < 1 || v.Age > 9 || v.Friend == nil {
			t.Fatalf("schema violated: %q", text)
		}
	}
	// A bad format is a 400.
	for _, f := range []string{`"yaml"`, `42`, `{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`} {
		resp, err := http.Post(ts.URL+"/api/generate", "application/json", strings.NewReader(`{"model":"stories","prompt":"x","format":`+f+`}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("format %s: %d", f, resp.StatusCode)
		}
	}
}
