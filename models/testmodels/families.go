package testmodels

import "strings"

// The scripted family models' shared script (issue 35): every family's
// model reasons FamilyReasoning, calls FamilyTool with FamilyArguments
// (a nested object, and a string holding quotes and a newline), and
// after the tool result answers FamilyAnswer, each in its family's own
// markup.
const (
	FamilyTool      = "get_weather"
	FamilyReasoning = "The user asks for the weather in Paris. I will call get_weather."
	FamilyArguments = `{"city": "Paris", "unit": {"scale": "celsius", "precise": true}, "note": "say \"hi\"\nbye"}`
	FamilyAnswer    = "The weather in Paris is sunny at 18 degrees C."
)

// The shared script cut into pieces, each written once (see
// FamilyScript).
var (
	familyReasoning = []string{"The user", " asks for", " the weather", " in Paris.", " I will call", " get_weather."}
	familyArguments = []string{`{"city":`, ` "Paris",`, ` "unit":`, ` {"scale":`, ` "celsius",`, ` "precise":`, ` true},`, ` "note":`, ` "say \"hi\"\nbye"}`}
	familyAnswer    = []string{"The weather", " in Paris is", " sunny at", " 18 degrees C."}
)

func init() {
	for _, c := range []struct {
		pieces []string
		whole  string
	}{{familyReasoning, FamilyReasoning}, {familyArguments, FamilyArguments}, {familyAnswer, FamilyAnswer}} {
		if strings.Join(c.pieces, "") != c.whole {
			panic("testmodels: family script pieces do not add up to " + c.whole)
		}
	}
}

// GptOssSpecials are the harmony format's control tokens.
var GptOssSpecials = []string{"<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>"}

// GptOss is the scripted gpt-oss model with template tmpl (llama.cpp's
// models/templates/openai-gpt-oss-120b.jinja): after the prompt's
// "<|start|>assistant" it writes
//
//	<|channel|>analysis<|message|>REASONING<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>ARGUMENTS<|call|>
//
// and after a tool result ("<|start|>functions.get_weather to=assistant…")
//
//	<|channel|>final<|message|>ANSWER<|return|>
func GptOss(tmpl string) FamilyScript {
	turn1 := append([]string{"<|channel|>", "analysis", "<|message|>"}, familyReasoning...)
	turn1 = append(turn1, "<|end|>", "<|start|>", "assistant", "<|channel|>", "commentary", " to=functions."+FamilyTool+" ", "<|constrain|>", "json", "<|message|>")
	turn1 = append(append(turn1, familyArguments...), "<|call|>")
	turn2 := append([]string{"<|channel|>", "final", "<|message|>"}, familyAnswer...)
	return FamilyScript{
		Name:             "Tadpole scripted gpt-oss (harmony) test model",
		Template:         tmpl,
		Specials:         GptOssSpecials,
		Trigger:          "assistant",
		Turn1:            turn1,
		Turn2:            append(turn2, "<|return|>"),
		ToolResultMarker: "to=assistant",
	}
}

// withNewlines is pieces with "\n" before the first and after the last
// (a family that writes its reasoning on lines of its own).
func withNewlines(pieces []string, before, after string) []string {
	out := append([]string(nil), pieces...)
	out[0] = before + out[0]
	out[len(out)-1] += after
	return out
}

// The arguments as XML-style parameters (Qwen3-Coder, Qwen3.5, GLM):
// the nested object as JSON, the string as it is.
const (
	familyUnitJSON = `{"scale": "celsius", "precise": true}`
	familyNote     = "say \"hi\"\nbye"
)

// chatML is the ChatML families' control tokens.
var chatML = []string{ImStartToken, ImEndToken}

// Qwen3 is the scripted Qwen3 model (Qwen-Qwen3-0.6B.jinja): after
// "<|im_start|>assistant\n",
//
//	<think>\nREASONING\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": ARGUMENTS}\n</tool_call>
//
// and after a <tool_response>, the answer.
func Qwen3(tmpl string) FamilyScript {
	turn1 := append([]string{"<think>"}, withNewlines(familyReasoning, "\n", "\n")...)
	turn1 = append(turn1, "</think>", "\n\n", "<tool_call>", "\n{\"name\": \""+FamilyTool+"\", \"arguments\": ")
	turn1 = append(append(turn1, familyArguments...), "}\n", "</tool_call>", ImEndToken)
	return FamilyScript{
		Name: "Tadpole scripted Qwen3 test model", Template: tmpl, Specials: chatML,
		UserTokens: []string{"<think>", "</think>", "<tool_call>", "</tool_call>", "</tool_response>"},
		Trigger:    "<0x0A>", ToolResultMarker: "<tool_response>",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), ImEndToken),
	}
}

