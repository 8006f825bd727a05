package chatparse_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/chatparse"
)

// A forced call in the formats that name the function outside the JSON
// is written in the family's own markup, as its template shows a call
// (Kimi K2's functions.NAME:0 section, DeepSeek V3.1's NAME<｜tool▁sep｜>,
// R1's fenced arguments, function tags, Apertus's [{"NAME": …}], and
// the key-value parameters of Qwen3-Coder, GLM, Seed-OSS, MiniMax M2,
// DeepSeek's DSML, Hunyuan 3 and MiniCPM5): text the real engine
// generates under the grammar, sampled, is one call of a declared
// function with arguments in its schema, typed by it (a string property
// whose value looks like a number or a boolean stays a string), and the
// family's parser reads it so, thinking first or not.
func TestForcedCallInFamilyMarkup(t *testing.T) {
	m, err := engine.LoadModel(testmodels.Testdata("stories260K.gguf"), engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	tools := []chatparse.Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"$ref": "#/$defs/city"}}, "required": ["city"], "additionalProperties": false, "$defs": {"city": {"enum": ["Paris", "Oslo"]}}}`)},
		{Name: "add", Parameters: json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["n"], "additionalProperties": false}`)},
		{Name: "label", Parameters: json.RawMessage(`{"type": "object", "properties": {"code": {"enum": ["18", "true"]}, "on": {"type": "boolean"}}, "required": ["code", "on"], "additionalProperties": false}`)},
	}
	params := map[string]json.RawMessage{}
	for _, tl := range tools {
		params[tl.Name] = tl.Parameters
	}
	for _, tc := range []struct {
		name string
		o    chatparse.Options
		mark string // in every output
	}{
		{"kimi", chatparse.Options{Format: chatparse.Kimi}, "<|tool_call_begin|>functions."},
		{"deepseek-v3.1", chatparse.Options{Format: chatparse.DeepSeek}, "<｜tool▁call▁begin｜>"},
		{"deepseek-r1", chatparse.Options{Format: chatparse.DeepSeek, FencedCalls: true}, "function<｜tool▁sep｜>"},
		{"function-tag", chatparse.Options{Format: chatparse.FunctionTag}, "<function="},
		{"apertus", chatparse.Options{Format: chatparse.Apertus}, `<|tools_prefix|>[{"`},
		{"qwen3-coder", chatparse.Options{Format: chatparse.Hermes, XMLCalls: true}, "<tool_call>\n<function="},
		{"glm", chatparse.Options{Format: chatparse.Hermes, XMLCalls: true, ArgKeyCalls: true}, "</arg_key>"},
		{"seed", chatparse.Options{Format: chatparse.Seed}, "<seed:tool_call>\n<function="},
		{"minimax-m2", chatparse.Options{Format: chatparse.MiniMax}, `<minimax:tool_call>` + "\n" + `<invoke name="`},
		{"dsml-v3.2", chatparse.Options{Format: chatparse.DSML}, "<｜DSML｜function_calls>\n<｜DSML｜invoke name="},
		{"dsml-v4", chatparse.Options{Format: chatparse.DSML, DSMLToolCalls: true}, "<｜DSML｜tool_calls>\n<｜DSML｜invoke name="},
		{"hy3", chatparse.Options{Format: chatparse.Hy3}, "<tool_sep:opensource>"},
		{"minicpm5", chatparse.Options{Format: chatparse.MiniCPM5}, `<param name="`},
		{"functionary-v3.2", chatparse.Options{Format: chatparse.Functionary}, "\n{"},
		{"mistral-args", chatparse.Options{Format: chatparse.Mistral, ArgsCalls: true}, "[ARGS]"},
		{"mistral-call-id", chatparse.Options{Format: chatparse.Mistral, ArgsCalls: true, CallIDCalls: true}, "[CALL_ID]"},
		{"gemma4", chatparse.Options{Format: chatparse.Gemma4}, "<|tool_call>call:"},
		{"lfm2", chatparse.Options{Format: chatparse.LFM2}, "<|tool_call_start|>["},
		{"muse", chatparse.Options{Format: chatparse.Muse}, "<atem:invoke name="},
		{"solar-open", chatparse.Options{Format: chatparse.SolarOpen}, "<|tool_call:name|>"},
		{"tool-calls-tag", chatparse.Options{Format: chatparse.ToolCallsTag}, "<tool_calls>"},
		{"firefunction", chatparse.Options{Format: chatparse.FireFunction}, " functools"},
		{"kimi-k3", chatparse.Options{Format: chatparse.KimiK3}, `<|open|>tools<|sep|><|open|>call tool="`},
		{"minimax-m3", chatparse.Options{Format: chatparse.MiniMaxM3}, `]<]minimax[>[<invoke name="`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, only := range []string{"", "add", "label"} {
				g, err := chatparse.Grammar(tc.o, tools, only)
				if err != nil {
					t.Fatal(err)
				}
				// (Muse's optional message to self is free text, which
				// the story model never ends: the call alone is sampled.)
				g = strings.Replace(g, "root ::= tadpole-self? ", "root ::= ", 1)
				o := tc.o
				o.Tools = []string{"get_weather", "add", "label"}
				o.Parameters = params
				names := map[string]bool{}
				for seed := range int64(4) {
					text := generate(t, m, g, seed, 400)
					if !strings.Contains(text, tc.mark) {
						t.Fatalf("only %q, seed %d: %q lacks %q", only, seed, text, tc.mark)
					}
					d, warn := chatparse.Parse(o, text)
					if len(d.ToolCalls) != 1 || len(warn) > 0 || strings.TrimSpace(d.Content) != "" {
						t.Fatalf("only %q, seed %d: %q parsed as %+v, warnings %v", only, seed, text, d, warn)
					}
					c := d.ToolCalls[0]
					names[c.Name] = true
					var args map[string]any
					if err := json.Unmarshal(c.Arguments, &args); err != nil {
						t.Fatalf("%q: arguments %s: %v", text, c.Arguments, err)
					}
					switch c.Name {
					case "get_weather":
						if city, _ := args["city"].(string); len(args) != 1 || !slices.Contains([]string{"Paris", "Oslo"}, city) {
							t.Errorf("%q: arguments %s", text, c.Arguments)
						}
					case "add":
						if n, _ := args["n"].(float64); len(args) != 1 || n < 1 || n > 9 || n != float64(int(n)) {
							t.Errorf("%q: arguments %s", text, c.Arguments)
						}
					case "label":
						code, _ := args["code"].(string)
						if _, ok := args["on"].(bool); len(args) != 2 || !ok || code != "18" && code != "true" {
							t.Errorf("%q: arguments %s", text, c.Arguments)
						}
					}
				}
				if only != "" && (len(names) != 1 || !names[only]) {
					t.Errorf("only %q: called %v", only, names)
				}
			}
			// Thinking first (free text, so not sampled here: the story
			// model never ends it): llama.cpp takes the grammar.
			for _, start := range []bool{false, true} {
				th := tc.o
				th.Thinking, th.StartInThinking = true, start
				g, err := chatparse.Grammar(th, tools, "")
				if err != nil {
					t.Fatal(err)
				}
				s, err := m.NewSampler(engine.SamplerParams{Grammar: g, Temperature: 0.8})
				if err != nil {
					t.Fatalf("%+v: llama.cpp refuses the grammar: %v\n%s", th, err, g)
				}
				s.Close()
			}
		})
	}
}

