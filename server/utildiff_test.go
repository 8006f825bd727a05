package server

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// The utility endpoints against llama-server itself (issue 35): each
// request goes to llama-server of the engine's llama.cpp release serving
// the model alone and to Tadpole serving it by name, and the answers
// must be the same status and the same JSON (token ids, pieces, text,
// prompts). The models: the demo model (a SentencePiece vocabulary), a
// byte-level BPE vocabulary with Qwen 2's pre-tokenizer, and the scripted
// model (its ChatML template for /apply-template).
func TestUtilityEndpointsMatchLlamaServer(t *testing.T) {
	bin := llamaServerBin(t)
	dir := t.TempDir()
	paths := map[string]string{
		"stories": filepath.Join(dir, "stories.gguf"),
		"bpe":     filepath.Join(dir, "bpe.gguf"),
		"script":  filepath.Join(dir, "script.gguf"),
	}
	if err := linkFile(testmodels.Testdata("stories260K.gguf"), paths["stories"]); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteBPE(paths["bpe"], "qwen2"); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteScript(paths["script"]); err != nil {
		t.Fatal(err)
	}
	ts := serveConfig(t, Config{ModelsDir: dir, Sched: testSched(1, 1024)})

	texts := []string{
		"Once upon a time, the cat sat on the mat.",
		"  leading spaces,\n\nnewlines\tand a tab  ",
		"á é ü ß 12 345 € 🐸 tadpole",
		"<|endoftext|>after a special token<|im_start|>user",
		"",
	}
	type call struct{ path, body string }
	var tokenizeCalls []call
	for _, s := range texts {
		js, _ := json.Marshal(s)
		for _, opts := range []string{``, `, "add_special": true`, `, "with_pieces": true`, `, "parse_special": false, "with_pieces": true`} {
			tokenizeCalls = append(tokenizeCalls, call{"/tokenize", `{"content": ` + string(js) + opts + `}`})
		}
	}
	tokenizeCalls = append(tokenizeCalls, call{"/tokenize", `{"content": ["Once upon", 5, " a time"], "add_special": true}`})

	chats := []call{
		{"/apply-template", `{"messages": [{"role": "user", "content": "Hi"}]}`},
		{"/apply-template", `{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "And you?"}]}`},
		{"/apply-template", `{"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {"enable_thinking": false}}`},
	}

	for _, name := range []string{"stories", "bpe", "script"} {
		t.Run(name, func(t *testing.T) {
			ls := runLlamaServer(t, bin, paths[name])
			calls := append([]call(nil), tokenizeCalls...)
			if name == "script" {
				calls = append(calls, chats...)
			}
			// Detokenize what llama-server made of each text, special
			// tokens included.
			for _, s := range texts {
				js, _ := json.Marshal(s)
				var ids struct{ Tokens []int }
				if code, b := postUtil(t, ls+"/tokenize", `{"content": `+string(js)+`, "add_special": true}`, &ids); code != 200 {
					t.Fatalf("llama-server /tokenize: %d %s", code, b)
				}
				toks, _ := json.Marshal(ids.Tokens)
				calls = append(calls, call{"/detokenize", `{"tokens": ` + string(toks) + `}`})
			}
			equal := 0
			for _, c := range calls {
				wantCode, want := postUtil(t, ls+c.path, c.body, nil)
				body := `{"model": "` + name + `", ` + c.body[1:]
				gotCode, got := postUtil(t, ts.URL+c.path, body, nil)
				if wantCode != gotCode || !sameJSON(want, got) {
					t.Errorf("%s %s:\nllama-server %d %s\ntadpole      %d %s", c.path, c.body, wantCode, want, gotCode, got)
					continue
				}
				equal++
			}
			t.Logf("%s: %d of %d requests answered as llama-server answers them", name, equal, len(calls))
		})
	}
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return reflect.DeepEqual(x, y)
}