// Qwen35 is the scripted Qwen3.5 model (Qwen3.5-4B.jinja, Qwen3-Coder's
// call syntax): its prompt ends "<think>\n", so it writes
//
//	REASONING\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>…</function>\n</tool_call>
//
// and after a <tool_response>, "</think>\n\n" and the answer.
func Qwen35(tmpl string) FamilyScript {
	turn1 := append(withNewlines(familyReasoning, "", "\n"), "</think>", "\n\n", "<tool_call>",
		"\n<function="+FamilyTool+">\n<parameter=city>\nParis\n</parameter>\n<parameter=unit>\n", familyUnitJSON,
		"\n</parameter>\n<parameter=note>\n", familyNote, "\n</parameter>\n</function>\n", "</tool_call>", ImEndToken)
	return FamilyScript{
		Name: "Tadpole scripted Qwen3.5 test model", Template: tmpl, Specials: chatML,
		UserTokens: []string{"<think>", "</think>", "<tool_call>", "</tool_call>", "</tool_response>"},
		Trigger:    "<0x0A>", ToolResultMarker: "<tool_response>",
		Turn1: turn1, Turn2: append(append([]string{"</think>", "\n\n"}, familyAnswer...), ImEndToken),
	}
}

// GLM46 is the scripted GLM-4.6 model (GLM-4.6.jinja): after
// "<|assistant|>",
//
//	\n<think>REASONING</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>…</tool_call>
//
// and after a tool result (<|observation|>), the answer.
func GLM46(tmpl string) FamilyScript {
	turn1 := append([]string{"\n", "<think>"}, familyReasoning...)
	turn1 = append(turn1, "</think>", "\n", "<tool_call>", FamilyTool+"\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>unit</arg_key>\n<arg_value>",
		familyUnitJSON, "</arg_value>\n<arg_key>note</arg_key>\n<arg_value>", familyNote, "</arg_value>\n</tool_call>")
	return FamilyScript{
		Name: "Tadpole scripted GLM-4.6 test model", Template: tmpl,
		Specials:   []string{"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<|endoftext|>"},
		UserTokens: []string{"<think>", "</think>", "<tool_call>"},
		Trigger:    "<|assistant|>", ToolResultMarker: "<|observation|>",
		Turn1: turn1, Turn2: append([]string{"\n"}, familyAnswer...),
	}
}

// Granite4 is the scripted Granite 4.0 model (ibm-granite-granite-4.0.jinja):
// after "<|start_of_role|>assistant<|end_of_role|>",
//
//	<tool_call>\n{"name": "get_weather", "arguments": ARGUMENTS}\n</tool_call><|end_of_text|>
//
// (no reasoning), and after a <tool_response>, the answer.
func Granite4(tmpl string) FamilyScript {
	turn1 := []string{"<tool_call>", "\n{\"name\": \"" + FamilyTool + "\", \"arguments\": "}
	turn1 = append(append(turn1, familyArguments...), "}\n", "</tool_call>", "<|end_of_text|>")
	return FamilyScript{
		Name: "Tadpole scripted Granite 4.0 test model", Template: tmpl,
		Specials:   []string{"<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>"},
		UserTokens: []string{"<tool_call>", "</tool_call>", "</tool_response>"},
		Trigger:    "<|end_of_role|>", ToolResultMarker: "<tool_response>",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), "<|end_of_text|>"),
	}
}

