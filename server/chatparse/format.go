package chatparse

import "strings"

// Format is a model's tool-call syntax.
type Format int

const (
	// Generic: an answer that is only a call object (or an array of
	// them); any model.
	Generic Format = iota
	// Hermes: <tool_call>{"name": …, "arguments": …}</tool_call> (Hermes,
	// Qwen 2.5/3, many fine-tunes), the JSON possibly in a ```json fence,
	// or <tool_call><function=name><parameter=key>value</parameter>…
	// </function></tool_call> (Qwen3-Coder).
	Hermes
	// Llama3: {"name": …, "parameters": …} objects, after <|python_tag|>
	// or as the whole answer, several separated by ";" or newlines; also
	// <|python_tag|>tool.call(key=value, …) for built-in tools, and
	// <|python_tag|>code for a declared "python" or "code_interpreter".
	Llama3
	// Mistral: [TOOL_CALLS][{"name": …, "arguments": …, "id": …}] or
	// [TOOL_CALLS]name[ARGS]{…}.
	Mistral
	// Functionary: functionary v3.2's ">>>name\n{…}" blocks (">>>all\n"
	// for text).
	Functionary
	// FunctionTag: <function=name>{…}</function> (functionary v3.1,
	// Llama 3.1's custom tool format).
	FunctionTag
	// CommandR: <|START_ACTION|>[{"tool_name": …, "parameters": …}]<|END_ACTION|>.
	CommandR
	// CommandRPlus: Action: ```json [{"tool_name": …, "parameters": …}] ```
	// (Command-R/R+'s tool_use template), to the end of the output.
	CommandRPlus
	// Granite: <|tool_call|>[{"name": …, "arguments": …}] (IBM granite 3).
	Granite
	// DeepSeek: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>…<｜tool▁sep｜>…
	// <｜tool▁call▁end｜><｜tool▁calls▁end｜> (R1: "function", the name and
	// a ```json block; V3.1: the name and the arguments).
	DeepSeek
	// Harmony: OpenAI's gpt-oss messages, <|channel|>analysis / final /
	// commentary to=functions.NAME <|constrain|>json<|message|>{…}
	// (harmony.go).
	Harmony
	// Kimi: Kimi K2's <|tool_calls_section_begin|><|tool_call_begin|>
	// functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>
	// <|tool_calls_section_end|>.
	Kimi
	// MiniMax: MiniMax M2's <minimax:tool_call><invoke name="NAME">
	// <parameter name="KEY">VALUE</parameter>…</invoke></minimax:tool_call>.
	MiniMax
	// Seed: ByteDance Seed-OSS's <seed:tool_call><function=NAME>
	// <parameter=KEY>VALUE</parameter>…</function></seed:tool_call>.
	Seed
	// Apertus: <|tools_prefix|>[{"NAME": {…}}, …]<|tools_suffix|>.
	Apertus
	// LFM2: <|tool_call_start|>[name(key=value, …)]<|tool_call_end|>,
	// Python call syntax (pythonic.go).
	LFM2
	// DSML: DeepSeek V3.2's <｜DSML｜function_calls><｜DSML｜invoke
	// name="NAME"><｜DSML｜parameter name="KEY" string="true|false">…
	DSML
	// Gemma4: Gemma 4's <|tool_call>call:NAME{key:<|"|>text<|"|>,…}<tool_call|>
	// (gemma4.go); thinking in <|channel>thought…<channel|>.
	Gemma4
	// NemotronV2: Nemotron Nano 2's <TOOLCALL>[{"name": …, "arguments": …}, …]</TOOLCALL>.
	NemotronV2
	// Hy3: Tencent Hunyuan 3's <tool_calls:opensource><tool_call:opensource>NAME
	// <tool_sep:opensource><arg_key:opensource>KEY</arg_key:opensource>
	// <arg_value:opensource>VALUE</arg_value:opensource>…
	Hy3
	// KimiK3: Kimi K3's tagged sections, <|open|>TAG attrs<|sep|>…<|close|>TAG<|sep|>:
	// think, response, tools of calls (kimik3.go).
	KimiK3
	// ToolCallsTag: <tool_calls>…</tool_calls> holding JSON call objects,
	// a list (Apriel: <tool_calls>[{"name": …, "arguments": …}]</tool_calls>)
	// or one a line (MiniMax M1).
	ToolCallsTag
	// GigaChat: GigaChat 3's call message, "<|message_sep|>\n\nfunction
	// call<|role_sep|>\n{"name": …, "arguments": …}" after the answer's
	// text (its role and message separators are tokens that hold the
	// newlines).
	GigaChat
	// GigaChat31: GigaChat 3.1's "<|function_call|>{"name": …, "arguments": …}".
	GigaChat31
	// FireFunction: firefunction v2's " functools[{"name": …, "arguments": …}, …]",
	// to the end of the output.
	FireFunction
	// MiniCPM5: <function name="NAME"><param name="KEY">VALUE</param>…</function>
	// (minicpm5.go).
	MiniCPM5
	// MiniMaxM3: MiniMax M3's namespaced XML, ]<]minimax[>[<tool_call>
	// ]<]minimax[>[<invoke name="NAME">]<]minimax[>[<KEY>VALUE…
	// (minimaxm3.go).
	MiniMaxM3
	// Muse: Muse Glimmer's ATEM messages, " to=self<|message|>…<|eom|>",
	// "<|start|>assistant to=NAME<|message|><atem:function_calls>…"
	// (muse.go).
	Muse
	// SolarOpen: Upstage Solar Open's <|tool_calls|><|tool_call:begin|>ID
	// <|tool_call:name|>NAME<|tool_call:args|>{…}<|tool_call:end|><|calls|>
	// (solar.go).
	SolarOpen
)