// generate samples up to max tokens after a short prompt under grammar g
// (temperature 0.8, seed) and returns the text, failing the test if the
// grammar does not end it.
func generate(t *testing.T, m *engine.Model, g string, seed int64, max int) string {
	t.Helper()
	text, ended := sample(t, m, g, seed, max)
	if !ended {
		t.Fatalf("no end within %d tokens: %q", max, text)
	}
	return text
}

// sample is generate's sampling: the text, and whether the grammar
// ended it within max tokens.
func sample(t *testing.T, m *engine.Model, g string, seed int64, max int) (string, bool) {
	t.Helper()
	prompt, err := m.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := m.NewContext(engine.ContextParams{Threads: 1, NumCtx: max + 64, NumBatch: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	s, err := m.NewSampler(engine.SamplerParams{Grammar: g, Temperature: 0.8, Seed: seed})
	if err != nil {
		t.Fatalf("llama.cpp refuses the grammar: %v\n%s", err, g)
	}
	defer s.Close()
	b, err := engine.NewBatch(64)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i, tok := range prompt {
		b.Add(tok, i, 0, i == len(prompt)-1)
	}
	var d engine.Detokenizer
	var out []byte
	for n := 0; n < max; n++ {
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		tok, err := s.Sample(ctx, b.Len()-1)
		if err != nil {
			t.Fatal(err)
		}
		if m.IsEOG(tok) {
			return string(append(out, d.Flush()...)), true
		}
		out = append(out, d.Add(m.TokenPiece(tok, false))...)
		b.Clear()
		b.Add(tok, len(prompt)+n, 0, true)
	}
	return string(append(out, d.Flush()...)), false
}

// tool_choice "auto" on Kimi K2, DeepSeek, Gemma 4, LFM2 and the key-value
// formats (Qwen3-Coder, GLM, Seed-OSS, MiniMax M2, DSML, Hunyuan 3,
// MiniCPM5):
// from the token that opens the calls section (or a call), the lazy
// grammar holds every call the model writes to the family's markup and
// its function's schema (Kimi's calls numbered as the model numbers
// them), then the section's end. Sampled
// from the trigger on (the story model has no such token: the trigger is
// written as its text here), the text parses as calls of the declared
// functions.
func TestLazyCallsInFamilyMarkup(t *testing.T) {
	m, err := engine.LoadModel(testmodels.Testdata("stories260K.gguf"), engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	tools := []chatparse.Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]}}, "required": ["city"], "additionalProperties": false}`)},
		{Name: "add", Parameters: json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["n"], "additionalProperties": false}`)},
	}
	// The story model may go on calling for long: past 600 tokens the
	// text is cut after its last whole call (callEnd) and the section
	// closed (end).
	for _, tc := range []struct {
		o            chatparse.Options
		callEnd, end string
	}{
		{chatparse.Options{Format: chatparse.Kimi}, "<|tool_call_end|>", "<|tool_calls_section_end|>"},
		{chatparse.Options{Format: chatparse.DeepSeek}, "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"},
		{chatparse.Options{Format: chatparse.DeepSeek, FencedCalls: true}, "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"},
		{chatparse.Options{Format: chatparse.Hermes, XMLCalls: true}, "</tool_call>", ""},
		{chatparse.Options{Format: chatparse.Hermes, XMLCalls: true, ArgKeyCalls: true}, "</tool_call>", ""},
		{chatparse.Options{Format: chatparse.Seed}, "</seed:tool_call>", ""},
		{chatparse.Options{Format: chatparse.MiniMax}, "</invoke>", "</minimax:tool_call>"},
		{chatparse.Options{Format: chatparse.DSML}, "</｜DSML｜invoke>", "</｜DSML｜function_calls>"},
		{chatparse.Options{Format: chatparse.DSML, DSMLToolCalls: true}, "</｜DSML｜invoke>", "</｜DSML｜tool_calls>"},
		{chatparse.Options{Format: chatparse.Hy3}, "</tool_call:opensource>", "</tool_calls:opensource>"},
		{chatparse.Options{Format: chatparse.MiniCPM5}, "</function>", ""},
		{chatparse.Options{Format: chatparse.Gemma4}, "<tool_call|>", ""},
		{chatparse.Options{Format: chatparse.LFM2}, ")", "]<|tool_call_end|>"},
	} {
		o := tc.o
		trigger := chatparse.CallTrigger(o)
		if trigger == "" {
			t.Fatalf("%v: no trigger", o.Format)
		}
		g, err := chatparse.LazyGrammar(o, tools, strconv.Quote(trigger))
		if err != nil {
			t.Fatal(err)
		}
		o.Tools = []string{"get_weather", "add"}
		for seed := range int64(4) {
			text, ended := sample(t, m, g, seed, 600)
			if !ended {
				i := strings.LastIndex(text, tc.callEnd)
				if i < 0 {
					t.Fatalf("%v: no whole call in 600 tokens: %q", o.Format, text)
				}
				text = text[:i+len(tc.callEnd)] + tc.end
			}
			d, warn := chatparse.Parse(o, "Let me see. "+text)
			if len(d.ToolCalls) == 0 || len(warn) > 0 || strings.TrimSpace(d.Content) != "Let me see." {
				t.Fatalf("%v fenced %v, seed %d: %q parsed as %+v, warnings %v", o.Format, o.FencedCalls, seed, text, d, warn)
			}
			for _, c := range d.ToolCalls {
				var args map[string]any
				if err := json.Unmarshal(c.Arguments, &args); err != nil {
					t.Fatalf("%q: arguments %s: %v", text, c.Arguments, err)
				}
				city, _ := args["city"].(string)
				n, _ := args["n"].(float64)
				if c.Name == "get_weather" && (len(args) != 1 || city != "Paris" && city != "Oslo") ||
					c.Name == "add" && (len(args) != 1 || n < 1 || n > 9 || n != float64(int(n))) ||
					c.Name != "get_weather" && c.Name != "add" {
					t.Errorf("%v: %q: call %+v", o.Format, text, c)
				}
			}
		}
	}
	// Kimi's calls may be numbered: a second call is :1.
	g, err := chatparse.LazyGrammar(chatparse.Options{Format: chatparse.Kimi}, tools, strconv.Quote(chatparse.CallTrigger(chatparse.Options{Format: chatparse.Kimi})))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g, "[0-9]{1,3}") {
		t.Errorf("Kimi's lazy grammar takes no call index:\n%s", g)
	}
}

