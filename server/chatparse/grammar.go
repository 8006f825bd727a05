package chatparse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// Tool is a function a forced call may call.
type Tool struct {
	Name       string
	Parameters json.RawMessage // a JSON schema; empty: any object
}

// toolArgs are the arguments schemas of tools (only that one when only is
// set), in order, with their names, and the definitions they share moved
// out of them ("#/$defs/…" references then point at the top of a
// schema that holds them): what the call grammars build on. A function
// whose parameters are not a schema object, that refers to its own root,
// or whose definitions clash with another's is an error naming it.
func toolArgs(tools []Tool, only string) (args []json.RawMessage, names []string, defs map[string]map[string]json.RawMessage, err error) {
	defs = map[string]map[string]json.RawMessage{}
	for _, t := range tools {
		if only != "" && t.Name != only {
			continue
		}
		params := bytes.Trim(t.Parameters, spaces)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type": "object"}`)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(params, &obj); err != nil {
			return nil, nil, nil, fmt.Errorf("function %q: parameters must be a JSON schema object", t.Name)
		}
		// Definitions move to the top, where "#/$defs/…" references
		// point once the parameters sit inside the call's schema.
		for _, key := range []string{"$defs", "definitions"} {
			raw, ok := obj[key]
			if !ok {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, nil, nil, fmt.Errorf("function %q: %s must be an object", t.Name, key)
			}
			if defs[key] == nil {
				defs[key] = map[string]json.RawMessage{}
			}
			for k, v := range m {
				if old, ok := defs[key][k]; ok && !bytes.Equal(old, v) {
					return nil, nil, nil, fmt.Errorf("function %q: definition %q differs from another function's", t.Name, k)
				}
				defs[key][k] = v
			}
			delete(obj, key)
		}
		if bytes.Contains(params, []byte(`"#"`)) {
			return nil, nil, nil, fmt.Errorf("function %q: parameters that refer to their own root (\"$ref\": \"#\") cannot be forced", t.Name)
		}
		p, _ := json.Marshal(obj)
		args = append(args, p)
		names = append(names, t.Name)
	}
	if len(args) == 0 {
		return nil, nil, nil, fmt.Errorf("no function named %q among the tools", only)
	}
	return args, names, defs, nil
}

// callSchema is the JSON schema of one call of one of tools (only that
// one when only is set), in o.Format's keys, with the functions' names;
// a function the grammar converter cannot hold to its parameters is an
// error naming it.
func callSchema(o Options, tools []Tool, only string) ([]byte, []string, error) {
	nameKey, argsKey := "name", "arguments"
	switch o.Format {
	case Llama3:
		argsKey = "parameters"
	case CommandR, CommandRPlus:
		nameKey, argsKey = "tool_name", "parameters"
	}
	argSchemas, names, defs, err := toolArgs(tools, only)
	if err != nil {
		return nil, nil, err
	}
	branches := make([]json.RawMessage, len(names))
	for i, p := range argSchemas {
		name, _ := json.Marshal(names[i])
		b := fmt.Sprintf(`{"type": "object", "properties": {%q: {"const": %s}, %q: %s}, "required": [%q, %q]}`,
			nameKey, name, argsKey, p, nameKey, argsKey)
		if o.Format == CommandR {
			// Command R7B writes each call's id first, as its template
			// shows a call: {"tool_call_id": "0", "tool_name": …,
			// "parameters": …}; a grammar without it would drive the
			// model off its own syntax.
			b = fmt.Sprintf(`{"type": "object", "properties": {"tool_call_id": {"type": "string", "pattern": "^[0-9]{1,10}$"}, %q: {"const": %s}, %q: %s}, "required": ["tool_call_id", %q, %q]}`,
				nameKey, name, argsKey, p, nameKey, argsKey)
		}
		branches[i] = json.RawMessage(b)
	}
	// Each function on its own first, so that an error names it.
	for i, b := range branches {
		one := map[string]any{"allOf": []json.RawMessage{b}}
		for k, v := range defs {
			one[k] = v
		}
		s, _ := json.Marshal(one)
		if _, err := grammar.FromSchema(s); err != nil {
			return nil, nil, fmt.Errorf("function %q: %v", names[i], err)
		}
	}
	schema := map[string]any{"anyOf": branches}
	if o.Format == Harmony && len(branches) == 1 {
		// One function: its own message, as gpt-oss writes a call (the
		// name in the header, the arguments as the body), an analysis
		// message allowed before it (harmonyAnalysisFirst).
		schema = map[string]any{"allOf": []json.RawMessage{argSchemas[0]}}
	}
	for k, v := range defs {
		schema[k] = v
	}
	s, err := json.Marshal(schema)
	return s, names, err
}

