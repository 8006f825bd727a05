package testmodels

// Scripted models of the families whose calls are JSON objects (issue
// 35): Hermes and Qwen 2.5 "<tool_call>{…}</tool_call>", QwQ (the same
// after a thinking block the prompt opens), SmolLM3, Llama 3.x's bare
// {"name", "parameters"} object and Mistral's [TOOL_CALLS] forms.

// hermesCall is the Hermes call of the shared script, as Qwen 2.5 and
// Hermes 2 Pro write it: "<tool_call>\n{"name": …, "arguments": …}\n</tool_call>".
func hermesCall() []string {
	out := []string{"<tool_call>", "\n{\"name\": \"" + FamilyTool + "\", \"arguments\": "}
	return append(append(out, familyArguments...), "}\n", "</tool_call>")
}

// hermesUserTokens are the Hermes families' added tokens that print.
var hermesUserTokens = []string{"<tool_call>", "</tool_call>", "</tool_response>"}

// Hermes is the scripted Hermes 2 Pro / Hermes 3 / Qwen 2.5 model
// (NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja,
// NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja,
// Qwen-Qwen2.5-7B-Instruct.jinja; no reasoning): after
// "<|im_start|>assistant\n",
//
//	<tool_call>\n{"name": "get_weather", "arguments": ARGUMENTS}\n</tool_call><|im_end|>
//
// and after a <tool_response> (the tool role's turn), the answer.
func Hermes(tmpl string) FamilyScript {
	return FamilyScript{
		Name: "Tadpole scripted Hermes test model", Template: tmpl, Specials: chatML,
		UserTokens: hermesUserTokens,
		Trigger:    "<0x0A>", ToolResultMarker: "<tool_response>",
		Turn1: append(hermesCall(), ImEndToken), Turn2: append(append([]string(nil), familyAnswer...), ImEndToken),
	}
}

// QwQ is the scripted QwQ-32B model (Qwen-QwQ-32B.jinja, thinking on):
// its prompt ends "<|im_start|>assistant\n<think>\n", so it writes
//
//	REASONING\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": ARGUMENTS}\n</tool_call><|im_end|>
//
// and after a <tool_response>, "</think>\n\n" and the answer.
func QwQ(tmpl string) FamilyScript {
	turn1 := append(withNewlines(familyReasoning, "", "\n"), "</think>", "\n\n")
	turn1 = append(append(turn1, hermesCall()...), ImEndToken)
	return FamilyScript{
		Name: "Tadpole scripted QwQ test model", Template: tmpl, Specials: chatML,
		UserTokens: append([]string{"<think>", "</think>"}, hermesUserTokens...),
		Trigger:    "<0x0A>", ToolResultMarker: "<tool_response>",
		Turn1: turn1, Turn2: append(append([]string{"</think>", "\n\n"}, familyAnswer...), ImEndToken),
	}
}

// SmolLM3 is the scripted SmolLM3 model (HuggingFaceTB-SmolLM3-3B.jinja,
// thinking on): after "<|im_start|>assistant\n",
//
//	<think>\nREASONING\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": ARGUMENTS}\n</tool_call><|im_end|>
//
// and after the tool result (a user turn holding its "sky"), the answer.
// The template shows neither the tools nor a call's markup.
func SmolLM3(tmpl string) FamilyScript {
	turn1 := append([]string{"<think>"}, withNewlines(familyReasoning, "\n", "\n")...)
	// (No piece is a lone "\n": that would be the prompt's last token.)
	turn1 = append(append(append(turn1, "</think>", "\n\n"), hermesCall()...), ImEndToken)
	return FamilyScript{
		Name: "Tadpole scripted SmolLM3 test model", Template: tmpl, Specials: chatML,
		UserTokens: append([]string{"<think>", "</think>"}, hermesUserTokens...),
		Trigger:    "<0x0A>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), ImEndToken),
	}
}

// llama3Specials are Llama 3.x's control tokens.
var llama3Specials = []string{"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"}

// Llama3 is the scripted Llama 3.1 / 3.2 / 3.3 model
// (meta-llama-Llama-3.1-8B-Instruct.jinja and its 3.2 and 3.3 kin; no
// reasoning): after "<|start_header_id|>assistant<|end_header_id|>\n\n",
//
//	{"name": "get_weather", "parameters": ARGUMENTS}<|eot_id|>
//
// and after the tool result (the ipython role's turn, holding its
// "sky"), the answer.
func Llama3(tmpl string) FamilyScript {
	turn1 := append([]string{`{"name": "` + FamilyTool + `", "parameters": `}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted Llama 3 test model", Template: tmpl, Specials: llama3Specials,
		Trigger: "\n\n", ToolResultMarker: "sky",
		Turn1: append(turn1, "}", "<|eot_id|>"), Turn2: append(append([]string(nil), familyAnswer...), "<|eot_id|>"),
	}
}

