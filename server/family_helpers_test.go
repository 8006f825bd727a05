package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// llamaSource is the engine's llama.cpp source tree (LLAMA_CPP_SRC, which
// the Makefile sets, else the build directory in CGO_CPPFLAGS), whose
// models/templates holds the families' real chat templates; "" when
// there is none.
func llamaSource() string {
	src := os.Getenv("LLAMA_CPP_SRC")
	if src == "" {
		for _, f := range strings.Fields(os.Getenv("CGO_CPPFLAGS")) {
			if inc, ok := strings.CutPrefix(f, "-I"); ok && strings.HasSuffix(inc, "/src/include") {
				src = strings.TrimSuffix(inc, "/src/include") + "/src"
				break
			}
		}
	}
	if _, err := os.Stat(filepath.Join(src, "models", "templates")); src == "" || err != nil {
		return ""
	}
	return src
}

// familyTemplate reads a template of the engine's llama.cpp tree.
func familyTemplate(t *testing.T, file string) string {
	t.Helper()
	src := llamaSource()
	if src == "" {
		t.Fatal("no llama.cpp source tree with models/templates (LLAMA_CPP_SRC; `make llama` fetches it)")
	}
	b, err := os.ReadFile(filepath.Join(src, "models", "templates", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startFamilyServer serves the scripted family model s as "family".
func startFamilyServer(t *testing.T, s testmodels.FamilyScript) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "family.gguf")
	if err := testmodels.WriteFamilyScript(path, s); err != nil {
		t.Fatal(err)
	}
	return serveForTest(t, New(Config{ModelsDir: dir, Sched: sched.Config{Parallel: 1, NumCtx: 4096, KeepAlive: time.Minute, FlashAttn: engine.FlashAttentionOn, Threads: 1}})), path
}

// familyAnswer is an answer split the way every dialect splits it.
type familyAnswer struct {
	Reasoning, Content string
	Calls              []familyCall
}

type familyCall struct{ Name, Args string }

func (a familyAnswer) String() string {
	var calls []string
	for _, c := range a.Calls {
		calls = append(calls, c.Name+c.Args)
	}
	return fmt.Sprintf("reasoning %q | content %q | calls %s", a.Reasoning, a.Content, strings.Join(calls, ", "))
}

// diff says how got differs from want ("" when equal), arguments
// compared as JSON values.
func (want familyAnswer) diff(got familyAnswer) string {
	var d []string
	if got.Reasoning != want.Reasoning {
		d = append(d, fmt.Sprintf("reasoning %q, want %q", got.Reasoning, want.Reasoning))
	}
	if got.Content != want.Content {
		d = append(d, fmt.Sprintf("content %q, want %q", got.Content, want.Content))
	}
	if len(got.Calls) != len(want.Calls) {
		d = append(d, fmt.Sprintf("%d calls %v, want %d %v", len(got.Calls), got.Calls, len(want.Calls), want.Calls))
	} else {
		for i := range got.Calls {
			var a, b any
			ea, eb := json.Unmarshal([]byte(got.Calls[i].Args), &a), json.Unmarshal([]byte(want.Calls[i].Args), &b)
			if got.Calls[i].Name != want.Calls[i].Name || ea != nil || eb != nil || !reflect.DeepEqual(a, b) {
				d = append(d, fmt.Sprintf("call %d %s %s, want %s %s", i, got.Calls[i].Name, got.Calls[i].Args, want.Calls[i].Name, want.Calls[i].Args))
			}
		}
	}
	return strings.Join(d, "; ")
}

// postFamily posts body; a streamed answer comes back as the data of its
// SSE events or its NDJSON lines.
func postFamily(t *testing.T, url, body string) (int, []byte, [][]byte) {
	t.Helper()
	// A connection of its own per request: llama-server (cpp-httplib)
	// closes an idle keep-alive connection on its own clock, and a POST
	// sent on one it just closed fails with EOF (Go retries only
	// idempotent requests), a flake of the test, not of either server.
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	var events [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			line = bytes.TrimSpace(d)
		} else if bytes.HasPrefix(line, []byte("event:")) || len(line) == 0 || line[0] != '{' {
			continue
		}
		if string(line) != "[DONE]" {
			events = append(events, append([]byte(nil), line...))
		}
	}
	return resp.StatusCode, b, events
}

