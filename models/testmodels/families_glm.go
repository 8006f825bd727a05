package testmodels

// Scripted models of the families whose calls are GLM's
// "<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>…
// </tool_call>" or Hermes's JSON after a thinking block the prompt
// opens (issue 35): Spark 2.5, Laguna, Bielik, Reka Edge.

// glmThinking is a script whose prompt ends "<think>" (after its
// specials), which writes
//
//	REASONING</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>…</tool_call>
//
// (with spaced, a newline before <tool_call>, after the name and after
// each tag pair, and the reasoning on lines of its own) and after the
// tool result (its "sky"), "</think>" and the answer. <tool_call> is a
// token of its own, as in these families' vocabularies, where it wakes
// a lazy grammar.
func glmThinking(tmpl, name string, specials []string, spaced bool) FamilyScript {
	nl := ""
	reasoning := append([]string(nil), familyReasoning...)
	if spaced {
		nl = "\n"
		reasoning = withNewlines(familyReasoning, "\n", "\n")
	}
	turn1 := append(reasoning, "</think>")
	if spaced {
		turn1 = append(turn1, "\n") // (the prompt ends in <think>, not a newline)
	}
	turn1 = append(turn1, "<tool_call>", FamilyTool+nl+"<arg_key>city</arg_key>"+nl+"<arg_value>Paris</arg_value>"+nl+"<arg_key>unit</arg_key>"+nl+"<arg_value>",
		familyUnitJSON, "</arg_value>"+nl+"<arg_key>note</arg_key>"+nl+"<arg_value>", familyNote, "</arg_value>"+nl+"</tool_call>")
	return FamilyScript{
		Name: "Tadpole scripted " + name + " test model", Template: tmpl, Specials: specials,
		UserTokens: []string{"<think>", "</think>", "<tool_call>"},
		Trigger:    "<think>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append([]string{"</think>"}, familyAnswer...),
	}
}

// Spark25 is the scripted Spark 2.5 model (Spark2.5.jinja, thinking
// on): after "<｜start▁of▁sentence｜><|Bot|><think>", GLM's calls
// without newlines (glmThinking).
func Spark25(tmpl string) FamilyScript {
	return glmThinking(tmpl, "Spark 2.5", []string{"<｜start▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<|System|>", "<|User|>", "<|Bot|>", "<|Tool|>"}, false)
}

// LagunaS is the scripted Laguna S 2.1 model (poolside-Laguna-S-2.1.jinja,
// thinking on): after "<assistant><think>", GLM's calls without
// newlines (glmThinking).
func LagunaS(tmpl string) FamilyScript {
	return glmThinking(tmpl, "Laguna S", nil, false)
}

// LagunaXS is the scripted Laguna XS model (poolside-Laguna-XS.2.jinja
// and XS-2.1, thinking on): after "<assistant>\n<think>", the reasoning
// on lines of its own and GLM's calls with a newline after each part
// (glmThinking, spaced).
func LagunaXS(tmpl string) FamilyScript {
	return glmThinking(tmpl, "Laguna XS", nil, true)
}

// Bielik is the scripted Bielik 11B v3 model
// (Bielik-11B-v3.0-Instruct.jinja, thinking on): QwQ's script (its
// prompt ends "<|im_start|>assistant\n<think>\n", Hermes calls), the
// tool result a user turn "<|function_output|>…" holding its "sky".
func Bielik(tmpl string) FamilyScript {
	s := QwQ(tmpl)
	s.Name = "Tadpole scripted Bielik test model"
	s.ToolResultMarker = "sky"
	return s
}

// RekaEdge is the scripted Reka Edge model (Reka-Edge.jinja, thinking
// on): its prompt ends "assistant: <think>\n", then QwQ's script (Hermes
// calls); the tool result is a turn of <tool_response> holding its
// "sky". Its turns end at the model's end of sequence (Reka's <sep> is
// not an end of generation by llama.cpp's names, and llama-server's
// lazy grammar would not let a model write it after a call).
func RekaEdge(tmpl string) FamilyScript {
	s := QwQ(tmpl)
	s.Name = "Tadpole scripted Reka Edge test model"
	s.Specials = []string{"<sep>"}
	s.ToolResultMarker = "sky"
	s.Turn1 = s.Turn1[:len(s.Turn1)-1] // no <|im_end|>
	s.Turn2 = s.Turn2[:len(s.Turn2)-1]
	return s
}

// Ling3 is the scripted Ling 3.0 model (inclusionai-ling-3.0-flash.jinja,
// thinking on): its prompt ends "<role>ASSISTANT</role>\n<think>", so it
// writes
//
//	REASONING</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>…\n</tool_call>
//
// and after the tool result (an OBSERVATION turn holding its "sky"),
// "</think>" and the answer.
func Ling3(tmpl string) FamilyScript {
	arg := func(k, v string) string { return "<arg_key>" + k + "</arg_key>\n<arg_value>" + v + "</arg_value>" }
	turn1 := append(append([]string(nil), familyReasoning...), "</think>", "\n", "<tool_call>", FamilyTool+"\n"+arg("city", "Paris"),
		arg("unit", familyUnitJSON), arg("note", familyNote)+"\n</tool_call>")
	return FamilyScript{
		Name: "Tadpole scripted Ling 3.0 test model", Template: tmpl,
		UserTokens: []string{"<think>", "</think>", "<tool_call>"},
		Trigger:    "<think>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append([]string{"</think>"}, familyAnswer...),
	}
}

// MiniCPM5 is the scripted MiniCPM5 model (openbmb-MiniCPM5-1B.jinja,
// thinking on): its prompt ends "<|im_start|>assistant\n<think>\n", so
// it writes
//
//	REASONING\n</think>\n\n<function name="get_weather"><param name="city">Paris</param><param name="unit">{…}</param><param name="note"><![CDATA[say "hi"\nbye]]></param></function><|im_end|>
//
// (a string with a newline in CDATA, as the template writes one) and
// after the tool result (its "sky"), "</think>\n\n" and the answer.
func MiniCPM5(tmpl string) FamilyScript {
	turn1 := append(withNewlines(familyReasoning, "", "\n"), "</think>", "\n\n", `<function name="`+FamilyTool+`"><param name="city">Paris</param><param name="unit">`,
		familyUnitJSON, `</param><param name="note"><![CDATA[`+familyNote+`]]></param></function>`, ImEndToken)
	return FamilyScript{
		Name: "Tadpole scripted MiniCPM5 test model", Template: tmpl, Specials: chatML,
		UserTokens: []string{"<think>", "</think>"},
		Trigger:    "<0x0A>", ToolResultMarker: "sky",
		Turn1: turn1, Turn2: append(append([]string{"</think>", "\n\n"}, familyAnswer...), ImEndToken),
	}
}
