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
