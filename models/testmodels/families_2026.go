package testmodels

import "strings"

// Scripted models of the families of 2026 (issue 35): Gemma 4, DeepSeek
// V4, LFM2 and LFM2.5 8B-A1B, StepFun 3.5 Flash.

// gemma4Specials are Gemma 4's control tokens (llama.cpp preserves the
// channel and call markers, so they print).
var gemma4Specials = []string{"<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>",
	"<|tool>", "<tool|>", "<|tool_response>", "<|think|>"}

// Gemma4 is the scripted Gemma 4 model (google-gemma-4-31B-it.jinja and
// its -interleaved edition, thinking on): after "<|turn>model\n",
//
//	<|channel>thought\nREASONING<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,unit:{…},note:<|"|>…<|"|>}<tool_call|>
//
// (the arguments in the template's own object syntax, strings between
// <|"|> quotes), then <|tool_response> (an end of generation: the
// runtime writes the result there), and after the tool result, which the template writes
// as "<|tool_response>response:get_weather{…}<tool_response|>" with no
// generation prompt after it, the answer and <turn|>. (llama.cpp takes
// </s> off the end-of-generation tokens of a vocabulary with
// <|tool_response>, so the script ends its turns with Gemma's own.)
func Gemma4(tmpl string) FamilyScript {
	const q = `<|"|>`
	turn1 := append([]string{"<|channel>", "thought"}, withNewlines(familyReasoning, "\n", "")...)
	turn1 = append(turn1, "<channel|>", "<|tool_call>", "call:"+FamilyTool+"{city:"+q+"Paris"+q+",", "unit:{scale:"+q+"celsius"+q+",precise:true},",
		"note:"+q+familyNote+q+"}", "<tool_call|>", "<|tool_response>")
	return FamilyScript{
		Name: "Tadpole scripted Gemma 4 test model", Template: tmpl, Specials: gemma4Specials,
		UserTokens: []string{q},
		Trigger:    "<0x0A>", Trigger2: "<tool_response|>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), "<turn|>"),
	}
}

// DeepSeekV4 is the scripted DeepSeek V4 model
// (deepseek-ai-DeepSeek-V4.jinja and V4-Flash-0731, thinking on):
// DeepSeek V3.2's script with the call block named tool_calls, as V4's
// template teaches it:
//
//	REASONING</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">…</｜DSML｜invoke>\n</｜DSML｜tool_calls>
//
// and after the tool result (<tool_result>…, then "<｜Assistant｜><think>"
// again), "</think>" and the answer.
func DeepSeekV4(tmpl string) FamilyScript {
	s := DeepSeekV32(tmpl)
	s.Name = "Tadpole scripted DeepSeek V4 test model"
	s.Turn1 = append([]string(nil), s.Turn1...)
	for i, p := range s.Turn1 {
		s.Turn1[i] = strings.ReplaceAll(p, "function_calls>", "tool_calls>")
	}
	return s
}

// LFM2 is the scripted LFM2 model (LFM2-8B-A1B.jinja: tools between
// <|tool_list_start|> and <|tool_list_end|>, no thinking): after
// "<|im_start|>assistant\n",
//
//	<|tool_call_start|>[get_weather(city="Paris", unit={…}, note="…")]<|tool_call_end|>
//
// and after the tool result (its "sky"), the answer.
func LFM2(tmpl string) FamilyScript {
	s := LFM25(tmpl)
	s.Name = "Tadpole scripted LFM2 test model"
	for i, p := range s.Turn1 {
		if p == "<|tool_call_start|>" {
			s.Turn1 = s.Turn1[i:]
			break
		}
	}
	s.UserTokens = []string{"<|tool_call_start|>", "<|tool_call_end|>", "<|tool_list_start|>", "<|tool_list_end|>"}
	return s
}

// StepFun35 is the scripted StepFun 3.5 Flash model
// (StepFun3.5-Flash.jinja): Qwen 3.5's script, whose prompt also ends
// "<|im_start|>assistant\n<think>\n" and whose calls are Qwen3-Coder's
// XML; the tool result is a "tool_response" turn holding <tool_response>.
func StepFun35(tmpl string) FamilyScript {
	s := Qwen35(tmpl)
	s.Name = "Tadpole scripted StepFun 3.5 Flash test model"
	return s
}