// KimiK2 is the scripted Kimi K2 model (moonshotai-Kimi-K2.jinja): after
// "<|im_assistant|>assistant<|im_middle|>",
//
//	<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>ARGUMENTS<|tool_call_end|><|tool_calls_section_end|><|im_end|>
//
// (no reasoning), and after a tool result ("## Return of"), the answer.
func KimiK2(tmpl string) FamilyScript {
	turn1 := []string{"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "functions." + FamilyTool + ":0", "<|tool_call_argument_begin|>"}
	turn1 = append(append(turn1, familyArguments...), "<|tool_call_end|>", "<|tool_calls_section_end|>", "<|im_end|>")
	return FamilyScript{
		Name: "Tadpole scripted Kimi K2 test model", Template: tmpl,
		Specials:   []string{"<|im_user|>", "<|im_assistant|>", "<|im_system|>", "<|im_middle|>", "<|im_end|>"},
		UserTokens: []string{"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"},
		Trigger:    "<|im_middle|>", ToolResultMarker: "## Return of",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), "<|im_end|>"),
	}
}

// MiniMaxM2 is the scripted MiniMax M2 model (MiniMax-M2.jinja): its
// prompt ends "<think>\n", so it writes
//
//	REASONING\n</think>\n\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>…</invoke>\n</minimax:tool_call>[e~[
//
// and after a tool result (<response>), "</think>\n\n" and the answer.
func MiniMaxM2(tmpl string) FamilyScript {
	turn1 := append(withNewlines(familyReasoning, "", "\n"), "</think>", "\n\n",
		"<minimax:tool_call>\n<invoke name=\""+FamilyTool+"\">\n<parameter name=\"city\">Paris</parameter>\n<parameter name=\"unit\">", familyUnitJSON,
		"</parameter>\n<parameter name=\"note\">", familyNote, "</parameter>\n</invoke>\n</minimax:tool_call>", "[e~[")
	return FamilyScript{
		Name: "Tadpole scripted MiniMax M2 test model", Template: tmpl,
		Specials:   []string{"]~b]", "]~!b[", "[e~["},
		UserTokens: []string{"<think>", "</think>"},
		Trigger:    "<0x0A>", ToolResultMarker: "<response>",
		Turn1: turn1, Turn2: append(append([]string{"</think>", "\n\n"}, familyAnswer...), "[e~["),
	}
}

// SeedOSS is the scripted Seed-OSS model (ByteDance-Seed-OSS.jinja):
// after "<seed:bos>assistant\n",
//
//	<seed:think>REASONING</seed:think>\n<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>…</function>\n</seed:tool_call><seed:eos>
//
// and after a tool result (its "sky"), the answer.
func SeedOSS(tmpl string) FamilyScript {
	turn1 := append([]string{"<seed:think>"}, familyReasoning...)
	turn1 = append(turn1, "</seed:think>", "\n<seed:tool_call>\n<function="+FamilyTool+">\n<parameter=city>Paris</parameter>\n<parameter=unit>", familyUnitJSON,
		"</parameter>\n<parameter=note>", familyNote, "</parameter>\n</function>\n</seed:tool_call>", "<seed:eos>")
	return FamilyScript{
		Name: "Tadpole scripted Seed-OSS test model", Template: tmpl,
		Specials:   []string{"<seed:bos>", "<seed:eos>", "<seed:pad>"},
		UserTokens: []string{"<seed:think>", "</seed:think>"},
		Trigger:    "<0x0A>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), "<seed:eos>"),
	}
}

// GLM47 is the scripted GLM-4.7 model (GLM-4.7-Flash.jinja): its prompt
// ends "<|assistant|><think>", so it writes
//
//	REASONING</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>…</tool_call>
//
// and after a tool result (<|observation|>), "</think>" and the answer.
func GLM47(tmpl string) FamilyScript {
	turn1 := append(append([]string(nil), familyReasoning...), "</think>", "<tool_call>", FamilyTool+"<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>unit</arg_key><arg_value>",
		familyUnitJSON, "</arg_value><arg_key>note</arg_key><arg_value>", familyNote, "</arg_value></tool_call>")
	return FamilyScript{
		Name: "Tadpole scripted GLM-4.7 test model", Template: tmpl,
		Specials:   []string{"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<|endoftext|>"},
		UserTokens: []string{"<think>", "</think>", "<tool_call>"},
		Trigger:    "<think>", ToolResultMarker: "<|observation|>",
		Turn1: turn1, Turn2: append([]string{"</think>"}, familyAnswer...),
	}
}