// Grammar is a GBNF grammar (root rule "root") whose every output is one
// call, in o.Format's syntax (the family's own markup around the
// arguments for the formats that name the function outside the JSON:
// Kimi K2, DeepSeek, function tags, Apertus, functionary v3.2 (named;
// v3.2's generation prompt writes the first ">>>");
// the arguments as key-value fields in the family's markup for
// Qwen3-Coder-style and GLM-style Hermes calls, Seed-OSS, MiniMax M2,
// DSML, Hunyuan 3, MiniCPM5 and Kimi K3 (keyValue); MiniMax M3's
// namespaced elements (m3Grammar); the call object between the
// family's markup (callMarkup: Hermes JSON, Mistral, Command R, granite,
// Nemotron Nano 2, GigaChat, Apriel's <tool_calls>, firefunction); a
// bare call object for the others, which the parser takes too), of one
// of tools (only that one when only is set) with arguments valid
// against its parameters schema (harmony: one function's message
// to=functions.NAME, or a bare call object in a commentary message when
// several may be called): for OpenAI's
// tool_choice "required" or a named function. With o.Thinking the model
// may think first, in a block of any of the thinking tag pairs; with
// o.StartInThinking it must first end the block the prompt opened.
// Parameters the grammar converter cannot hold the output to (see
// engine/grammar) are an error naming the function.
func Grammar(o Options, tools []Tool, only string) (string, error) {
	switch o.Format {
	case Gemma4:
		return gemma4Grammar(o, tools, only)
	case LFM2:
		return lfm2Grammar(o, tools, only)
	case SolarOpen:
		return solarGrammar(o, tools, only)
	case KimiK3:
		return k3Grammar(o, tools, only)
	case MiniMaxM3:
		return m3Grammar(o, tools, only)
	}
	g, ok, err := kvGrammar(o, tools, only)
	if !ok {
		g, ok, err = namedGrammar(o, tools, only)
	}
	if ok {
		if err != nil {
			return "", err
		}
		if o.Format == Muse {
			return museSelfFirst(g), nil
		}
		return withThinking(o, g), nil
	}
	if c, ok := callMarkup[o.Format]; ok {
		g, err := markupGrammar(o, tools, only, strconv.Quote(c.trigger), false)
		if err != nil {
			return "", err
		}
		return withThinking(o, g), nil
	}
	s, names, err := callSchema(o, tools, only)
	if err != nil {
		return "", err
	}
	if o.Format == Harmony {
		head := harmonyChannel + "commentary" + harmonyMessage
		if len(names) == 1 {
			head = harmonyChannel + "commentary to=functions." + names[0] + " " + harmonyConstrain + "json" + harmonyMessage
		}
		// (Several: a bare call object in a commentary message, which
		// the parser takes as a call.)
		g, err := grammar.FromSchemaBetween(s, head, "")
		if err != nil {
			return "", err
		}
		return harmonyAnalysisFirst(g), nil
	}
	g, err = grammar.FromSchemaBetween(s, "", "")
	if err != nil {
		return "", err
	}
	return withThinking(o, g), nil
}

// splitRoot is grammar g's root rule's body (what "root ::= " names,
// the first line) and its other rules, for a grammar built around it.
func splitRoot(g string) (root, rules string) {
	first, rules, _ := strings.Cut(g, "\n")
	return strings.TrimPrefix(first, "root ::= "), rules
}

// harmonyAnalysisFirst is harmony call grammar g with an analysis
// message allowed before the call, as gpt-oss writes one before it acts:
// "<|channel|>analysis<|message|>…<|end|><|start|>assistant" (the text
// without "<|"; <|end|> is a control token, which llama.cpp's grammar
// matches by its text).
func harmonyAnalysisFirst(g string) string {
	call, rules := splitRoot(g)
	analysis := fmt.Sprintf(`%q ([^<] | "<" [^|])* %q`, harmonyChannel+"analysis"+harmonyMessage, harmonyEnd+harmonyStart+"assistant")
	return fmt.Sprintf("root ::= tadpole-analysis? (%s)\ntadpole-analysis ::= %s\n%s", call, analysis, rules)
}

// withThinking is call grammar g with, for a thinking model (o.Thinking),
// the thinking first: an optional thinking block, or the end of the one
// the prompt opened.
func withThinking(o Options, g string) string {
	if !o.Thinking {
		return g
	}
	call, rules := splitRoot(g)
	// A block may follow a newline or two (GLM writes "\n<think>" after
	// its generation prompt); without a block, so may the call.
	opt := `[ \n]{0,2} tadpole-thinking?`
	if o.StartInThinking {
		opt = "tadpole-thinking" // the output starts inside the block: it must end it
	}
	return fmt.Sprintf("root ::= %s (%s)\ntadpole-thinking ::= %s\n%s", opt, call, thinkingRule(o.StartInThinking, o.ThinkingEnd), rules)
}

