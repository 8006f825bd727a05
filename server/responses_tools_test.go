package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/jobs"
)

// collaboration is a namespace tool as Codex declares one: a group of
// function tools under a name.
func collaboration() responses.ToolUnionParam {
	return namespaceTool("collaboration", map[string]any{"type": "string"}, "spawn_agent", "send_message")
}

// namespaceTool is a namespace of functions that take one "message" of
// a schema.
func namespaceTool(name string, message map[string]any, members ...string) responses.ToolUnionParam {
	var tools []responses.NamespaceToolToolUnionParam
	for _, m := range members {
		tools = append(tools, responses.NamespaceToolToolUnionParam{OfFunction: &responses.NamespaceToolToolFunctionParam{
			Name: m, Description: openai.String("A collaboration tool."),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"message": message}, "required": []string{"message"}},
		}})
	}
	return responses.ToolUnionParam{OfNamespace: &responses.NamespaceToolParam{Name: name, Description: "Work with other agents.", Tools: tools}}
}

// Codex's tools (issue 41): a function, a namespace of functions and the
// hosted web_search, which Tadpole answered with 400 "tools[4].type:
// "namespace" is not supported". Now the hosted tool is left out (with a
// warning in the log), the namespace's members reach the model as
// functions, and the session runs: the scripted model calls get_weather
// and answers from its output. A forced call of a namespace member comes
// back as the API answers one (the member's name and its namespace), and
// sent back as input it continues the conversation.
func TestResponsesNamespaceAndHostedTools(t *testing.T) {
	srv := startRespServer(t, respModels(t), jobs.Config{Dir: t.TempDir()}, nil)
	client := respClient(srv.URL, "")
	ctx := context.Background()
	tools := []responses.ToolUnionParam{
		weatherParams(), collaboration(),
		{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}},
		{OfCodeInterpreter: &responses.ToolCodeInterpreterParam{Container: responses.ToolCodeInterpreterContainerUnionParam{OfString: openai.String("auto")}}},
	}
	params := responses.ResponseNewParams{Model: "script", Input: text("What is the weather in Paris?"), Tools: tools, Temperature: openai.Float(0), Store: openai.Bool(false)}
	resp, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseFunctionToolCall
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			call = it.AsFunctionCall()
		}
	}
	if call.Name != testmodels.ScriptTool || call.Namespace != "" || call.Arguments == "" {
		t.Fatalf("output %s", resp.RawJSON())
	}
	if len(resp.Tools) != 4 || resp.Tools[1].Type != "namespace" || resp.Tools[2].Type != "web_search" {
		t.Fatalf("tools echoed %s", resp.RawJSON())
	}
	params.Input = items(responses.ResponseInputItemParamOfMessage("What is the weather in Paris?", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemUnionParam{OfFunctionCall: ptr(call.ToParam())}, callOutput(call.CallID, "sunny, 22 °C"))
	_, got, _, final := streamed(t, client, params)
	if got != testmodels.ScriptAnswer || final.Status != "completed" {
		t.Fatalf("answer %q: %s", got, final.RawJSON())
	}

	// A call of a namespace member, forced on the bigram model (which
	// never calls tools by itself) by tool_choice required (the member's
	// one argument an enum, so that the forced call ends): the item
	// names the member and its namespace.
	enum := map[string]any{"enum": []string{"hello", "bye"}}
	forced := responses.ResponseNewParams{Model: "bigram", Input: text("Hi"), MaxOutputTokens: openai.Int(1000),
		Tools:       []responses.ToolUnionParam{namespaceTool("collaboration", enum, "spawn_agent", "send_message")},
		ToolChoice:  responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)},
		Temperature: openai.Float(0), Store: openai.Bool(false)}
	resp, err = client.Responses.New(ctx, forced)
	if err != nil {
		t.Fatal(err)
	}
	call = responses.ResponseFunctionToolCall{}
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			call = it.AsFunctionCall()
		}
	}
	var args struct{ Message *string }
	if call.Namespace != "collaboration" || (call.Name != "spawn_agent" && call.Name != "send_message") ||
		json.Unmarshal([]byte(call.Arguments), &args) != nil || args.Message == nil {
		t.Fatalf("forced call %s", resp.RawJSON())
	}
	// The call and its output go back (with the namespace, as Codex
	// sends them): the scripted model sees the tool response and answers.
	params.Tools = []responses.ToolUnionParam{collaboration()}
	params.Input = items(responses.ResponseInputItemParamOfMessage("Spawn an agent.", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemUnionParam{OfFunctionCall: ptr(call.ToParam())}, callOutput(call.CallID, "agent 7 started"))
	resp, err = client.Responses.New(ctx, params)
	if err != nil || resp.OutputText() != testmodels.ScriptAnswer {
		t.Fatalf("after a namespaced call: %v %s", err, resp.RawJSON())
	}

	// Bad tools: a namespace without members, members whose qualified
	// names collide, a custom tool, a tool without a type.
	for _, c := range []struct{ tools, param, want string }{
		{`[{"type": "namespace", "name": "empty", "description": "x", "tools": []}]`, "tools[0].tools", `namespace "empty" has no tools`},
		{`[{"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "f"}]}, {"type": "namespace", "name": "ns", "description": "x", "tools": [{"type": "function", "name": "f"}]}]`,
			"tools[1].tools[0].name", `"ns.f" is already the name of 'tools[0].tools[0]'`},
		{`[{"type": "namespace", "name": "ns", "description": "x", "tools": [{"type": "function", "name": "f"}, {"type": "function", "name": "f"}]}]`,
			"tools[0].tools[1].name", `"ns.f" is already the name of 'tools[0].tools[0]'`},
		{`[{"type": "custom", "name": "apply_patch"}]`, "tools[0].type", "'custom' tools"},
		{`[{"name": "f"}]`, "tools[0].type", "Missing required parameter"},
	} {
		resp := postJSON(t, srv.URL+"/v1/responses", `{"model": "bigram", "input": "Hi", "store": false, "tools": `+c.tools+`}`)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Message, Param, Type string }
		}
		if json.Unmarshal(body, &e) != nil || resp.StatusCode != http.StatusBadRequest || e.Error.Param != c.param || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("tools %s: %d %s, want 400 param %q containing %q", c.tools, resp.StatusCode, body, c.param, c.want)
		}
	}
}