// NemotronNanoV2 is the scripted Nemotron Nano 2 model
// (NVIDIA-Nemotron-Nano-v2.jinja, thinking on): its prompt ends
// "<SPECIAL_11>Assistant\n<think>\n", so it writes
//
//	REASONING\n</think>\n\n<TOOLCALL>[{"name": "get_weather", "arguments": ARGUMENTS}]</TOOLCALL>
//
// and after the tool result (a user turn "<TOOL_RESPONSE>[…]", holding
// its "sky"), "</think>\n\n" and the answer.
func NemotronNanoV2(tmpl string) FamilyScript {
	turn1 := append(withNewlines(familyReasoning, "", "\n"), "</think>", "\n\n", "<TOOLCALL>", `[{"name": "`+FamilyTool+`", "arguments": `)
	turn1 = append(append(turn1, familyArguments...), "}]", "</TOOLCALL>")
	return FamilyScript{
		Name: "Tadpole scripted Nemotron Nano 2 test model", Template: tmpl,
		Specials:   []string{"<SPECIAL_10>", "<SPECIAL_11>", "<SPECIAL_12>"},
		UserTokens: []string{"<think>", "</think>", "<TOOLCALL>", "</TOOLCALL>", "<TOOL_RESPONSE>", "</TOOL_RESPONSE>"},
		Trigger:    "<0x0A>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append([]string{"</think>", "\n\n"}, familyAnswer...),
	}
}

// Hy3 is the scripted Hunyuan 3 model (tencent-Hy3.jinja, its default
// reasoning_effort "no_think"): its prompt ends
// "<｜hy_Assistant:opensource｜><think:opensource></think:opensource>",
// so it writes
//
//	<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n…</tool_call:opensource>\n</tool_calls:opensource>
//
// (no reasoning) and after the tool result (its "sky"), the answer.
func Hy3(tmpl string) FamilyScript {
	const o = ":opensource>"
	arg := func(key, value string) string {
		return "<arg_key" + o + key + "</arg_key" + o + "\n<arg_value" + o + value + "</arg_value" + o + "\n"
	}
	turn1 := []string{"<tool_calls" + o, "\n<tool_call" + o + FamilyTool + "<tool_sep" + o + "\n", arg("city", "Paris"), arg("unit", familyUnitJSON),
		arg("note", familyNote), "</tool_call" + o + "\n", "</tool_calls" + o, "<｜hy_eos" + o[:len(o)-1] + "｜>"}
	return FamilyScript{
		Name: "Tadpole scripted Hunyuan 3 test model", Template: tmpl,
		Specials:   []string{"<｜hy_begin_of_sentence:opensource｜>", "<｜hy_eos:opensource｜>", "<｜hy_User:opensource｜>", "<｜hy_Assistant:opensource｜>"},
		UserTokens: []string{"<think" + o, "<tool_calls" + o, "</tool_calls" + o},
		Trigger:    "</think" + o, ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string(nil), familyAnswer...), "<｜hy_eos:opensource｜>"),
	}
}

// KimiK3 is the scripted Kimi K3 model (Kimi-K3.jinja, thinking off:
// its prompt opens the response section, "<|open|>message
// role="assistant"<|sep|><|open|>response<|sep|>"; <|open|> and
// <|close|> are control tokens, <|sep|> the prompt's last token, as a
// user-defined one): it
// closes the empty response and writes the tools section,
//
//	<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>
//	<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>…<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>
//
// and after the tool result (its "sky"), the answer, then the closes.
func KimiK3(tmpl string) FamilyScript {
	// A tag name and its <|sep|> are one ordinary piece, and so are the
	// closes that end each answer: a piece written twice cannot tell
	// the occurrences of a token apart.
	turn1 := []string{"<|close|>", "response<|sep|>", "<|open|>", "tools<|sep|>", "<|open|>", `call tool="` + FamilyTool + `" index="1"<|sep|>`}
	for _, a := range [][3]string{{"city", "string", "Paris"}, {"unit", "object", familyUnitJSON}, {"note", "string", familyNote}} {
		turn1 = append(turn1, "<|open|>", `argument key="`+a[0]+`" type="`+a[1]+`"<|sep|>`, a[2], "<|close|>", "argument<|sep|>")
	}
	turn1 = append(turn1, "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>")
	turn2 := append(append([]string(nil), familyAnswer...), "<|close|>response<|sep|><|close|>message<|sep|>")
	return FamilyScript{
		Name: "Tadpole scripted Kimi K3 test model", Template: tmpl,
		Specials: []string{"<|open|>", "<|close|>", "<|end_of_msg|>"},
		Trigger:  "<|sep|>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: turn2,
	}
}

// RWKVWorld is the scripted RWKV World model
// (llama-cpp-rwkv-world.jinja, thinking on: the template opens
// "<think>" after "Assistant:" when enable_thinking is true): it writes
//
//	REASONING</think> ANSWER
//
// and nothing else: the template renders no tools and no tool results
// (nor an assistant message without content), so the second request's
// prompt is the first's and so is its answer. ToolResultMarker is text
// its prompts never hold.
func RWKVWorld(tmpl string) FamilyScript {
	turn := append(append(append([]string(nil), familyReasoning...), "</think>", " "), familyAnswer...)
	turn = append(turn, BPEEndOfText)
	return FamilyScript{
		Name: "Tadpole scripted RWKV World test model", Template: tmpl, Specials: []string{BPEEndOfText},
		UserTokens: []string{"<think>", "</think>"},
		Trigger:    "<think>", ToolResultMarker: "sky",
		Turn1: turn, Turn2: append([]string(nil), turn...),
	}
}