// FunctionaryV31 is the scripted functionary v3.1 model
// (meetkai-functionary-medium-v3.1.jinja, Llama 3.1's tokens; no
// reasoning): after "<|start_header_id|>assistant<|end_header_id|>\n\n",
//
//	<function=get_weather>ARGUMENTS</function><|eom_id|>
//
// and after the tool result (its "sky"), the answer.
func FunctionaryV31(tmpl string) FamilyScript {
	turn1 := append([]string{"<function=" + FamilyTool + ">"}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted functionary v3.1 test model", Template: tmpl, Specials: llama3Specials,
		Trigger: "\n\n", ToolResultMarker: "sky",
		Turn1: append(turn1, "</function>", "<|eom_id|>"), Turn2: append(append([]string(nil), familyAnswer...), "<|eot_id|>"),
	}
}

// mistralSpecials are the control tokens of Mistral's v3 (Nemo) and v7+
// (Small 3.2, Devstral) vocabularies the templates use.
var mistralSpecials = []string{"[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]",
	"[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[CALL_ID]", "[ARGS]", "[TOOL_CONTENT]"}

// MistralCallID is the call id the Mistral templates need (nine
// alphanumerics): the scripted Mistral Nemo model writes it in its call,
// and the conversation's second request names it.
const MistralCallID = "abcdef123"

// MistralNemo is the scripted Mistral Nemo model
// (mistralai-Mistral-Nemo-Instruct-2407.jinja; no reasoning): after
// "[/INST]",
//
//	[TOOL_CALLS][{"name": "get_weather", "arguments": ARGUMENTS, "id": "abcdef123"}]
//
// and after "[TOOL_RESULTS]…[/TOOL_RESULTS]" (no generation prompt), the
// answer.
func MistralNemo(tmpl string) FamilyScript {
	turn1 := append([]string{"[TOOL_CALLS]", `[{"name": "` + FamilyTool + `", "arguments": `}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted Mistral Nemo test model", Template: tmpl, Specials: mistralSpecials,
		Trigger: "[/INST]", Trigger2: "[/TOOL_RESULTS]", ToolResultMarker: "[TOOL_RESULTS]",
		Turn1: append(turn1, `, "id": "`+MistralCallID+`"}]`), Turn2: append([]string(nil), familyAnswer...),
	}
}

// MistralSmall32 is the scripted Mistral Small 3.2 model
// (Mistral-Small-3.2-24B-Instruct-2506.jinja; no reasoning): after
// "[/INST]", the call as the template writes one,
//
//	[TOOL_CALLS]get_weather[CALL_ID]abcdef123[ARGS]ARGUMENTS
//
// and after "[TOOL_RESULTS]…[/TOOL_RESULTS]" (no generation prompt), the
// answer.
func MistralSmall32(tmpl string) FamilyScript {
	s := Devstral(tmpl)
	s.Name = "Tadpole scripted Mistral Small 3.2 test model"
	s.Turn1 = append([]string{"[TOOL_CALLS]", FamilyTool, "[CALL_ID]", MistralCallID}, s.Turn1[2:]...)
	return s
}

// Devstral is the scripted Devstral Small model
// (unsloth-mistral-Devstral-Small-2507.jinja; no reasoning): after
// "[/INST]",
//
//	[TOOL_CALLS]get_weather[ARGS]ARGUMENTS
//
// and after "[TOOL_RESULTS]…[/TOOL_RESULTS]" (no generation prompt), the
// answer.
func Devstral(tmpl string) FamilyScript {
	turn1 := append([]string{"[TOOL_CALLS]", FamilyTool, "[ARGS]"}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted Devstral test model", Template: tmpl, Specials: mistralSpecials,
		Trigger: "[/INST]", Trigger2: "[/TOOL_RESULTS]", ToolResultMarker: "[TOOL_RESULTS]",
		Turn1: turn1, Turn2: append([]string(nil), familyAnswer...),
	}
}