// thinkingRule is GBNF for a thinking block in any of the tag pairs (the
// pair of the template's close tag end, where it names one of them),
// without its open tag when the prompt opened it, and the whitespace
// after it. The text inside never holds the close tag's first two
// characters ("</" for "</think>"), which keeps the rule simple. Only
// the template's pair where it is known: the text of another pair's
// block may hold the template's close and a call (Apriel's "[BEGIN
// FINAL RESPONSE]" block takes any text without "[B"), so a model that
// starts in its block could write a call the grammar never held.
func thinkingRule(opened bool, end string) string {
	tags := thinkingTags
	if i := slices.IndexFunc(thinkingTags, func(t [2]string) bool { return t[1] == end }); end != "" && i >= 0 {
		tags = thinkingTags[i : i+1]
	}
	var alts []string
	for _, t := range tags {
		open := strconv.Quote(t[0]) + " "
		if opened {
			open = ""
		}
		c0, c1 := t[1][:1], t[1][1:2]
		alts = append(alts, fmt.Sprintf(`%s([^%s] | %s [^%s])* %s`, open, gbnfClass(c0), strconv.Quote(c0), gbnfClass(c1), strconv.Quote(t[1])))
	}
	return "(" + strings.Join(alts, " | ") + `) [ \n]{0,2}`
}