// Nemotron3 is the scripted Nemotron 3 Nano model
// (NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja, thinking on): Qwen3.5's
// script, whose prompt also ends "<think>\n".
func Nemotron3(tmpl string) FamilyScript {
	s := Qwen35(tmpl)
	s.Name = "Tadpole scripted Nemotron 3 test model"
	return s
}

// DeepSeekV31 is the scripted DeepSeek V3.1 model
// (deepseek-ai-DeepSeek-V3.1.jinja, thinking on): its prompt ends
// "<｜Assistant｜><think>", so it writes
//
//	REASONING</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>ARGUMENTS<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
// and after "<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>" (no generation
// prompt there), the answer.
func DeepSeekV31(tmpl string) FamilyScript {
	turn1 := append(append([]string(nil), familyReasoning...), "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", FamilyTool, "<｜tool▁sep｜>")
	turn1 = append(append(turn1, familyArguments...), "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>")
	return FamilyScript{
		Name: "Tadpole scripted DeepSeek V3.1 test model", Template: tmpl,
		Specials: []string{"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"},
		UserTokens: []string{"<think>", "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
			"<｜tool▁call▁end｜>", "<｜tool▁sep｜>", "<｜tool▁output▁end｜>"},
		Trigger: "<think>", Trigger2: "<｜tool▁output▁end｜>", ToolResultMarker: "<｜tool▁output▁begin｜>",
		Turn1: turn1, Turn2: append([]string(nil), familyAnswer...),
	}
}

// Ministral3 is the scripted Ministral 3 reasoning model
// (mistralai-Ministral-3-14B-Reasoning-2512.jinja; its markup tokens are
// control tokens, as in Mistral's own vocabulary): after "[/INST]",
//
//	[THINK]REASONING[/THINK][TOOL_CALLS]get_weather[ARGS]ARGUMENTS
//
// and after "[TOOL_RESULTS]…[/TOOL_RESULTS]" (no generation prompt), the
// answer.
func Ministral3(tmpl string) FamilyScript {
	turn1 := append([]string{"[THINK]"}, familyReasoning...)
	turn1 = append(append(turn1, "[/THINK]", "[TOOL_CALLS]", FamilyTool, "[ARGS]"), familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted Ministral 3 reasoning test model", Template: tmpl,
		Specials: []string{"[INST]", "[/INST]", "[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]",
			"[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]"},
		Trigger: "[/INST]", Trigger2: "[/TOOL_RESULTS]", ToolResultMarker: "[TOOL_RESULTS]",
		Turn1: turn1, Turn2: append([]string(nil), familyAnswer...),
	}
}

// Qwen3Coder is the scripted Qwen3-Coder model (Qwen3-Coder.jinja, no
// reasoning): after "<|im_start|>assistant\n",
//
//	<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>…</function>\n</tool_call>
//
// and after a <tool_response>, the answer.
func Qwen3Coder(tmpl string) FamilyScript {
	s := Qwen35(tmpl)
	s.Name = "Tadpole scripted Qwen3-Coder test model"
	for i, p := range s.Turn1 {
		if p == "<tool_call>" {
			s.Turn1 = s.Turn1[i:]
			break
		}
	}
	s.Turn2 = append(append([]string(nil), familyAnswer...), ImEndToken)
	return s
}

// Apertus is the scripted Apertus model (Apertus-8B-Instruct.jinja,
// deliberation on): after
// "<|assistant_start|>",
//
//	<|inner_prefix|>REASONING<|inner_suffix|><|tools_prefix|>[{"get_weather": ARGUMENTS}]<|tools_suffix|>
//
// and after a tool result (its "sky"), the answer.
func Apertus(tmpl string) FamilyScript {
	turn1 := append([]string{"<|inner_prefix|>"}, familyReasoning...)
	turn1 = append(append(turn1, "<|inner_suffix|>", "<|tools_prefix|>", `[{"`+FamilyTool+`": `), familyArguments...)
	turn1 = append(turn1, "}]", "<|tools_suffix|>", "<|assistant_end|>")
	return FamilyScript{
		Name: "Tadpole scripted Apertus test model", Template: tmpl,
		Specials: []string{"<|system_start|>", "<|system_end|>", "<|developer_start|>", "<|developer_end|>", "<|user_start|>", "<|user_end|>",
			"<|assistant_start|>", "<|assistant_end|>"},
		UserTokens: []string{"<|inner_prefix|>", "<|inner_suffix|>", "<|tools_prefix|>", "<|tools_suffix|>"},
		Trigger:    "<|assistant_start|>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), "<|assistant_end|>"),
	}
}

