package chatparse

import (
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// kvMarkup is how a format whose calls carry key-value parameters
// writes them, as its template shows a call: the text that starts the
// calls (trigger, CallTrigger's), which either opens a section of calls
// that end closes (section) or starts each call; around a call's
// fields the text before (from the function's name; after the trigger
// for the formats without a section) and after; and the fields
// (grammar.Fields).
type kvMarkup struct {
	trigger string
	section bool
	open    func(name string) string
	close   string
	end     string
	fields  grammar.Fields
}

// keyValue is format o's kvMarkup; ok is false for the formats whose
// calls carry JSON arguments.
func keyValue(o Options) (m kvMarkup, ok bool) {
	nl := `"\n"?`
	switch {
	case o.Format == Hermes && o.ArgKeyCalls:
		// GLM 4.6: <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V
		// </arg_value>\n…</tool_call>; GLM 4.7, Laguna, Spark without
		// the newlines, Ling with one before <arg_value>.
		return kvMarkup{trigger: "<tool_call>", open: func(n string) string { return n }, close: "</tool_call>",
			fields: grammar.Fields{KeyOpen: glmTags.key, KeyClose: glmTags.keyEnd, Gap: nl,
				StringOpen: glmTags.value, JSONOpen: glmTags.value, Close: glmTags.valueEnd, Sep: nl}}, true
	case o.Format == Hermes && o.XMLCalls:
		// Qwen3-Coder, Qwen 3.5, Nemotron 3 Nano, StepFun 3.5:
		// <tool_call>\n<function=NAME>\n<parameter=K>\nV\n</parameter>\n…
		// </function>\n</tool_call>.
		return kvMarkup{trigger: "<tool_call>", open: func(n string) string { return "\n<function=" + n + ">\n" },
			close:  "</function>\n</tool_call>",
			fields: grammar.Fields{KeyOpen: "<parameter=", KeyClose: ">\n", Close: "\n</parameter>\n"}}, true
	case o.Format == Seed:
		// <seed:tool_call>\n<function=NAME>\n<parameter=K>V</parameter>\n…
		// </function>\n</seed:tool_call>.
		return kvMarkup{trigger: seedCallBegin, open: func(n string) string { return "\n<function=" + n + ">" },
			close:  "</function>\n" + seedCallEnd,
			fields: grammar.Fields{KeyOpen: "<parameter=", KeyClose: ">", Close: "</parameter>", Sep: nl}}, true
	case o.Format == MiniMax:
		// <minimax:tool_call>\n<invoke name="NAME">\n<parameter name="K">V
		// </parameter>\n…</invoke>\n…</minimax:tool_call>.
		return kvMarkup{trigger: miniMaxCallBegin, section: true, end: miniMaxCallEnd,
			open: func(n string) string { return `<invoke name="` + n + `">` }, close: "</invoke>",
			fields: grammar.Fields{KeyOpen: `<parameter name="`, KeyClose: `">`, Close: "</parameter>", Sep: nl}}, true
	case o.Format == DSML:
		// <｜DSML｜function_calls> (V4: tool_calls)\n<｜DSML｜invoke
		// name="NAME">\n<｜DSML｜parameter name="K" string="true|false">V
		// </｜DSML｜parameter>\n…</｜DSML｜invoke>\n…
		begin, end := dsmlCallsBegin, dsmlCallsEnd
		if o.DSMLToolCalls {
			begin, end = dsmlToolCallsBegin, dsmlToolCallsEnd
		}
		return kvMarkup{trigger: begin, section: true, end: end,
			open: func(n string) string { return "<" + dsml + `invoke name="` + n + `">` }, close: "</" + dsml + "invoke>",
			fields: grammar.Fields{KeyOpen: "<" + dsml + `parameter name="`, KeyClose: `" string="`,
				StringOpen: `true">`, JSONOpen: `false">`, Close: "</" + dsml + "parameter>", Sep: nl}}, true
	case o.Format == Hy3:
		// <tool_calls:opensource>\n<tool_call:opensource>NAME<tool_sep:opensource>\n
		// <arg_key:opensource>K</arg_key:opensource>\n<arg_value:opensource>V
		// </arg_value:opensource>\n…</tool_call:opensource>\n…</tool_calls:opensource>.
		return kvMarkup{trigger: hy3CallsBegin, section: true, end: hy3CallsEnd,
			open: func(n string) string { return hy3CallBegin + n + hy3Sep }, close: hy3CallEnd,
			fields: grammar.Fields{KeyOpen: hy3Tags.key, KeyClose: hy3Tags.keyEnd, Gap: nl,
				StringOpen: hy3Tags.value, JSONOpen: hy3Tags.value, Close: hy3Tags.valueEnd, Sep: nl}}, true
	case o.Format == Muse:
		// " to=NAME<|message|><atem:function_calls>\n<atem:invoke
		// name="NAME">\n<atem:parameter name="K">V</atem:parameter>\n…
		// </atem:invoke>\n</atem:function_calls>", a message to the
		// tool; no trigger of its own (no lazy grammar).
		return kvMarkup{open: func(n string) string {
			return " to=" + n + museMessage + museCalls + "\n<atem:invoke name=\"" + n + "\">\n"
		}, close: "</atem:invoke>\n" + museCallsEnd,
			fields: grammar.Fields{KeyOpen: `<atem:parameter name="`, KeyClose: `">`, Close: "</atem:parameter>", Sep: nl}}, true
	case o.Format == KimiK3:
		// <|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|>
		// <|open|>argument key="K" type="T"<|sep|>V<|close|>argument<|sep|>…
		// <|close|>call<|sep|><|close|>tools<|sep|>, T the value's JSON
		// type; the section opens after the response (k3Grammar). The
		// tools tag is no token of its own: no lazy grammar.
		typed := map[string]string{}
		for _, t := range []string{"number", "boolean", "null", "object", "array"} {
			typed[t] = t + `"` + k3Sep
		}
		return kvMarkup{open: func(n string) string { return k3Open + `call tool="` + n + `" index="1"` + k3Sep },
			close: k3CloseTag("call"),
			fields: grammar.Fields{KeyOpen: k3Open + `argument key="`, KeyClose: `" type="`,
				StringOpen: `string"` + k3Sep, JSONOpens: typed, Close: k3CloseTag("argument")}}, true
	case o.Format == MiniCPM5:
		// <function name="NAME"><param name="K">V</param>…</function>.
		return kvMarkup{trigger: miniCPMCallBegin, open: func(n string) string { return n + `">` }, close: miniCPMCallEnd,
			fields: grammar.Fields{KeyOpen: miniCPMParam, KeyClose: `">`, Close: miniCPMParamEnd, Sep: nl}}, true
	}
	return kvMarkup{}, false
}

// kvCalls is the grammar of one call, in m, of one of tools (only that
// one when only is set), between prefix and suffix, its arguments as
// m's fields. A function the grammar converter cannot hold to its
// parameters is an error naming it (each function is converted on its
// own only then: a grammar of 24 functions takes tens of milliseconds).
func kvCalls(m kvMarkup, tools []Tool, only, prefix, suffix string) (string, error) {
	args, names, defs, err := toolArgs(tools, only)
	if err != nil {
		return "", err
	}
	branches := make([]grammar.Branch, len(args))
	for i, a := range args {
		branches[i] = grammar.Branch{Prefix: prefix + m.open(names[i]), Schema: a, Fields: &m.fields, Suffix: m.close + suffix}
	}
	g, err := grammar.FromBranches(defs, branches)
	if err == nil {
		return g, nil
	}
	for i, b := range branches {
		if _, err := grammar.FromBranches(defs, []grammar.Branch{b}); err != nil {
			return "", fmt.Errorf("function %q: %v", names[i], err)
		}
	}
	return "", err
}

// kvGrammar is Grammar for the formats of keyValue: one call, in the
// family's own markup, of one of tools (only that one when only is set).
func kvGrammar(o Options, tools []Tool, only string) (string, bool, error) {
	m, ok := keyValue(o)
	if !ok {
		return "", false, nil
	}
	prefix, suffix := m.trigger, ""
	if m.section {
		prefix, suffix = m.trigger+"\n", "\n"+m.end
	}
	g, err := kvCalls(m, tools, only, prefix, suffix)
	return g, true, err
}

// kvLazyGrammar is LazyGrammar for the formats of keyValue: from the
// trigger (triggerRule), calls of tools in the family's markup, as many
// as the model writes, then the section's end where there is one.
func kvLazyGrammar(o Options, tools []Tool, triggerRule string) (string, bool, error) {
	m, ok := keyValue(o)
	if !ok {
		return "", false, nil
	}
	g, err := kvCalls(m, tools, "", "", "")
	if err != nil {
		return "", true, err
	}
	body, rules := splitRoot(g)
	ws := `[ \n]{0,2}`
	// A newline after the last call (Laguna's template writes
	// "</tool_call>\n"), which does not oblige the model to call again.
	root := fmt.Sprintf("%s tadpole-call (%s %s tadpole-call)* %s", triggerRule, ws, triggerRule, ws)
	if m.section {
		root = fmt.Sprintf("%s %s tadpole-call (%s tadpole-call)* %s %s", triggerRule, ws, ws, ws, literalGBNF(m.end))
	}
	return fmt.Sprintf("root ::= %s\ntadpole-call ::= %s\n%s", root, body, rules), true, nil
}

// literalGBNF is s as a GBNF literal (s is this package's markup: valid
// UTF-8 without control characters but the newline).
func literalGBNF(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// ArgKeyCalls reports whether a template teaches GLM's calls,
// <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>… (GLM
// 4.6/4.7, Laguna, Spark, Ling), not Qwen3-Coder's <function=…>
// parameters: what a Hermes call's grammar writes.
func ArgKeyCalls(template string) bool {
	return strings.Contains(template, "<arg_key>")
}

// DSMLToolCalls reports whether a DeepSeek DSML template names its calls
// block tool_calls (V4) rather than function_calls (V3.2).
func DSMLToolCalls(template string) bool {
	return DetectFormat(template) == DSML && !strings.Contains(template, "function_calls>")
}