// CommandR7B is the scripted Command R7B model
// (CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja, thinking on;
// its markup tokens are control tokens, as in Cohere's vocabulary):
// after "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
//
//	<|START_THINKING|>REASONING<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": ARGUMENTS}\n]<|END_ACTION|>
//
// and after the tool result (its "sky"),
// "<|START_RESPONSE|>ANSWER<|END_RESPONSE|>".
func CommandR7B(tmpl string) FamilyScript {
	turn1 := append([]string{"<|START_THINKING|>"}, familyReasoning...)
	turn1 = append(turn1, "<|END_THINKING|>", "<|START_ACTION|>", "[\n    {\"tool_call_id\": \"0\", \"tool_name\": \""+FamilyTool+"\", \"parameters\": ")
	turn1 = append(append(turn1, familyArguments...), "}\n]", "<|END_ACTION|>")
	return FamilyScript{
		Name: "Tadpole scripted Command R7B test model", Template: tmpl,
		Specials: []string{"<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<|SYSTEM_TOKEN|>", "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>",
			"<|START_THINKING|>", "<|END_THINKING|>", "<|START_ACTION|>", "<|END_ACTION|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>",
			"<|START_TOOL_RESULT|>", "<|END_TOOL_RESULT|>"},
		Trigger: "<|CHATBOT_TOKEN|>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string{"<|START_RESPONSE|>"}, familyAnswer...), "<|END_RESPONSE|>"),
	}
}

// FunctionaryV32 is the scripted functionary v3.2 model
// (meetkai-functionary-medium-v3.2.jinja; no reasoning): its prompt ends
// "<|start_header_id|>assistant<|end_header_id|>\n\n>>>", so it writes
//
//	get_weather\nARGUMENTS<|eot_id|>
//
// and after the tool result (its "sky"), "all\n" and the answer.
func FunctionaryV32(tmpl string) FamilyScript {
	turn1 := append([]string{FamilyTool + "\n"}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted functionary v3.2 test model", Template: tmpl, Specials: llama3Specials,
		Trigger: ">>>", ToolResultMarker: "sky",
		Turn1: append(turn1, "<|eot_id|>"), Turn2: append(append([]string{"all\n"}, familyAnswer...), "<|eot_id|>"),
	}
}

// deepSeekSpecials are DeepSeek R1's and V3's control tokens.
var deepSeekSpecials = []string{"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"}

// DeepSeekR1Distill is the scripted DeepSeek R1 distill model
// (deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja): its prompt ends
// "<｜Assistant｜><think>\n", so it writes
//
//	REASONING\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\nARGUMENTS\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>
//
// and after "<｜tool▁outputs▁end｜>" (no generation prompt there), the
// answer.
func DeepSeekR1Distill(tmpl string) FamilyScript {
	turn1 := append(withNewlines(familyReasoning, "", "\n"), "</think>", "\n\n", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "function",
		"<｜tool▁sep｜>", FamilyTool+"\n```json\n")
	turn1 = append(append(turn1, familyArguments...), "\n```", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "<｜end▁of▁sentence｜>")
	return FamilyScript{
		Name: "Tadpole scripted DeepSeek R1 distill test model", Template: tmpl, Specials: deepSeekSpecials,
		UserTokens: []string{"<think>", "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
			"<｜tool▁call▁end｜>", "<｜tool▁sep｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>"},
		Trigger: "<0x0A>", Trigger2: "<｜tool▁outputs▁end｜>", ToolResultMarker: "<｜tool▁outputs▁begin｜>",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), "<｜end▁of▁sentence｜>"),
	}
}

// KimiK2Thinking is the scripted Kimi K2 Thinking model
// (Kimi-K2-Thinking.jinja): after "<|im_assistant|>assistant<|im_middle|>",
//
//	<think>REASONING</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>ARGUMENTS<|tool_call_end|><|tool_calls_section_end|><|im_end|>
//
// and after a tool result ("## Return of"), the answer.
func KimiK2Thinking(tmpl string) FamilyScript {
	s := KimiK2(tmpl)
	s.Name = "Tadpole scripted Kimi K2 Thinking test model"
	s.UserTokens = append([]string{"<think>", "</think>"}, s.UserTokens...)
	s.Turn1 = append(append(append([]string{"<think>"}, familyReasoning...), "</think>"), s.Turn1...)
	return s
}

