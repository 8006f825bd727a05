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
