package testmodels

import (
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// A variant's vocabulary tokenizes prose, JSON and template code at more
// than two characters a token (agents' 40-80 kB prompts must fit its
// context), its script's tokens are distinct, and what cannot be a
// script is refused.
func TestScriptVariant(t *testing.T) {
	s := ToolScript{Tool: "exec_command", Arguments: `{"cmd": "cat /tmp/x/note.txt"}`, Answer: "Done. It is done."}
	kvs, tensors, err := ScriptVariant(s)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{}
	for _, kv := range kvs {
		meta[kv.Key] = kv.Value
	}
	tokens, scores := meta["tokenizer.ggml.tokens"].([]string), meta["tokenizer.ggml.scores"].([]float32)
	if meta["llama.context_length"] != uint32(65536) || meta["tokenizer.chat_template"] != Qwen3Template || len(tokens) < 70000 {
		t.Fatalf("context %v, %d tokens", meta["llama.context_length"], len(tokens))
	}
	var size uint64
	for _, tn := range tensors {
		size += uint64(len(tn.Data))
		if tn.Name == "token_embd.weight" && (tn.Type != gguf.F16 || tn.Dims[1] != uint64(len(tokens))) {
			t.Errorf("token_embd: %v %v", tn.Type, tn.Dims)
		}
	}
	if size > 32<<20 {
		t.Errorf("%d bytes of tensors", size)
	}
	for _, text := range []string{
		`{"name": "Read", "description": "Reads a file from the local filesystem. The file_path parameter must be an absolute path, not a relative path.", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}`,
		Qwen3Template[:2000],
	} {
		toks := spmTokenize(tokens, scores, text)
		if r := float64(len(text)) / float64(len(toks)); r < 2 {
			t.Errorf("%.2f characters a token: %q", r, toks)
		}
	}
	if strings.Count(s.Call(), "cat /tmp/x/note.txt") != 1 {
		t.Errorf("call %q", s.Call())
	}
	for _, bad := range []ToolScript{
		{Tool: "x", Arguments: "{", Answer: "a"},
		{Arguments: "{}", Answer: "a"},
		{Tool: "x", Arguments: "{}"},
		{Tool: "x", Arguments: "{}", Answer: "I"}, // the thinking's "I" already: nothing to join it with
	} {
		if _, _, err := ScriptVariant(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