var formatNames = map[Format]string{
	Generic: "generic", Hermes: "hermes", Llama3: "llama3", Mistral: "mistral",
	Functionary: "functionary", FunctionTag: "function-tag", CommandR: "command-r",
	Granite: "granite", DeepSeek: "deepseek", CommandRPlus: "command-r-plus", Harmony: "harmony", Kimi: "kimi", MiniMax: "minimax", Seed: "seed", Apertus: "apertus", LFM2: "lfm2", DSML: "dsml", Gemma4: "gemma4", NemotronV2: "nemotron-v2", Hy3: "hy3", KimiK3: "kimi-k3", ToolCallsTag: "tool-calls-tag", GigaChat: "gigachat", GigaChat31: "gigachat-3.1", FireFunction: "firefunction", MiniCPM5: "minicpm5", MiniMaxM3: "minimax-m3", Muse: "muse", SolarOpen: "solar-open",
}

func (f Format) String() string {
	if s, ok := formatNames[f]; ok {
		return s
	}
	return "unknown"
}

// DetectFormat picks the tool-call format a chat template teaches its
// model, from the markup it mentions; Generic when it mentions none.
func DetectFormat(template string) Format {
	has := func(s string) bool { return strings.Contains(template, s) }
	switch {
	case has(harmonyChannel) && has(harmonyMessage):
		return Harmony
	case has(museCalls) && has("to=self"):
		return Muse
	case has(solarCallBegin) && has(solarName):
		return SolarOpen
	case has(dsml):
		return DSML
	case has(gemma4CallBegin + "call:"):
		return Gemma4
	case has(nemotronCallsBegin):
		return NemotronV2
	case has("<tool_calls{}>") && has("':opensource'"):
		return Hy3
	case has(deepSeekCallsBegin):
		return DeepSeek
	case has(kimiSectionBegin):
		return Kimi
	case has(k3Open) && has(k3Close) && has("<|end_of_msg|>"):
		return KimiK3
	case has(miniMaxCallBegin):
		return MiniMax
	case has(m3NS) && has("<invoke name="):
		return MiniMaxM3
	case has(seedCallBegin):
		return Seed
	case has(apertusCallsBegin):
		return Apertus
	case has(toolCallsTagBegin):
		return ToolCallsTag
	case has(fireFunctionCalls):
		return FireFunction
	case has(miniCPMCallBegin) && has(miniCPMParam):
		return MiniCPM5
	case has(gigaRoleSep) && has(gigaFunctionCall):
		return GigaChat31
	case has(gigaRoleSep) && has(gigaMessageSep) && has("function call"):
		return GigaChat
	case has(lfmCallsBegin), has("List of tools: ["), has("<|tool_list_start|>"):
		return LFM2
	case has("<|tool_call|>"):
		return Granite
	case has("<|START_ACTION|>"):
		return CommandR
	case has("Action:") && has("```json") && has("tool_name"):
		return CommandRPlus
	case has("[TOOL_CALLS]"):
		return Mistral
	case has(">>>all"):
		return Functionary
	case has("<tool_call>"): // Qwen3-Coder's <tool_call><function=…> too
		return Hermes
	case has("<function="):
		return FunctionTag
	case has("<|python_tag|>"), has("<|start_header_id|>ipython"), has("<|start_header_id|>") && has("tools"):
		return Llama3
	}
	return Generic
}

