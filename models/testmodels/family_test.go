package testmodels

import (
	"strings"
	"testing"
)

// A family script's repeated tokens are told apart by a piece written
// once between them (gpt-oss: <|channel|> and <|message|> each three
// ways, so two heads each), and a script with no such piece is refused.
func TestFamilyScriptModel(t *testing.T) {
	kvs, _, err := FamilyScriptModel(GptOss("{{ messages }}"))
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{}
	for _, kv := range kvs {
		meta[kv.Key] = kv.Value
	}
	if meta["llama.attention.head_count"] != uint32(4) || meta["tokenizer.ggml.add_space_prefix"] != false {
		t.Errorf("heads %v, space prefix %v", meta["llama.attention.head_count"], meta["tokenizer.ggml.add_space_prefix"])
	}
	bad := FamilyScript{Template: "x", Specials: []string{"<a>", "<b>"}, Trigger: "go", ToolResultMarker: "tool",
		Turn1: []string{"<a>", "<a>", "<b>"}, Turn2: []string{"done"}}
	if _, _, err := FamilyScriptModel(bad); err == nil || !strings.Contains(err.Error(), "tell them apart") {
		t.Errorf("ambiguous script: %v", err)
	}
	bad.Turn1 = []string{"<a>", "x", "<a>", "<b>"}
	if _, _, err := FamilyScriptModel(bad); err != nil {
		t.Errorf("script with a piece between the two <a>: %v", err)
	}
	if _, _, err := FamilyScriptModel(FamilyScript{Template: "x"}); err == nil {
		t.Error("empty script accepted")
	}
}

// Every family's script builds, and none whose prompt ends in a newline
// byte writes a lone "\n" piece (that ordinary token would take the
// prompt's last newline, and the model would start past its trigger).
func TestFamilyScriptsBuild(t *testing.T) {
	for name, f := range map[string]func(string) FamilyScript{
		"GptOss": GptOss, "Qwen3": Qwen3, "Qwen35": Qwen35, "Qwen3Coder": Qwen3Coder, "GLM46": GLM46, "GLM47": GLM47,
		"Granite4": Granite4, "KimiK2": KimiK2, "MiniMaxM2": MiniMaxM2, "SeedOSS": SeedOSS, "Nemotron3": Nemotron3,
		"DeepSeekV31": DeepSeekV31, "DeepSeekV32": DeepSeekV32, "Ministral3": Ministral3, "Apertus": Apertus, "LFM25": LFM25,
		"Hermes": Hermes, "QwQ": QwQ, "SmolLM3": SmolLM3, "Llama3": Llama3, "FunctionaryV31": FunctionaryV31,
		"FunctionaryV32": FunctionaryV32, "MistralNemo": MistralNemo, "MistralSmall32": MistralSmall32, "Devstral": Devstral, "CommandR7B": CommandR7B,
		"DeepSeekR1Distill": DeepSeekR1Distill, "KimiK2Thinking": KimiK2Thinking, "Granite33": Granite33,
		"Gemma4": Gemma4, "DeepSeekV4": DeepSeekV4, "LFM2": LFM2, "StepFun35": StepFun35, "NemotronNanoV2": NemotronNanoV2, "Hy3": Hy3, "KimiK3": KimiK3,
		"Spark25": Spark25, "LagunaS": LagunaS, "LagunaXS": LagunaXS, "Bielik": Bielik, "RekaEdge": RekaEdge, "Apriel15": Apriel15, "Apriel16": Apriel16, "Muse": Muse, "SolarOpen": SolarOpen, "MiniMaxM1": MiniMaxM1, "CommandRPlus": CommandRPlus, "GigaChat3": GigaChat3, "GigaChat31": GigaChat31, "DeepSeekR1LlamaCpp": DeepSeekR1LlamaCpp, "FireFunctionV2": FireFunctionV2, "Cohere2MoE": Cohere2MoE, "Ling3": Ling3, "MiniCPM5": MiniCPM5, "MiniMaxM3": MiniMaxM3, "RWKVWorld": RWKVWorld,
	} {
		s := f("{{ messages }}")
		if _, _, err := FamilyScriptModel(s); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if s.Trigger == "<0x0A>" || s.Trigger2 == "<0x0A>" {
			for _, p := range append(append([]string(nil), s.Turn1...), s.Turn2...) {
				if p == "\n" {
					t.Errorf("%s: a lone newline piece after a prompt that ends in a newline byte", name)
				}
			}
		}
	}
}
