package openai

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/media"
	"github.com/tadpole-llm/tadpole/server/openaisampling"
)

func TestDecodeNamesTheField(t *testing.T) {
	for _, tc := range []struct{ body, param, msg string }{
		{`{"temperature":"hot"}`, "temperature", "expected a number, but got a string"},
		{`{"n":1.5}`, "n", "expected an integer"},
		{`{"stream":1}`, "stream", "expected a boolean"},
		{`{"messages":{}}`, "messages", "expected an array, but got an object"},
		{`{"messages":[{"role":true}]}`, "messages.role", "expected a string"},
		{`{"stream_options":{"include_usage":"x"}}`, "stream_options.include_usage", "expected a boolean"},
		{`{"model":`, "", "could not parse"},
		{`[]`, "", "must be a JSON object"},
		{` `, "", "empty"},
	} {
		c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body)), httptest.NewRecorder())
		var req ChatRequest
		err := decode(c, &req)
		var e *Error
		if !errors.As(err, &e) || e.Status != 400 || e.Param != tc.param || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %v (param %q)", tc.body, err, tc.param)
		}
	}
}

func TestErrorShape(t *testing.T) {
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/v1/x", nil), rec)
	h := Errors(func(echo.Context) error { return infer.Errorf(infer.Unavailable, "queue full") })
	if err := h(c); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" ||
		strings.TrimSpace(rec.Body.String()) != `{"error":{"message":"queue full","type":"server_error","param":null,"code":"server_overloaded"}}` {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	for _, tc := range []struct {
		err       error
		status    int
		typ, code string
	}{
		{echo.ErrNotFound, 404, "invalid_request_error", "unknown_url"},
		{echo.ErrUnauthorized, 401, "invalid_request_error", "invalid_api_key"},
		{echo.ErrTooManyRequests, 429, "requests", "rate_limit_exceeded"},
		{echo.ErrStatusRequestEntityTooLarge, 413, "invalid_request_error", "request_too_large"},
		{errors.New("boom"), 500, "server_error", ""},
		{infer.Errorf(infer.NotFound, "x"), 404, "invalid_request_error", "model_not_found"},
		{infer.Errorf(infer.BadRequest, "x"), 400, "invalid_request_error", ""},
		{infer.Errorf(infer.LoadFailed, "x"), 500, "server_error", ""},
	} {
		got := asError(tc.err, c)
		if got.Status != tc.status || got.OpenAI().Error.Type != tc.typ || got.Code != tc.code {
			t.Errorf("%v: %+v", tc.err, got)
		}
	}
}

func TestParsePrompt(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		n    int
		toks bool
		bad  bool
	}{
		{`"hi"`, 1, false, false},
		{`["a","b"]`, 2, false, false},
		{`[1,2,3]`, 1, true, false},
		{`[[1],[2,3]]`, 2, true, false},
		{`[]`, 0, false, true},
		{`[[]]`, 0, false, true},
		{`[1,"a"]`, 0, false, true},
		{`[1.5]`, 0, false, true},
		{`5`, 0, false, true},
		{`null`, 0, false, true},
	} {
		got, err := parsePrompt(json.RawMessage(tc.raw))
		if (err != nil) != tc.bad || len(got) != tc.n || (tc.n > 0 && (got[0].tokens != nil) != tc.toks) {
			t.Errorf("%s: %+v %v", tc.raw, got, err)
		}
		if err != nil && err.(*Error).Param != "prompt" {
			t.Errorf("%s: param %q", tc.raw, err.(*Error).Param)
		}
	}
}

func TestEmbeddingInputs(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		n    int
		code string // "" ok, else the error's Code ("-" for none)
	}{
		{`"a"`, 1, ""},
		{`["a","b"]`, 2, ""},
		{`""`, 0, "-"},
		{`["a",""]`, 0, "-"},
		{`[]`, 0, "-"},
		{`[1,2]`, 0, "unsupported_value"},
		{`[[1],[2]]`, 0, "unsupported_value"},
		{`{}`, 0, "-"},
	} {
		got, err := embeddingInputs(json.RawMessage(tc.raw))
		switch {
		case tc.code == "" && (err != nil || len(got) != tc.n):
			t.Errorf("%s: %q %v", tc.raw, got, err)
		case tc.code != "" && err == nil:
			t.Errorf("%s: no error", tc.raw)
		case tc.code != "" && (err.(*Error).Param != "input" || (tc.code != "-" && err.(*Error).Code != tc.code)):
			t.Errorf("%s: %+v", tc.raw, err)
		}
	}
}