// Granite33 is the scripted Granite 3.3 model
// (ibm-granite-granite-3.3-2B-Instruct.jinja; no reasoning): after
// "<|start_of_role|>assistant<|end_of_role|>",
//
//	<|tool_call|>[{"name": "get_weather", "arguments": ARGUMENTS}]<|end_of_text|>
//
// and after the tool result (its "sky"), the answer.
func Granite33(tmpl string) FamilyScript {
	turn1 := append([]string{"<|tool_call|>", `[{"name": "` + FamilyTool + `", "arguments": `}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted Granite 3.3 test model", Template: tmpl,
		Specials:   []string{"<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>", "<|tool_call|>"},
		UserTokens: []string{"<think>", "</think>", "<response>", "</response>"},
		Trigger:    "<|end_of_role|>", ToolResultMarker: "sky",
		Turn1: append(turn1, "}]", "<|end_of_text|>"), Turn2: append(append([]string(nil), familyAnswer...), "<|end_of_text|>"),
	}
}

// Apriel15 is the scripted Apriel 1.5 model (unsloth-Apriel-1.5.jinja;
// no reasoning): after "<|assistant|>\n",
//
//	<tool_calls>[{"name": "get_weather", "arguments": ARGUMENTS}]</tool_calls><|end|>
//
// and after the tool result (a <|tool_result|> turn holding its "sky"),
// the answer.
func Apriel15(tmpl string) FamilyScript {
	turn1 := append([]string{"<tool_calls>", `[{"name": "` + FamilyTool + `", "arguments": `}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted Apriel 1.5 test model", Template: tmpl,
		Specials:   []string{"<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|tool_result|>", "<|content|>"},
		UserTokens: []string{"<tool_calls>", "</tool_calls>"},
		Trigger:    "<0x0A>", ToolResultMarker: "sky",
		Turn1: append(turn1, "}]", "</tool_calls>", "<|end|>"), Turn2: append(append([]string(nil), familyAnswer...), "<|end|>"),
	}
}

// Apriel16 is the scripted Apriel 1.6 Thinker model
// (Apriel-1.6-15b-Thinker-fixed.jinja): its prompt ends
// "<|begin_assistant|>\nHere are my reasoning steps:\n", so it writes
//
//	REASONING\n[BEGIN FINAL RESPONSE]\n<tool_calls>[{"name": "get_weather", "arguments": ARGUMENTS}]</tool_calls><|end|>
//
// and after the tool result (a <|begin_tool_result|> turn holding its
// "sky"), "[BEGIN FINAL RESPONSE]\n" and the answer.
func Apriel16(tmpl string) FamilyScript {
	turn1 := append(append([]string(nil), familyReasoning...), "\n[BEGIN FINAL RESPONSE]\n", "<tool_calls>",
		`[{"name": "`+FamilyTool+`", "arguments": `)
	turn1 = append(append(turn1, familyArguments...), "}]", "</tool_calls>", "<|end|>")
	return FamilyScript{
		Name: "Tadpole scripted Apriel 1.6 test model", Template: tmpl,
		Specials:   []string{"<|begin_system|>", "<|begin_user|>", "<|begin_assistant|>", "<|end|>", "<|begin_tool_result|>", "<|begin_content|>"},
		UserTokens: []string{"<tool_calls>", "</tool_calls>"},
		Trigger:    "<0x0A>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string{"[BEGIN FINAL RESPONSE]\n"}, familyAnswer...), "<|end|>"),
	}
}

// Muse is the scripted Muse Glimmer model (muse-glimmer.jinja, its ATEM
// messages): after "<|start|>assistant",
//
//	 to=self<|message|>REASONING<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls>
//	<atem:invoke name="get_weather">
//	<atem:parameter name="city">Paris</atem:parameter>…</atem:invoke>
//	</atem:function_calls><|eot|>
//
// and after the tool result (a "<|start|>tool get_weather" message
// holding its "sky"), " to=user<|message|>" and the answer.
func Muse(tmpl string) FamilyScript {
	turn1 := append([]string{" to=self", "<|message|>"}, familyReasoning...)
	turn1 = append(turn1, "<|eom|>", "<|start|>", "assistant to="+FamilyTool, "<|message|>", "<atem:function_calls>",
		"\n<atem:invoke name=\""+FamilyTool+"\">\n", `<atem:parameter name="city">Paris</atem:parameter>`+"\n",
		`<atem:parameter name="unit">`+familyUnitJSON+`</atem:parameter>`+"\n",
		`<atem:parameter name="note">`+familyNote+`</atem:parameter>`+"\n", "</atem:invoke>\n", "</atem:function_calls>", "<|eot|>")
	return FamilyScript{
		Name: "Tadpole scripted Muse Glimmer test model", Template: tmpl,
		Specials:   []string{"<|start|>", "<|message|>", "<|eom|>", "<|eot|>"},
		UserTokens: []string{"<atem:function_calls>", "</atem:function_calls>"},
		Trigger:    "assistant", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string{" to=user", "<|message|>"}, familyAnswer...), "<|eot|>"),
	}
}