// openAIChat sends a /v1/chat/completions request (stream set as asked)
// to base and splits the answer.
func openAIChat(t *testing.T, base, body string, stream bool) (familyAnswer, error) {
	t.Helper()
	body = strings.TrimSuffix(strings.TrimSpace(body), "}") + fmt.Sprintf(`, "stream": %v}`, stream)
	code, raw, events := postFamily(t, base+"/v1/chat/completions", body)
	if code != 200 {
		return familyAnswer{}, fmt.Errorf("%d %.400s", code, raw)
	}
	var a familyAnswer
	type call struct {
		Index    int
		Function struct{ Name, Arguments string }
	}
	if !stream {
		var r struct {
			Choices []struct {
				Message struct {
					Content          *string
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []call `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal(raw, &r); err != nil || len(r.Choices) != 1 {
			return a, fmt.Errorf("not a chat completion: %.400s", raw)
		}
		m := r.Choices[0].Message
		if m.Content != nil {
			a.Content = *m.Content
		}
		a.Reasoning = m.ReasoningContent
		for _, c := range m.ToolCalls {
			a.Calls = append(a.Calls, familyCall{c.Function.Name, c.Function.Arguments})
		}
		return a, nil
	}
	var content, reasoning strings.Builder
	for _, ev := range events {
		var r struct {
			Choices []struct {
				Delta struct {
					Content          *string
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []call `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal(ev, &r); err != nil {
			return a, fmt.Errorf("event %s: %v", ev, err)
		}
		for _, ch := range r.Choices {
			if ch.Delta.Content != nil {
				content.WriteString(*ch.Delta.Content)
			}
			reasoning.WriteString(ch.Delta.ReasoningContent)
			for _, c := range ch.Delta.ToolCalls {
				for len(a.Calls) <= c.Index {
					a.Calls = append(a.Calls, familyCall{})
				}
				a.Calls[c.Index].Name += c.Function.Name
				a.Calls[c.Index].Args += c.Function.Arguments
			}
		}
	}
	a.Content, a.Reasoning = content.String(), reasoning.String()
	return a, nil
}

// weatherSchema is the scripted families' tool's parameters.
const weatherSchema = `{"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "object", "properties": {"scale": {"type": "string"}, "precise": {"type": "boolean"}}}, "note": {"type": "string"}}, "required": ["city"]}`

// familyToolResult is the tool's answer in the second turn.
const familyToolResult = `{"temperature": 18, "sky": "sunny"}`

// familyTurns are what every scripted family model answers: first
// (asked) its reasoning and the call, then (given the tool result) the
// final answer.
var familyTurns = [2]familyAnswer{
	{Reasoning: testmodels.FamilyReasoning, Calls: []familyCall{{testmodels.FamilyTool, testmodels.FamilyArguments}}},
	{Content: testmodels.FamilyAnswer},
}

// openAIFamilyRequests are the two requests of the conversation in
// OpenAI's chat shape.
func openAIFamilyRequests(model string) [2]string {
	tools := `[{"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city", "parameters": ` + weatherSchema + `}}]`
	user := `{"role": "user", "content": "What is the weather in Paris?"}`
	args, _ := json.Marshal(testmodels.FamilyArguments)
	reasoning, _ := json.Marshal(testmodels.FamilyReasoning)
	result, _ := json.Marshal(familyToolResult)
	call := `{"role": "assistant", "content": null, "reasoning_content": ` + string(reasoning) + `, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ` + string(args) + `}}]}`
	tool := `{"role": "tool", "tool_call_id": "call_1", "content": ` + string(result) + `}`
	head := `{"model": "` + model + `", "temperature": 0, "max_tokens": 200, "tools": ` + tools + `, "messages": [`
	return [2]string{head + user + `]}`, head + user + `, ` + call + `, ` + tool + `]}`}
}