func TestEmbeddingEncoding(t *testing.T) {
	b, err := base64.StdEncoding.DecodeString(encodeBase64([]float32{1.5, -2}))
	if err != nil || len(b) != 8 || math.Float32frombits(binary.LittleEndian.Uint32(b)) != 1.5 || math.Float32frombits(binary.LittleEndian.Uint32(b[4:])) != -2 {
		t.Fatalf("base64: %v %v", b, err)
	}
}

func TestMessageContent(t *testing.T) {
	for _, tc := range []struct {
		role, content, want, param string
	}{
		{"user", `"hi"`, "hi", ""},
		{"user", `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, "a\nb", ""},
		{"assistant", `null`, "", ""},
		{"assistant", `[{"type":"refusal","refusal":"no"}]`, "no", ""},
		{"user", `null`, "", "messages[0].content"},
		{"user", `[{"type":"image_url","image_url":{"url":"x"}}]`, "", "messages[0].content[0].image_url.url"},
		{"user", `[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]`, "", "messages[0].content[0].image_url.url"},
		{"user", `[{"type":"image_url","image_url":{"url":"data:image/png;base64,R0lGODlhAQABAAAAACw="}}]`, "", "messages[0].content[0].image_url.url"},
		{"user", `[{"type":"text","text":"a"},{"type":"image_url","image_url":"data:image/gif;base64,R0lGODlhAQABAAAAACw="},{"type":"text","text":"b"}]`, "a\nb", ""},
		{"user", `[{"type":"input_audio"}]`, "", "messages[0].content[0].input_audio"},
		{"user", `[{"type":"input_audio","input_audio":{"data":"AAAA","format":"mp3"}}]`, "", "messages[0].content[0].input_audio"},
		{"user", `[{"text":"a"}]`, "", "messages[0].content[0].type"},
		{"user", `[{"type":"video"}]`, "", "messages[0].content[0].type"},
		{"user", `[1]`, "", "messages[0].content[0]"},
		{"user", `5`, "", "messages[0].content"},
	} {
		got, _, err := messageContent(0, ChatMessage{Role: tc.role, Content: json.RawMessage(tc.content)}, media.ImageURL)
		if tc.param == "" && (err != nil || got != tc.want) {
			t.Errorf("%s: %q %v", tc.content, got, err)
		}
		if tc.param != "" && (err == nil || err.(*Error).Param != tc.param) {
			t.Errorf("%s: %v, want param %q", tc.content, err, tc.param)
		}
	}
}

func TestCheckTools(t *testing.T) {
	fn := []Tool{{Type: "function", Function: &FunctionTool{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	for _, tc := range []struct {
		tools  []Tool
		choice string
		code   string // "" ok, "-" an error without code
	}{
		{fn, ``, ""},
		{fn, `"auto"`, ""},
		{nil, `"none"`, ""},
		{fn, `"required"`, ""},
		{nil, `"required"`, "-"},
		{fn, `{"type":"function","function":{"name":"get_weather"}}`, ""},
		{[]Tool{{Type: "function", Function: &FunctionTool{Name: "f", Parameters: json.RawMessage(`{"type": 5}`)}}}, ``, "-"},
		{fn, `{"type":"function","function":{"name":"other"}}`, "-"},
		{fn, `"sometimes"`, "-"},
		{[]Tool{{Type: "function", Function: &FunctionTool{Name: "a b"}}}, ``, "-"},
		{[]Tool{{Type: "function"}}, ``, "-"},
		{[]Tool{{Type: "function", Function: &FunctionTool{Name: "f", Parameters: json.RawMessage(`[]`)}}}, ``, "-"},
	} {
		_, _, _, err := checkTools(tc.tools, json.RawMessage(tc.choice))
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%v %s: %v", tc.tools, tc.choice, err)
		case tc.code != "" && err == nil:
			t.Errorf("%v %s: no error", tc.tools, tc.choice)
		case tc.code == "unsupported_value" && err.(*Error).Code != tc.code:
			t.Errorf("%v %s: %+v", tc.tools, tc.choice, err)
		}
	}
}

func TestFormatGrammar(t *testing.T) {
	for _, tc := range []struct {
		rf      *ResponseFormat
		grammar bool
		param   string
	}{
		{nil, false, ""},
		{&ResponseFormat{Type: "text"}, false, ""},
		{&ResponseFormat{Type: "json_object"}, true, ""},
		{&ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Name: "x", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`)}}, true, ""},
		{&ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Name: "x"}}, true, ""},
		{&ResponseFormat{Type: "json_schema"}, false, "response_format.json_schema"},
		{&ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Schema: json.RawMessage(`{"not":{}}`)}}, false, "response_format.json_schema.schema"},
		{&ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Schema: json.RawMessage(`[]`)}}, false, "response_format.json_schema.schema"},
		{&ResponseFormat{Type: "yaml"}, false, "response_format.type"},
		{&ResponseFormat{}, false, "response_format.type"},
	} {
		g, err := formatGrammar(tc.rf)
		if tc.param == "" && (err != nil || (g != "") != tc.grammar) {
			t.Errorf("%+v: %q %v", tc.rf, g, err)
		}
		if tc.param != "" && (err == nil || err.(*Error).Param != tc.param) {
			t.Errorf("%+v: %v, want param %q", tc.rf, err, tc.param)
		}
	}
}

