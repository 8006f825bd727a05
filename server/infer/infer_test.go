package infer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/chatparse"
)

func load(t *testing.T, path string) *engine.Model {
	t.Helper()
	m, err := engine.LoadModel(path, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// A model whose vocabulary names fill-in-the-middle tokens gets a
// prefix-suffix-middle prompt; one without is a clear 400.
func TestFIMPrompt(t *testing.T) {
	kvs, tensors := testmodels.Bigram()
	const pre, suf, mid = 4, 5, 6 // byte tokens standing in for FIM tokens
	kvs = append(kvs,
		gguf.KV{Key: "tokenizer.ggml.fim_pre_token_id", Value: uint32(pre)},
		gguf.KV{Key: "tokenizer.ggml.fim_suf_token_id", Value: uint32(suf)},
		gguf.KV{Key: "tokenizer.ggml.fim_mid_token_id", Value: uint32(mid)})
	path := filepath.Join(t.TempDir(), "fim.gguf")
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	m := load(t, path)
	got, err := Prompt(m, &Request{Prompt: "one", Suffix: "ten"})
	if err != nil {
		t.Fatal(err)
	}
	one, _ := m.Tokenize("one", false, false)
	ten, _ := m.Tokenize("ten", false, false)
	want := []engine.Token{testmodels.BOSID, pre}
	want = append(append(want, one...), suf)
	want = append(append(want, ten...), mid)
	if len(got) != len(want) {
		t.Fatalf("FIM prompt %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("FIM prompt %v, want %v", got, want)
		}
	}
	stories := load(t, testmodels.Testdata("stories260K.gguf"))
	if _, err := Prompt(stories, &Request{Model: "stories", Prompt: "a", Suffix: "b"}); KindOf(err) != BadRequest {
		t.Fatalf("suffix on a model without FIM tokens: %v", err)
	}
}

func TestPromptRendering(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bigram.gguf")
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	m := load(t, path)
	stories := load(t, testmodels.Testdata("stories260K.gguf"))
	// render compares a request's prompt with the tokenization of the
	// text it should render to.
	render := func(m *engine.Model, r *Request) string {
		t.Helper()
		toks, err := Prompt(m, r)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(toks)
	}
	text := func(m *engine.Model, s string) string {
		toks, _ := m.Tokenize(s, true, true)
		return fmt.Sprint(toks)
	}
	for _, tc := range []struct {
		name string
		m    *engine.Model
		req  *Request
		want string
	}{
		{"raw", m, &Request{Prompt: "one", Raw: true}, "one"},
		{"chat template, one user turn", m, &Request{Prompt: "Hi", System: "Be brief."}, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"no template: plain prompt", stories, &Request{Prompt: "Once upon"}, "Once upon"},
		{"Go template", m, &Request{Prompt: "Hi", System: "S", Template: "[{{ .System }}|{{ .Prompt }}]"}, "[S|Hi]"},
		{"chat", m, &Request{Chat: true, Messages: []Message{{Role: "user", Content: "Hi"}}}, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"chat, Go template over messages", m, &Request{Chat: true, Messages: []Message{{Role: "user", Content: "A"}, {Role: "assistant", Content: "B"}},
			Template: "{{ range .Messages }}{{ .Role }}:{{ .Content }};{{ end }}"}, "user:A;assistant:B;"},
	} {
		if got := render(tc.m, tc.req); got != text(tc.m, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// The model's manifest fills in what the request leaves empty; a
	// manifest template that cannot render falls back to the chat template.
	e := models.Entry{System: "From the model.", Template: "{{ .Broken", Messages: []models.Message{{Role: "user", Content: "earlier"}}}
	r := withModelDefaults(&Request{Chat: true, Messages: []Message{{Role: "user", Content: "Hi"}}}, e)
	if r.System != "From the model." || len(r.Messages) != 2 || r.Messages[0].Content != "earlier" {
		t.Fatalf("defaults: %+v", r)
	}
	want := "<|im_start|>system\nFrom the model.<|im_end|>\n<|im_start|>user\nearlier<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if got := render(m, r); got != text(m, want) {
		t.Fatalf("manifest defaults: %q", got)
	}
	if _, err := Prompt(m, &Request{Prompt: "x", Template: "{{ .Broken"}); KindOf(err) != BadRequest {
		t.Fatalf("a request's broken template: %v", err)
	}
}

// Chats render through the model's Jinja template: tools, tool calls and
// results reach it; its "tool_use" variant wins when tools are given; a
// template the Jinja engine cannot parse falls back to llama.cpp's
// built-in detection; the output options follow the template.
func TestJinjaChatPrompt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.gguf")
	if err := testmodels.WriteScript(path); err != nil {
		t.Fatal(err)
	}
	m := load(t, path)
	tool := json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}`)
	req := &Request{Model: "script", Chat: true, Tools: []json.RawMessage{tool}, Messages: []Message{
		{Role: "user", Content: "Weather?"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}},
		{Role: "tool", Content: "sunny", ToolCallID: "call_1", ToolName: "get_weather"},
	}}
	text, out, err := chatPrompt(m, req)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
		`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}` +
		"\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
		"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\nWeather?<|im_end|>\n" +
		"<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
	if text != want {
		t.Fatalf("prompt:\n%q\nwant\n%q", text, want)
	}
	if out.Format != chatparse.Hermes || fmt.Sprint(out.Tools) != "[get_weather]" || !out.Thinking || out.StartInThinking {
		t.Fatalf("output options %+v", out)
	}
	// tool_choice none: no tools shown or parsed.
	req.ToolChoice = "none"
	text, out, _ = chatPrompt(m, req)
	if strings.Contains(text, "# Tools") || len(out.Tools) != 0 {
		t.Fatalf("tool_choice none: %q %+v", text, out)
	}

	kvs, tensors := testmodels.Bigram()
	for i := range kvs {
		if kvs[i].Key == "tokenizer.chat_template" {
			// Not Jinja our engine parses, but llama.cpp knows ChatML by
			// its markers.
			kvs[i].Value = "{% broken <|im_start|> %}"
		}
	}
	kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template.tool_use", Value: "TOOLS{% for t in tools %}[{{ t.function.name }}]{% endfor %}"})
	path = filepath.Join(t.TempDir(), "variants.gguf")
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	m = load(t, path)
	text, _, err = chatPrompt(m, &Request{Chat: true, Messages: []Message{{Role: "user", Content: "Hi"}}})
	if err != nil || text != "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" {
		t.Fatalf("llama.cpp fallback: %q %v", text, err)
	}
	text, _, err = chatPrompt(m, &Request{Chat: true, Tools: []json.RawMessage{tool}, Messages: []Message{{Role: "user", Content: "Hi"}}})
	if err != nil || text != "TOOLS[get_weather]" {
		t.Fatalf("tool_use variant: %q %v", text, err)
	}
}

// Ollama-syntax templates see Ollama's data: tools and tool calls with
// .Function fields that print as JSON, and the json function.
func TestGoTemplateTools(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bigram.gguf")
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	m := load(t, path)
	tmpl := `{{- range .Messages }}<{{ .Role }}>{{ .Content }}{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "parameters": {{ .Function.Arguments }}}{{ end }}{{ end }}` +
		`{{ if .Tools }}|{{ range .Tools }}{{ .Function.Name }}={{ json .Function.Parameters }};{{ json . }}{{ end }}{{ end }}`
	req := &Request{Chat: true, Template: tmpl,
		Tools:    []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}`)},
		Messages: []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"b":1,"a":2}`)}}}},
	}
	text, _, err := chatPrompt(m, req)
	want := `<user>Hi<assistant>{"name": "f", "parameters": {"b":1,"a":2}}|f={"type":"object"};{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}`
	if err != nil || text != want {
		t.Fatalf("%q (%v)\nwant %q", text, err, want)
	}
}