// LFM25 is the scripted LFM2.5 model (LFM2.5-Instruct.jinja): after
// "<|im_start|>assistant\n",
//
//	<think>REASONING</think><|tool_call_start|>[get_weather(city="Paris", unit={…}, note="…")]<|tool_call_end|>
//
// (a Python-style call) and after a tool result (its "sky"), the answer.
func LFM25(tmpl string) FamilyScript {
	turn1 := append([]string{"<think>"}, familyReasoning...)
	turn1 = append(turn1, "</think>", "<|tool_call_start|>", `[`+FamilyTool+`(city="Paris", `, `unit={"scale": "celsius", "precise": True}, `,
		`note="say \"hi\"\nbye")]`, "<|tool_call_end|>", ImEndToken)
	return FamilyScript{
		Name: "Tadpole scripted LFM2.5 test model", Template: tmpl, Specials: chatML,
		UserTokens: []string{"<think>", "</think>", "<|tool_call_start|>", "<|tool_call_end|>"},
		Trigger:    "<0x0A>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), ImEndToken),
	}
}

// DeepSeekV32 is the scripted DeepSeek V3.2 model
// (deepseek-ai-DeepSeek-V3.2.jinja, thinking on): its prompt ends
// "<think>" (after "<｜Assistant｜>", and after "</function_results>\n\n"),
// so it writes
//
//	REASONING</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>…
//
// and after a tool result (its "sky"; the tools header shows
// <function_results> already), "</think>" and the answer.
func DeepSeekV32(tmpl string) FamilyScript {
	const d = "｜DSML｜"
	turn1 := append(append([]string(nil), familyReasoning...), "</think>",
		"\n\n<"+d+"function_calls>\n<"+d+"invoke name=\""+FamilyTool+"\">\n<"+d+"parameter name=\"city\" string=\"true\">Paris</"+d+"parameter>\n<"+d+"parameter name=\"unit\" string=\"false\">",
		familyUnitJSON, "</"+d+"parameter>\n<"+d+"parameter name=\"note\" string=\"true\">", familyNote,
		"</"+d+"parameter>\n</"+d+"invoke>\n</"+d+"function_calls>")
	return FamilyScript{
		Name: "Tadpole scripted DeepSeek V3.2 test model", Template: tmpl,
		Specials:   []string{"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"},
		UserTokens: []string{"<think>", "</think>"},
		Trigger:    "<think>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append([]string{"</think>"}, familyAnswer...),
	}
}

// MiniMaxM3 is the scripted MiniMax M3 model (MiniMax-M3.jinja, its
// default adaptive thinking): after "]~b]ai\n",
//
//	<mm:think>REASONING</mm:think>]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]minimax[>[</city>…]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>[e~[
//
// (the nested object as elements, as the template's to_xml writes it)
// and after the tool result (its "sky"), "</mm:think>" and the answer.
func MiniMaxM3(tmpl string) FamilyScript {
	const ns = "]<]minimax[>["
	el := func(k, v string) string { return ns + "<" + k + ">" + v + ns + "</" + k + ">" }
	turn1 := append(append([]string{"<mm:think>"}, familyReasoning...), "</mm:think>",
		ns+"<tool_call>\n"+ns+`<invoke name="`+FamilyTool+`">`+el("city", "Paris")+el("unit", el("scale", "celsius")+el("precise", "true"))+ns+"<note>",
		familyNote, ns+"</note>"+ns+"</invoke>\n"+ns+"</tool_call>", "[e~[")
	return FamilyScript{
		Name: "Tadpole scripted MiniMax M3 test model", Template: tmpl,
		Specials:   []string{"]~b]", "]~!b[", "[e~["},
		UserTokens: []string{"<mm:think>", "</mm:think>"},
		Trigger:    "<0x0A>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string{"</mm:think>"}, familyAnswer...), "[e~["),
	}
}