func TestSamplingDefaultsAndChoices(t *testing.T) {
	temp, topP := 0.5, 0.0
	seed := int64(7)
	opts := infer.Request{}.Options
	opts.Seed = -1
	n, err := sampling{Fields: openaisampling.Fields{Temperature: &temp, TopP: &topP, Seed: &seed, Stop: json.RawMessage(`"x"`)}, N: ptr(3)}.apply(&opts)
	if err != nil || n != 3 || opts.Temperature != 0.5 || opts.TopP <= 0 || opts.TopP > 1e-5 || opts.Seed != 7 || len(opts.Stop) != 1 {
		t.Fatalf("%d %+v %v", n, opts, err)
	}
	reqs := choices(&infer.Request{Options: opts}, n)
	for i, r := range reqs {
		if r.Options.Seed != 7+i {
			t.Fatalf("choice %d seed %d", i, r.Options.Seed)
		}
	}
	opts.Seed = -1
	for _, r := range choices(&infer.Request{Options: opts}, 2) {
		if r.Options.Seed != -1 {
			t.Fatal("a random seed became fixed")
		}
	}
	bad := 2.5
	if _, err := (sampling{Fields: openaisampling.Fields{Temperature: &bad}}).apply(&opts); err == nil || err.(*Error).Param != "temperature" {
		t.Fatalf("temperature 2.5: %v", err)
	}
	if _, err := (sampling{Fields: openaisampling.Fields{LogitBias: map[string]float64{"3": 200}}}).apply(&opts); err == nil || err.(*Error).Code != "" {
		t.Fatalf("bias 200: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestWebUIUsage(t *testing.T) {
	tl := &tally{prompt: 12, completion: 30, promptEval: 10, promptEvalDur: 20 * time.Millisecond, evalDur: 300 * time.Millisecond}
	u := webUIUsage(tl, 3723*time.Second+time.Millisecond, 5*time.Millisecond)
	if u.ResponseTokensPerSecond != 100.0 || u.PromptTokensPerSecond != 500.0 || u.ApproximateTotal != "1h2m3s" ||
		u.TotalTokens != 42 || u.PromptTokens != 12 || u.PromptEvalCount != 10 || u.CompletionTokens != 30 || u.EvalCount != 30 ||
		u.LoadDuration != 5e6 || u.EvalDuration != 3e8 {
		t.Fatalf("%+v", u)
	}
	if rate(5, 0) != "N/A" || rate(1, 3*time.Second) != 0.33 || approximate(0) != "0h0m0s" {
		t.Fatal("rate or approximate")
	}
	b, _ := json.Marshal(u)
	for _, k := range []string{`"response_token/s":100`, `"prompt_token/s":500`, `"approximate_total":"1h2m3s"`, `"completion_tokens_details":{"reasoning_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}`} {
		if !strings.Contains(string(b), k) {
			t.Fatalf("%s lacks %s", b, k)
		}
	}
}

func TestIDs(t *testing.T) {
	id := dialect.NewID("chatcmpl-")
	if len(id) != len("chatcmpl-")+24 || id == dialect.NewID("chatcmpl-") {
		t.Fatal(id)
	}
	u := newUUID()
	if len(u) != 36 || u[14] != '4' || !strings.Contains("89ab", string(u[19])) {
		t.Fatal(u)
	}
}