// DeepSeek's tool-call markup.
const (
	deepSeekCallsBegin = "<｜tool▁calls▁begin｜>"
	deepSeekCallsEnd   = "<｜tool▁calls▁end｜>"
	deepSeekCallBegin  = "<｜tool▁call▁begin｜>"
	deepSeekCallEnd    = "<｜tool▁call▁end｜>"
	deepSeekSep        = "<｜tool▁sep｜>"
)

// Kimi K2's tool-call markup.
const (
	kimiSectionBegin = "<|tool_calls_section_begin|>"
	kimiSectionEnd   = "<|tool_calls_section_end|>"
	kimiCallBegin    = "<|tool_call_begin|>"
	kimiArgsBegin    = "<|tool_call_argument_begin|>"
	kimiCallEnd      = "<|tool_call_end|>"
)

// MiniMax M2's and Seed-OSS's call blocks.
const (
	miniMaxCallBegin = "<minimax:tool_call>"
	miniMaxCallEnd   = "</minimax:tool_call>"
	seedCallBegin    = "<seed:tool_call>"
	seedCallEnd      = "</seed:tool_call>"
	// Apertus's calls block: a JSON array of {"NAME": arguments}.
	apertusCallsBegin = "<|tools_prefix|>"
	apertusCallsEnd   = "<|tools_suffix|>"
	// DeepSeek V3.2's DSML tags.
	dsml           = "｜DSML｜"
	dsmlCallsBegin = "<" + dsml + "function_calls>"
	dsmlCallsEnd   = "</" + dsml + "function_calls>"
	// Nemotron Nano 2's calls block: a JSON array of call objects.
	nemotronCallsBegin = "<TOOLCALL>"
	nemotronCallsEnd   = "</TOOLCALL>"
	// Hunyuan 3's tags, each with its ":opensource" suffix (the template
	// builds them with '<tool_calls{}>'.format(':opensource')).
	hy3Suffix     = ":opensource>"
	hy3CallsBegin = "<tool_calls" + hy3Suffix
	hy3CallsEnd   = "</tool_calls" + hy3Suffix
	hy3CallBegin  = "<tool_call" + hy3Suffix
	hy3CallEnd    = "</tool_call" + hy3Suffix
	hy3Sep        = "<tool_sep" + hy3Suffix
	// firefunction v2's call marker (with the list's "[", so that the
	// word in text is no marker).
	fireFunctionCalls = "functools["
	// GigaChat 3's separators and call message.
	gigaRoleSep    = "<|role_sep|>"
	gigaMessageSep = "<|message_sep|>"
	gigaCall       = gigaMessageSep + "\n\nfunction call" + gigaRoleSep + "\n"
	// GigaChat 3.1 starts a call with a token of its own.
	gigaFunctionCall = "<|function_call|>"
	// Apriel's and MiniMax M1's calls block.
	toolCallsTagBegin = "<tool_calls>"
	toolCallsTagEnd   = "</tool_calls>"
	// DeepSeek V4 names the block tool_calls.
	dsmlToolCallsBegin = "<" + dsml + "tool_calls>"
	dsmlToolCallsEnd   = "</" + dsml + "tool_calls>"
)