// gbnfClass escapes a character for a GBNF character class.
func gbnfClass(c string) string {
	if strings.Contains(`"\[]`, c) {
		return `\` + c
	}
	return c
}

// callMarkup is what surrounds a call object in the formats whose call
// starts with a special token (trigger): the text after that token and
// the close.
var callMarkup = map[Format]struct{ trigger, open, close string }{
	Hermes:   {"<tool_call>", "\n", "\n</tool_call>"},
	Mistral:  {"[TOOL_CALLS]", "[", "]"},
	CommandR: {"<|START_ACTION|>", "[", "]<|END_ACTION|>"},
	Granite:  {"<|tool_call|>", "[", "]"},
	// Nemotron Nano 2: its template writes "<TOOLCALL>[{…}, {…}]</TOOLCALL>".
	NemotronV2: {nemotronCallsBegin, "[", "]" + nemotronCallsEnd},
	// GigaChat 3: one call message, its object to the end of the output.
	GigaChat: {gigaCall, "", ""},
	// GigaChat 3.1: its <|function_call|> token, then the object.
	GigaChat31: {gigaFunctionCall, "", ""},
	// Apriel: <tool_calls>[{…}, …]</tool_calls>; MiniMax M1: one object
	// a line inside the tags (markupGrammar takes both).
	ToolCallsTag: {toolCallsTagBegin, "", toolCallsTagEnd},
	// Command R+ (its tool_use template): "Action:\n```json\n[\n    {…}\n]```"
	// ("Action:" is no token of its own: no lazy grammar).
	CommandRPlus: {"Action:", "```json\n[", "]```"},
	// firefunction v2: " functools[{…}, …]", to the end of the output
	// (its template writes the space before the marker).
	FireFunction: {" " + strings.TrimSuffix(fireFunctionCalls, "["), "[", "]"},
}

// CallTrigger is the text that starts a call in o's format, where a
// lazy grammar (LazyGrammar) can hold the call to its schema (infer
// arms it where the model's vocabulary holds it as one token): "" where
// the format has none, or its calls are not always one syntax after it
// (Mistral, whose newer models write [TOOL_CALLS]name[ARGS]{…} where
// the older wrote [TOOL_CALLS][{…}]). Kimi K2's, DeepSeek's, MiniMax
// M2's, DSML's and Hunyuan 3's trigger is the token that opens their
// calls section; Gemma 4's opens each call, LFM2's a list of them.
func CallTrigger(o Options) string {
	if m, ok := keyValue(o); ok {
		return m.trigger
	}
	switch o.Format {
	case Mistral, ToolCallsTag, FireFunction, CommandRPlus:
		// (<tool_calls> holds a list from Apriel, an object a line from
		// MiniMax M1; "functools" is no token of its own.)
		return ""
	case Kimi:
		return kimiSectionBegin
	case DeepSeek:
		return deepSeekCallsBegin
	case Gemma4:
		return gemma4CallBegin
	case LFM2:
		return lfmCallsBegin
	}
	return callMarkup[o.Format].trigger
}

// XMLCalls reports whether a template teaches Hermes calls as XML-style
// parameters (<function=name><parameter=key>…, Qwen3-Coder, Qwen 3.5) or
// GLM's key/value tags (<tool_call>name<arg_key>key</arg_key>
// <arg_value>…, GLM 4.6/4.7, Laguna, Spark, Ling; ArgKeyCalls tells
// which) rather than a JSON object: the call grammars write that markup.
func XMLCalls(template string) bool {
	return strings.Contains(template, "<function=") || strings.Contains(template, "<parameter=") || strings.Contains(template, "<arg_key>")
}

// LazyGrammar is the grammar of a lazy grammar for tool_choice "auto"
// (llama.cpp's lazy grammar triggers, as llama-server builds them): it
// starts at the format's call token (CallTrigger), written as
// triggerRule (the token's id, "<[ID]>", so that the grammar takes the
// very token that woke it), then holds the call object to one of tools'
// schemas and the format's close; Hermes may write further calls, and
// the list formats (Command R7B, granite) further objects; Kimi K2 and
// DeepSeek write their calls in their own markup (namedLazyGrammar), the
// key-value formats theirs (kvLazyGrammar). What
// the model writes before the token (thinking, content) is free, and
// once the calls end only the end of the output may follow.
func LazyGrammar(o Options, tools []Tool, triggerRule string) (string, error) {
	switch o.Format {
	case Gemma4:
		return gemma4LazyGrammar(tools, triggerRule)
	case LFM2:
		return lfm2LazyGrammar(tools, triggerRule)
	}
	if g, ok, err := kvLazyGrammar(o, tools, triggerRule); ok {
		return g, err
	}
	if g, ok, err := namedLazyGrammar(o, tools, triggerRule); ok {
		return g, err
	}
	return markupGrammar(o, tools, "", triggerRule, true)
}

// markupGrammar is the grammar of a call object between its format's
// markup (callMarkup), from trigger (a GBNF expression: the token's id
// for a lazy grammar, the token's text for a forced one) to the close,
// of one of tools (only that one when only is set), spaced as the
// family's models space it; with many, further calls may follow (a
// lazy grammar: the model chose to call, and may call in parallel). A
// forced call is one call, spaced as the model would space it unforced.
func markupGrammar(o Options, tools []Tool, only, triggerRule string, many bool) (string, error) {
	c, ok := callMarkup[o.Format]
	if !ok {
		return "", fmt.Errorf("format %s has no call token", o.Format)
	}
	s, _, err := callSchema(o, tools, only)
	if err != nil {
		return "", err
	}
	g, err := grammar.FromSchemaBetween(s, "", "")
	if err != nil {
		return "", err
	}
	body, rules := splitRoot(g)
	// The markup around the object as the model may space it: models of
	// one format differ ("<tool_call>\n{…}\n</tool_call>" from Qwen,
	// "<tool_call>{…}</tool_call>" from others, "[\n    {…}\n]" from
	// Command R7B), and a grammar stricter than the model drives it into
	// whatever the grammar still allows.
	pad := `[ \n]{0,2} [ ]{0,8}`
	// A list: parallel calls, "},\n    {".
	list := `tadpole-object ([ \n]{0,2} "," ` + pad + ` tadpole-object)*`
	item := "tadpole-object"
	gap := `[ \n]{0,2}`
	if o.Format == FireFunction {
		gap = "" // " functools[": "functools" is text, not a token
	}
	parts := []string{triggerRule, gap}
	if open := trimSpace(c.open); open != "" {
		parts = append(parts, strconv.Quote(open), pad)
		if strings.HasSuffix(open, "[") && many {
			item = list
		}
	}
	if o.Format == ToolCallsTag {
		// Apriel writes a list in its tags, MiniMax M1 one object a
		// line; the parser reads both.
		lines := `tadpole-object ([ \n]{1,2} tadpole-object)*`
		if !many {
			list, lines = item, item
		}
		item = `("[" ` + pad + " " + list + ` [ \n]{0,2} "]" | ` + lines + ")"
	}
	parts = append(parts, item)
	if cl := trimSpace(c.close); cl != "" {
		parts = append(parts, `[ \n]{0,2}`, strconv.Quote(cl))
	}
	root := "tadpole-call"
	if o.Format == Hermes && many {
		root = `tadpole-call ([ \n]{0,2} tadpole-call)*`
	}
	// A newline or two may end the output: a model that writes one after
	// its last call must still be able to stop.
	root += ` [ \n]{0,2}`
	return fmt.Sprintf("root ::= %s\ntadpole-call ::= %s\ntadpole-object ::= %s\n%s", root, strings.Join(parts, " "), body, rules), nil
}
