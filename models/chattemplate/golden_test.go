package chattemplate_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/models/chattemplate"
)

// The golden files in testdata/golden were written by reading each
// template, not by running this package (see testdata/NOTICE).

// clock is the time strftime_now sees in these tests.
func clock() time.Time { return time.Date(2026, 7, 26, 10, 0, 0, 0, time.UTC) }

const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather", "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "City name"}, "unit": {"type": "string", "description": "Temperature unit", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}}}`

// conversations are the fixed inputs of the golden tests, by name.
var conversations = map[string]chattemplate.Input{
	"plain": {Messages: []chattemplate.Message{
		{Role: "system", Content: "You are a helpful assistant."},
		{Role: "user", Content: "Hello"},
		{Role: "assistant", Content: "Hi there! How can I help?"},
		{Role: "user", Content: "What is the weather in Paris?"},
	}},
	"nosystem": {Messages: []chattemplate.Message{
		{Role: "user", Content: "Hello"},
		{Role: "assistant", Content: "Hi there! How can I help?"},
		{Role: "user", Content: "What is the weather in Paris?"},
	}},
	"tools": {
		Messages: []chattemplate.Message{
			{Role: "system", Content: "You are a helpful assistant."},
			{Role: "user", Content: "What is the weather in Paris?"},
			{Role: "assistant", ToolCalls: []chattemplate.ToolCall{{
				ID: "call12345", Name: "get_weather", Arguments: json.RawMessage(`{"location": "Paris", "unit": "celsius"}`),
			}}},
			{Role: "tool", Content: `{"temperature": 22}`, ToolCallID: "call12345", ToolName: "get_weather"},
		},
		Tools: []json.RawMessage{json.RawMessage(weatherTool)},
	},
	"think": {Messages: []chattemplate.Message{
		{Role: "user", Content: "What is 2+2?"},
		{Role: "assistant", Content: "4", Thinking: "Simple arithmetic."},
		{Role: "user", Content: "And 3+3?"},
	}},
}

type family struct {
	name     string // testdata/templates/NAME.jinja
	bos, eos string
	vars     map[string]any
	golden   []string          // conversations with testdata/golden/NAME.CONV.txt
	errors   map[string]string // conversations the template refuses, with its message
}

const (
	llamaBOS  = "<|begin_of_text|>"
	dsBOS     = "<｜begin▁of▁sentence｜>"
	dsEOS     = "<｜end▁of▁sentence｜>"
	alternate = "Conversation roles must alternate user/assistant/user/assistant/..."
)

var families = []family{
	{name: "llama3.1", bos: llamaBOS, eos: "<|eot_id|>", golden: []string{"plain", "tools"}},
	{name: "llama3.2", bos: llamaBOS, eos: "<|eot_id|>", golden: []string{"plain", "tools"}},
	{name: "llama3.3", bos: llamaBOS, eos: "<|eot_id|>", golden: []string{"plain", "tools"}},
	{name: "qwen2.5", eos: "<|im_end|>", golden: []string{"plain", "tools"}},
	{name: "qwen3", eos: "<|im_end|>", golden: []string{"plain", "tools"}},
	{name: "qwen3", eos: "<|im_end|>", vars: map[string]any{"enable_thinking": false}, golden: []string{"think"}},
	{name: "mistral-nemo", bos: "<s>", eos: "</s>", golden: []string{"plain", "tools"}},
	{name: "mistral-v1", bos: "<s>", eos: "</s>", golden: []string{"plain"}},
	{name: "mistral-instruct", bos: "<s>", eos: "</s>", golden: []string{"nosystem"}, errors: map[string]string{"plain": alternate}},
	{name: "gemma2", bos: "<bos>", eos: "<eos>", golden: []string{"nosystem"}, errors: map[string]string{"plain": "System role not supported"}},
	{name: "gemma3", bos: "<bos>", eos: "<eos>", golden: []string{"plain"}, errors: map[string]string{"tools": alternate}},
	{name: "phi3.5", bos: "<s>", eos: "<|endoftext|>", golden: []string{"plain"}},
	{name: "phi4", bos: "<|endoftext|>", eos: "<|endoftext|>", golden: []string{"plain"}},
	{name: "deepseek-r1-distill-qwen", bos: dsBOS, eos: dsEOS, golden: []string{"plain", "tools"}},
	{name: "deepseek-v3.1", bos: dsBOS, eos: dsEOS, golden: []string{"plain", "tools"}},
	{name: "deepseek-v3.1", bos: dsBOS, eos: dsEOS, vars: map[string]any{"thinking": true}, golden: []string{"think"}},
	{name: "command-r-plus", bos: "<BOS_TOKEN>", eos: "<|END_OF_TURN_TOKEN|>", golden: []string{"plain", "tools"}},
	{name: "granite3.3", bos: "<|end_of_text|>", eos: "<|end_of_text|>", golden: []string{"plain", "tools", "nosystem"}},
	{name: "smollm3", eos: "<|im_end|>", golden: []string{"plain", "tools"}},
	{name: "smollm3", eos: "<|im_end|>", vars: map[string]any{"enable_thinking": false}, golden: []string{"think"}},
}

func readTemplate(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "templates", name+".jinja"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (f family) input(conv string) chattemplate.Input {
	in := conversations[conv]
	in.AddGenerationPrompt = true
	in.BOSToken, in.EOSToken = f.bos, f.eos
	in.Vars = f.vars
	in.Now = clock
	return in
}

func TestGolden(t *testing.T) {
	for _, f := range families {
		tmpl, err := chattemplate.Parse(readTemplate(t, f.name))
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for _, conv := range f.golden {
			t.Run(f.name+"/"+conv, func(t *testing.T) {
				want, err := os.ReadFile(filepath.Join("testdata", "golden", f.name+"."+conv+".txt"))
				if err != nil {
					t.Fatal(err)
				}
				got, err := tmpl.Render(f.input(conv))
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("got:\n%s\nwant:\n%s\nfirst difference at byte %d", got, want, firstDiff(got, string(want)))
				}
			})
		}
		for conv, msg := range f.errors {
			t.Run(f.name+"/"+conv+"-refused", func(t *testing.T) {
				_, err := tmpl.Render(f.input(conv))
				var ex *chattemplate.Exception
				if !errors.As(err, &ex) || ex.Message != msg {
					t.Fatalf("got error %v, want the template's exception %q", err, msg)
				}
			})
		}
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// The same template renders the same way when parsed once and used
// from many goroutines.
func TestConcurrentRender(t *testing.T) {
	f := families[0]
	tmpl, err := chattemplate.Parse(readTemplate(t, f.name))
	if err != nil {
		t.Fatal(err)
	}
	want, err := tmpl.Render(f.input("tools"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	for range 8 {
		go func() {
			got, _ := tmpl.Render(f.input("tools"))
			done <- got
		}()
	}
	for range 8 {
		if got := <-done; got != want {
			t.Fatal("concurrent rendering differs")
		}
	}
	if !strings.Contains(want, `"name": "get_weather"`) {
		t.Fatal("tools missing")
	}
}

func chattemplateRender(src string, in chattemplate.Input) (string, error) {
	return chattemplate.Render(src, in)
}

// Command R7B's 11 KB tool-use template renders tools, the tool call
// with its arguments in order, and the result.
func TestCommandR7b(t *testing.T) {
	f := family{name: "command-r7b", bos: "<BOS_TOKEN>", eos: "<|END_OF_TURN_TOKEN|>"}
	got, err := chattemplate.Render(readTemplate(t, f.name), f.input("tools"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"name": "get_weather"`,
		`{"location": "Paris", "unit": "celsius"}`,
		`"tool_call_id": "0"`,
		`"0": "{\"temperature\": 22}"`,
		"<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|><|END_THINKING|>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