// ThinkingEnd is the close tag of the first thinking pair a template
// mentions ("" for none).
func ThinkingEnd(template string) string {
	for _, t := range thinkingTags {
		if strings.Contains(template, t[1]) {
			return t[1]
		}
	}
	return ""
}

// OpensThinking tells whether a rendered prompt ends inside a thinking
// block: it ends (but for spaces and newlines) with the open tag of one
// of the thinking pairs the parser knows (DeepSeek R1's and QwQ's
// "<think>", Hunyuan 3's "<think:opensource>", Gemma 4's
// "<|channel>thought", …), so the output starts in the block
// (Options.StartInThinking).
func OpensThinking(prompt string) bool {
	p := strings.TrimRight(prompt, " \n")
	for _, t := range thinkingTags {
		if strings.HasSuffix(p, t[0]) {
			return true
		}
	}
	return false
}

// thinkingTags are the open/close pairs of thinking blocks.
var thinkingTags = [][2]string{
	{"<think>", "</think>"},
	{"[THINK]", "[/THINK]"},
	{"<|START_THINKING|>", "<|END_THINKING|>"},
	{"<thinking>", "</thinking>"},
	{"<seed:think>", "</seed:think>"},
	{"<|inner_prefix|>", "<|inner_suffix|>"},              // Apertus
	{gemma4Channel + "thought", gemma4ChannelEnd},         // Gemma 4
	{"<think" + hy3Suffix, "</think" + hy3Suffix},         // Hunyuan 3
	{k3Open + "think" + k3Sep, k3Close + "think" + k3Sep}, // Kimi K3
	{"<mm:think>", m3ThinkEnd},                            // MiniMax M3
	// Apriel 1.6: no tags; its generation prompt opens the reasoning
	// with this line and the model ends it with the marker.
	{"Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]"},
}

// callMarker is markup that opens a tool call: blocks end at close;
// without close the call runs to the end of the output.
type callMarker struct {
	open, close string
}

// markers are the call markers of each format.
func markers(f Format) []callMarker {
	switch f {
	case Hermes:
		return []callMarker{{"<tool_call>", "</tool_call>"}}
	case Llama3:
		return []callMarker{{"<|python_tag|>", ""}}
	case Mistral:
		return []callMarker{{"[TOOL_CALLS]", ""}}
	case Functionary:
		return []callMarker{{">>>", ""}}
	case FunctionTag:
		return []callMarker{{"<function=", "</function>"}}
	case CommandR:
		return []callMarker{{"<|START_ACTION|>", "<|END_ACTION|>"}}
	case Granite:
		return []callMarker{{"<|tool_call|>", ""}}
	case CommandRPlus:
		return []callMarker{{"Action:", ""}}
	case DeepSeek:
		return []callMarker{{deepSeekCallsBegin, deepSeekCallsEnd}}
	case Kimi:
		return []callMarker{{kimiSectionBegin, kimiSectionEnd}}
	case MiniMax:
		return []callMarker{{miniMaxCallBegin, miniMaxCallEnd}}
	case Seed:
		return []callMarker{{seedCallBegin, seedCallEnd}}
	case Apertus:
		return []callMarker{{apertusCallsBegin, apertusCallsEnd}}
	case LFM2:
		return []callMarker{{lfmCallsBegin, lfmCallsEnd}}
	case DSML:
		return []callMarker{{dsmlCallsBegin, dsmlCallsEnd}, {dsmlToolCallsBegin, dsmlToolCallsEnd}}
	case Gemma4:
		return []callMarker{{gemma4CallBegin, gemma4CallEnd}}
	case NemotronV2:
		return []callMarker{{nemotronCallsBegin, nemotronCallsEnd}}
	case Hy3:
		return []callMarker{{hy3CallsBegin, hy3CallsEnd}}
	case SolarOpen:
		return []callMarker{{solarCallsBegin, solarCallsEnd}}
	case KimiK3:
		return []callMarker{{k3OpenTag("tools"), k3CloseTag("tools")}}
	case ToolCallsTag:
		return []callMarker{{toolCallsTagBegin, toolCallsTagEnd}}
	case GigaChat:
		return []callMarker{{gigaCall, ""}}
	case GigaChat31:
		return []callMarker{{gigaFunctionCall, ""}}
	case FireFunction:
		return []callMarker{{fireFunctionCalls, ""}}
	case MiniCPM5:
		return []callMarker{{miniCPMCallBegin, miniCPMCallEnd}}
	case MiniMaxM3:
		return []callMarker{{m3CallBegin, m3CallEnd}}
	}
	return nil
}

