package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// enumProp is a string enum of n values "v0000000", "v0000001", ….
func enumProp(n int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf(`"v%07d"`, i)
	}
	return `{"type":"string","enum":[` + strings.Join(vals, ",") + `]}`
}

// objectOf is an object schema whose properties (all required) are props.
func objectOf(props ...string) string {
	var p, req []string
	for i, s := range props {
		p = append(p, fmt.Sprintf(`"p%d":%s`, i, s))
		req = append(req, fmt.Sprintf(`"p%d"`, i))
	}
	return `{"type":"object","properties":{` + strings.Join(p, ",") + `},"required":[` + strings.Join(req, ",") + `],"additionalProperties":false}`
}

// Schemas past the grammar caps are refused with a 400 in each dialect's
// own shape naming the limit and the value, before any work on the
// engine: the 150,000-value enum (1.7 MB), an enum one over the
// cap, 20,000 anyOf constants, and allOf lists whose product explodes.
// Through Ollama's format (generate and chat), OpenAI's response_format,
// Responses' text.format, Anthropic's output_config, and a forced tool
// call's parameters (OpenAI and Anthropic).
func TestSchemaLimitsEveryDialect(t *testing.T) {
	ts := startToolServer(t)
	consts := make([]string, 20000)
	for i := range consts {
		consts[i] = fmt.Sprintf(`{"const":"c%d"}`, i)
	}
	var lists []string
	for j := 0; j < 6; j++ {
		var br []string
		for i := 0; i < 10; i++ {
			br = append(br, fmt.Sprintf(`{"properties":{"p%d":{"const":%d}}}`, j, i))
		}
		lists = append(lists, `{"anyOf":[`+strings.Join(br, ",")+`]}`)
	}
	huge := objectOf(enumProp(150000))
	for _, c := range []struct{ name, schema, want string }{
		// A tool's schema is wrapped in the call's before it is
		// converted, so only the limit is checked here, not the size.
		{"150k enum", huge, fmt.Sprintf("bytes; at most %d are allowed", grammar.MaxSchemaBytes)},
		{"enum over the cap", objectOf(enumProp(grammar.MaxEnumValues + 1)), "enum has 1025 values; at most 1024 are allowed"},
		{"20k anyOf", `{"anyOf":[` + strings.Join(consts, ",") + `]}`, "anyOf has 20000 branches; at most 1024 are allowed"},
		{"allOf product", `{"allOf":[` + strings.Join(lists, ",") + `]}`, "has 10000 branches; at most 1024 are allowed"},
	} {
		schema := c.schema
		tool := `{"type":"function","function":{"name":"pick","parameters":` + schema + `}}`
		for _, d := range []struct {
			dialect, path, body string
			tool                bool
		}{
			{"ollama", "/api/generate", `{"model":"bigram","prompt":"Hi","stream":false,"format":` + schema + `}`, false},
			{"ollama", "/api/chat", `{"model":"bigram","messages":[{"role":"user","content":"Hi"}],"format":` + schema + `}`, false},
			{"openai", "/v1/chat/completions", `{"model":"bigram","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":` + schema + `}}}`, false},
			{"openai", "/v1/chat/completions", `{"model":"bigram","messages":[{"role":"user","content":"Hi"}],"tools":[` + tool + `],"tool_choice":"required"}`, true},
			{"responses", "/v1/responses", `{"model":"bigram","input":"Hi","text":{"format":{"type":"json_schema","name":"s","schema":` + schema + `}}}`, false},
			{"anthropic", "/v1/messages", `{"model":"bigram","max_tokens":10,"messages":[{"role":"user","content":"Hi"}],"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}}`, false},
			{"anthropic", "/v1/messages", `{"model":"bigram","max_tokens":10,"messages":[{"role":"user","content":"Hi"}],"tools":[{"name":"pick","input_schema":` + schema + `}],"tool_choice":{"type":"any"}}`, true},
		} {
			what := fmt.Sprintf("%s: %s %s", c.name, d.path, d.body[:min(len(d.body), 90)])
			code, _, body := do(t, "POST", ts.URL+d.path, "", d.body)
			if code != http.StatusBadRequest {
				t.Fatalf("%s: %d %.300s", what, code, body)
			}
			switch d.dialect {
			case "ollama":
				checkShape(t, what, "ollama", code, body, "")
			case "openai", "responses":
				var e struct {
					Error map[string]any `json:"error"`
				}
				if json.Unmarshal(body, &e) != nil || e.Error["type"] != "invalid_request_error" || e.Error["message"] == "" {
					t.Errorf("%s: not OpenAI's shape: %.300s", what, body)
				}
				if _, ok := e.Error["param"]; !ok {
					t.Errorf("%s: no param: %.300s", what, body)
				}
			case "anthropic":
				checkAnError(t, code, body, http.StatusBadRequest, "invalid_request_error", c.want)
			}
			if !strings.Contains(string(body), c.want) {
				t.Errorf("%s: %.300s does not say %q", what, body, c.want)
			}
			if size := fmt.Sprintf("JSON schema has %d bytes", len(huge)); schema == huge && !d.tool && !strings.Contains(string(body), size) {
				t.Errorf("%s: %.300s does not say %q", what, body, size)
			}
		}
	}
}

// The largest schema the caps allow still works: four enums of 1024
// values each (every enum at MaxEnumValues, MaxAlternatives in all), and
// the answer is held to it.
func TestSchemaLimitsLargestAllowed(t *testing.T) {
	ts := startServer(t)
	n := grammar.MaxAlternatives / grammar.MaxEnumValues
	props := make([]string, n)
	for i := range props {
		props[i] = enumProp(grammar.MaxEnumValues)
	}
	schema := objectOf(props...)
	code, _, body := do(t, "POST", ts.URL+"/api/generate",
		"", `{"model":"stories","prompt":"Once upon a time","stream":false,"format":`+schema+`,"options":{"temperature":0.8,"seed":3,"num_predict":400}}`)
	var got struct {
		Response   string `json:"response"`
		DoneReason string `json:"done_reason"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil {
		t.Fatalf("%d %.300s", code, body)
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(got.Response), &v); err != nil || got.DoneReason != "stop" || len(v) != n {
		t.Fatalf("output %q (%s): %v", got.Response, got.DoneReason, err)
	}
	for k, s := range v {
		var i int
		if _, err := fmt.Sscanf(s, "v%07d", &i); err != nil || i >= grammar.MaxEnumValues || !slices.Contains([]string{"p0", "p1", "p2", "p3"}, k) {
			t.Fatalf("member %s: %q is not an enum value", k, s)
		}
	}
}