// Tool names and property names are the client's (Ollama's tools are
// not held to OpenAI's name pattern): the worst of them (quotes,
// backslashes, newlines, a NUL, invalid UTF-8, 10,000 bytes, the
// families' own markup) in the family-markup grammars, forced and lazy,
// are literals llama.cpp's grammar parser takes, not an abort.
func TestFamilyMarkupGrammarsTakeAnyName(t *testing.T) {
	m, err := engine.LoadModel(testmodels.Testdata("stories260K.gguf"), engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	worst := []string{`a"b`, `c\d`, "e\nf\r\t", "g\x00h", "i\xffj", strings.Repeat("k", 10000), "<|tool_call_end|>", "]]",
		"</parameter>", "\n</parameter>\n", "</arg_value>", "</arg_key>", `">`, `" string="`, "</param>", "]]>", "</｜DSML｜parameter>",
		"</arg_value:opensource>", "</function>", "</tool_call>", ">"}
	props := map[string]json.RawMessage{}
	var required []string
	for i, n := range worst {
		props[n] = json.RawMessage([]string{`{"type": "string"}`, `{"type": "integer"}`, `{"enum": ["x", "</parameter>"]}`, `{}`, `{"type": ["string", "number"]}`}[i%5])
		if i%3 == 0 && len(required) < 6 {
			required = append(required, n)
		}
	}
	params, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
	if err != nil {
		t.Fatal(err)
	}
	var tools []chatparse.Tool
	for i, n := range worst {
		p := json.RawMessage(params)
		if i%2 == 1 {
			p = nil // any object
		}
		tools = append(tools, chatparse.Tool{Name: n, Parameters: p})
	}
	for _, base := range []chatparse.Options{
		{Format: chatparse.Kimi}, {Format: chatparse.DeepSeek}, {Format: chatparse.FunctionTag}, {Format: chatparse.Apertus},
		{Format: chatparse.Hermes, XMLCalls: true}, {Format: chatparse.Hermes, XMLCalls: true, ArgKeyCalls: true},
		{Format: chatparse.Seed}, {Format: chatparse.MiniMax}, {Format: chatparse.DSML}, {Format: chatparse.DSML, DSMLToolCalls: true},
		{Format: chatparse.Hy3}, {Format: chatparse.MiniCPM5}, {Format: chatparse.Functionary},
		{Format: chatparse.ToolCallsTag}, {Format: chatparse.FireFunction}, {Format: chatparse.Gemma4},
		{Format: chatparse.LFM2}, {Format: chatparse.Muse}, {Format: chatparse.SolarOpen},
		{Format: chatparse.Mistral, ArgsCalls: true}, {Format: chatparse.Mistral, ArgsCalls: true, CallIDCalls: true},
		{Format: chatparse.KimiK3}, {Format: chatparse.MiniMaxM3}, {Format: chatparse.CommandR}, {Format: chatparse.CommandRPlus},
	} {
		thinking := base
		thinking.FencedCalls, thinking.Thinking = true, true
		for _, o := range []chatparse.Options{base, thinking} {
			f := o.Format
			grammars := map[string]string{}
			g, err := chatparse.Grammar(o, tools, "")
			if err != nil {
				t.Fatalf("%v forced: %v", f, err)
			}
			grammars["forced"] = g
			if chatparse.CallTrigger(o) != "" {
				if grammars["lazy"], err = chatparse.LazyGrammar(o, tools, "<[7]>"); err != nil {
					t.Fatalf("%v lazy: %v", f, err)
				}
			}
			for kind, g := range grammars {
				s, err := m.NewSampler(engine.SamplerParams{Grammar: g, Temperature: 0.8})
				if err != nil {
					t.Fatalf("%v %s: llama.cpp refuses the grammar: %v", f, kind, err)
				}
				s.Close()
			}
		}
	}
}