// SolarOpen is the scripted Upstage Solar Open model
// (upstage-Solar-Open-100B.jinja; its <|end|> is an end of generation by
// llama.cpp's names, so the script writes no reasoning): after
// "<|begin|>assistant",
//
//	<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>ARGUMENTS<|tool_call:end|><|calls|>
//
// and after the tool result (a <|tool_response:result|> holding its
// "sky"), "<|content|>", the answer and <|end|>.
func SolarOpen(tmpl string) FamilyScript {
	turn1 := append([]string{"<|tool_calls|>", "<|tool_call:begin|>", "a1b2c3d4e5", "<|tool_call:name|>", FamilyTool, "<|tool_call:args|>"}, familyArguments...)
	turn1 = append(turn1, "<|tool_call:end|>", "<|calls|>")
	return FamilyScript{
		Name: "Tadpole scripted Solar Open test model", Template: tmpl,
		Specials: []string{"<|begin|>", "<|end|>", "<|content|>", "<|think|>", "<|tool_response|>", "<|tool_response:begin|>",
			"<|tool_response:name|>", "<|tool_response:result|>", "<|tool_response:end|>"},
		UserTokens: []string{"<|tool_calls|>", "<|calls|>", "<|tool_call:begin|>", "<|tool_call:name|>", "<|tool_call:args|>", "<|tool_call:end|>"},
		Trigger:    "assistant", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string{"<|content|>"}, familyAnswer...), "<|end|>"),
	}
}

// MiniMaxM1 is the scripted MiniMax M1 model (MiniMax-M1.jinja; no
// reasoning): after "<beginning_of_sentence>ai name=assistant\n",
//
//	<tool_calls>\n{"name": "get_weather", "arguments": ARGUMENTS}\n</tool_calls>
//
// (a call object a line) and after the tool result ("tool result: …",
// holding its "sky"), the answer.
func MiniMaxM1(tmpl string) FamilyScript {
	turn1 := append([]string{"<tool_calls>", "\n{\"name\": \"" + FamilyTool + "\", \"arguments\": "}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted MiniMax M1 test model", Template: tmpl,
		Specials:   []string{"<beginning_of_sentence>", "<end_of_sentence>"},
		UserTokens: []string{"<tool_calls>", "</tool_calls>"},
		Trigger:    "<0x0A>", ToolResultMarker: "sky",
		Turn1: append(turn1, "}\n", "</tool_calls>"), Turn2: append([]string(nil), familyAnswer...),
	}
}

// CommandRPlus is the scripted Command R+ model
// (CohereForAI-c4ai-command-r-plus-tool_use.jinja; no reasoning): after
// "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", the call as the template
// writes one,
//
//	Action:\n```json\n[\n    {\n        "tool_name": "get_weather",\n        "parameters": ARGUMENTS\n    }\n]```
//
// and after the tool result (<results> holding its "sky"), the answer.
func CommandRPlus(tmpl string) FamilyScript {
	turn1 := append([]string{"Action:\n```json\n[\n    {\n        \"tool_name\": \"" + FamilyTool + "\",\n        \"parameters\": "}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted Command R+ test model", Template: tmpl,
		Specials: []string{"<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<|SYSTEM_TOKEN|>", "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>"},
		Trigger:  "<|CHATBOT_TOKEN|>", ToolResultMarker: "sky",
		Turn1: append(turn1, "\n    }\n]```"), Turn2: append([]string(nil), familyAnswer...),
	}
}