// silentMarkup is markup of format f that holds no text: it is dropped
// from the content (Kimi K3's response section tags).
func silentMarkup(f Format) []string {
	switch f {
	case KimiK3:
		return k3Silent
	case MiniMaxM3:
		return []string{m3ThinkEnd} // the bare close of a turn without reasoning
	case SolarOpen:
		return []string{solarContent}
	}
	return nil
}

// jsonAnswers tells whether an answer that starts with { or [ may be a
// call in format f (models of the formats without markers write bare
// JSON; so does a forced call's grammar for them). Hermes and Command-R
// models mark their calls, and their answers may well be JSON.
func jsonAnswers(f Format) bool {
	return f == Generic || f == Llama3 || f == Mistral || f == FunctionTag || f == DeepSeek || f == Kimi || f == MiniMax || f == Seed || f == Apertus || f == LFM2 || f == DSML || f == Gemma4 || f == Hy3 || f == KimiK3 || f == ToolCallsTag || f == FireFunction || f == MiniCPM5 || f == MiniMaxM3
}

// Markup is the markup the parser reads for o: thinking tags, call
// markers and the tokens inside calls. A model whose vocabulary marks
// one of these CONTROL (Mistral's [TOOL_CALLS], [ARGS], [THINK]) must
// have it written out in the output's text for the parser to see it, as
// llama-server writes a chat format's preserved tokens.
func Markup(o Options) []string {
	var out []string
	if o.Thinking || o.Format == Harmony || o.Format == Muse {
		for _, t := range thinkingTags {
			out = append(out, t[0], t[1])
		}
		out = append(out, gemma4Channel) // Gemma 4's "<|channel>thought": two tokens
	}
	for _, m := range markers(o.Format) {
		out = append(out, m.open)
		if m.close != "" {
			out = append(out, m.close)
		}
	}
	switch o.Format {
	case Mistral:
		out = append(out, "[ARGS]", "[CALL_ID]")
	case DeepSeek:
		out = append(out, deepSeekCallBegin, deepSeekCallEnd, deepSeekSep)
	case Kimi:
		out = append(out, kimiCallBegin, kimiArgsBegin, kimiCallEnd)
	case Gemma4:
		out = append(out, gemma4Quote)
	case KimiK3:
		out = append(out, k3Open, k3Close, k3Sep)
	case MiniMaxM3:
		out = append(out, m3NS, "<tool_call>", "</tool_call>")
	case GigaChat:
		out = append(out, gigaMessageSep+"\n\n", gigaRoleSep+"\n")
	case Hy3:
		out = append(out, hy3CallBegin, hy3CallEnd, hy3Sep, hy3Tags.key, hy3Tags.keyEnd, hy3Tags.value, hy3Tags.valueEnd)
	case Harmony:
		out = append(out, harmonyStart, harmonyChannel, harmonyMessage, harmonyConstrain, harmonyEnd)
	case Muse:
		out = append(out, museStart, museMessage, museEOM, museEOT, museCalls, museCallsEnd)
	case SolarOpen:
		out = append(out, solarCallBegin, solarCallEnd, solarName, solarArgs, solarContent)
	}
	return out
}