// GigaChat3 is the scripted GigaChat 3 model (GigaChat3-10B-A1.8B.jinja
// and 3.1; no reasoning): its separators are tokens holding their
// newlines ("<|role_sep|>\n", "<|message_sep|>\n\n"), and after
// "assistant<|role_sep|>\n" it writes the call message,
//
//	<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", "arguments": ARGUMENTS}
//
// and after the tool result (a "function result" message holding its
// "sky"), the answer.
func GigaChat3(tmpl string) FamilyScript {
	turn1 := append([]string{"<|message_sep|>\n\n", "function call", "<|role_sep|>\n", `{"name": "` + FamilyTool + `", "arguments": `}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted GigaChat 3 test model", Template: tmpl,
		Specials: []string{"<|message_sep|>\n\n"},
		Trigger:  "<|role_sep|>\n", ToolResultMarker: "sky",
		Turn1: append(turn1, "}"), Turn2: append([]string(nil), familyAnswer...),
	}
}

// GigaChat31 is the scripted GigaChat 3.1 model
// (GigaChat3.1-10B-A1.8B.jinja; no reasoning): after
// "assistant<|role_sep|>\n",
//
//	<|function_call|>{"name": "get_weather", "arguments": ARGUMENTS}
//
// and after the tool result (its "sky"), the answer.
func GigaChat31(tmpl string) FamilyScript {
	s := GigaChat3(tmpl)
	s.Name = "Tadpole scripted GigaChat 3.1 test model"
	s.Specials = []string{"<|message_sep|>\n\n", "<|function_call|>"}
	s.Turn1 = append([]string{"<|function_call|>"}, s.Turn1[3:]...)
	return s
}

// DeepSeekR1LlamaCpp is the scripted model of llama.cpp's own DeepSeek
// R1 template (llama-cpp-deepseek-r1.jinja): the R1 distill's call
// after "<｜Assistant｜><think>\n"; the prompt after the tool result
// closes the outputs section and opens a thinking block again, so the
// answer comes after "</think>\n\n".
func DeepSeekR1LlamaCpp(tmpl string) FamilyScript {
	s := DeepSeekR1Distill(tmpl)
	s.Name = "Tadpole scripted DeepSeek R1 (llama.cpp template) test model"
	s.Trigger2 = ""
	s.Turn2 = append(append([]string{"</think>", "\n\n"}, familyAnswer...), "<｜end▁of▁sentence｜>")
	return s
}

// FireFunctionV2 is the scripted firefunction v2 model
// (fireworks-ai-llama-3-firefunction-v2.jinja, Llama 3's tokens; no
// reasoning): after "<|start_header_id|>assistant<|end_header_id|>\n\n",
// a space and
//
//	functools[{"name": "get_weather", "arguments": ARGUMENTS}]<|eot_id|>
//
// and after the tool result (a tool turn holding its "sky"), the answer.
func FireFunctionV2(tmpl string) FamilyScript {
	turn1 := append([]string{` functools[{"name": "` + FamilyTool + `", "arguments": `}, familyArguments...)
	return FamilyScript{
		Name: "Tadpole scripted firefunction v2 test model", Template: tmpl, Specials: llama3Specials,
		Trigger: "\n\n", ToolResultMarker: "sky",
		Turn1: append(turn1, "}]", "<|eot_id|>"), Turn2: append(append([]string(nil), familyAnswer...), "<|eot_id|>"),
	}
}

// Cohere2MoE is the scripted Cohere2 MoE model (Cohere2MoE.jinja,
// reasoning on, its default; markup tokens are control tokens): its
// prompt ends "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>",
// so it writes
//
//	REASONING<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": ARGUMENTS}\n]<|END_ACTION|>
//
// and after the tool result (its "sky"),
// "<|END_THINKING|><|START_TEXT|>ANSWER<|END_TEXT|>".
func Cohere2MoE(tmpl string) FamilyScript {
	turn1 := append(append([]string(nil), familyReasoning...), "<|END_THINKING|>", "<|START_ACTION|>",
		"[\n    {\"tool_call_id\": \"0\", \"tool_name\": \""+FamilyTool+"\", \"parameters\": ")
	turn1 = append(append(turn1, familyArguments...), "}\n]", "<|END_ACTION|>")
	return FamilyScript{
		Name: "Tadpole scripted Cohere2 MoE test model", Template: tmpl,
		Specials: []string{"<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<|SYSTEM_TOKEN|>", "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>",
			"<|END_THINKING|>", "<|START_ACTION|>", "<|END_ACTION|>", "<|START_TEXT|>", "<|END_TEXT|>",
			"<|START_TOOL_RESULT|>", "<|END_TOOL_RESULT|>"},
		Trigger: "<|START_THINKING|>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string{"<|END_THINKING|>", "<|START_TEXT|>"}, familyAnswer...), "<|END_TEXT|>"),
	}
}
