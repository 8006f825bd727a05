package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// startUtilityServer serves the demo model ("stories", a SentencePiece
// vocabulary) and the scripted model ("script", Qwen3's BPE vocabulary
// and ChatML template).
func startUtilityServer(t *testing.T) *testServer {
	t.Helper()
	return serveConfig(t, Config{ModelsDir: testModels(t, "stories", "script"), Sched: testSched(1, 1024)})
}

// postUtil posts body and decodes the answer into v (when not nil).
func postUtil(t *testing.T, url, body string, v any) (int, string) {
	t.Helper()
	code, _, b := do(t, "POST", url, "", body)
	if v != nil && code == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	return code, string(b)
}

// llama-server's /tokenize, /detokenize and /apply-template (issue 35),
// in its shapes. The pieces of "á" on stories260K are the ones
// llama-server's README shows for that model; the rest follows from
// llama-server's code (special tokens parsed by default, pieces with
// special tokens written out, BOS only before the first text).
func TestLlamaServerTokenize(t *testing.T) {
	ts := startUtilityServer(t)

	var pieces struct {
		Tokens []struct {
			ID    int
			Piece json.RawMessage
		}
	}
	if code, b := postUtil(t, ts.URL+"/tokenize", `{"model": "stories", "content": "á", "with_pieces": true}`, &pieces); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var got []string
	for _, p := range pieces.Tokens {
		got = append(got, fmt.Sprintf("%d:%s", p.ID, p.Piece))
	}
	// llama-server's README shows 198:[195] 164:[161]; its tokenizer
	// (this one) first adds SentencePiece's space prefix, " " (410).
	if strings.Join(got, " ") != `410:" " 198:[195] 164:[161]` {
		t.Errorf("pieces of á: %v, want the space prefix, then the two bytes 198:[195] 164:[161]", got)
	}

	tokenize := func(body string) []int {
		t.Helper()
		var ids struct{ Tokens []int }
		if code, b := postUtil(t, ts.URL+"/tokenize", body, &ids); code != 200 {
			t.Fatalf("%s: %d %s", body, code, b)
		}
		return ids.Tokens
	}
	plain := tokenize(`{"model": "stories", "content": "Once upon a time"}`)
	bos := tokenize(`{"model": "stories", "content": "Once upon a time", "add_special": true}`)
	if len(plain) < 3 || len(bos) != len(plain)+1 || bos[0] != 1 {
		t.Fatalf("with add_special %v, without %v: want BOS (1) first", bos, plain)
	}
	var text struct{ Content string }
	body, _ := json.Marshal(map[string]any{"model": "stories", "tokens": plain})
	postUtil(t, ts.URL+"/detokenize", string(body), &text)
	if strings.TrimPrefix(text.Content, " ") != "Once upon a time" {
		t.Errorf("detokenize: %q", text.Content)
	}
	// A mixed prompt: strings and ids; BOS before the first text only.
	if mixed := tokenize(`{"model": "stories", "content": ["Once upon a time", 5, "Once upon a time"], "add_special": true}`); len(mixed) != 2*len(plain)+2 || mixed[0] != 1 || mixed[len(plain)+1] != 5 {
		t.Errorf("mixed: %v (plain %v)", mixed, plain)
	}
	// No content: no tokens, as llama-server answers.
	if code, b := postUtil(t, ts.URL+"/tokenize", `{"model": "stories"}`, nil); code != 200 || b != `{"tokens":[]}`+"\n" {
		t.Errorf("no content: %d %q", code, b)
	}

	// Special tokens are parsed unless parse_special is false; their
	// pieces are their text.
	special := tokenize(`{"model": "script", "content": "<|im_start|>user"}`)
	if astext := tokenize(`{"model": "script", "content": "<|im_start|>user", "parse_special": false}`); len(special) >= len(astext) || special[0] == astext[0] {
		t.Errorf("parsed %v, as text %v", special, astext)
	}
	body, _ = json.Marshal(map[string]any{"model": "script", "tokens": special})
	postUtil(t, ts.URL+"/detokenize", string(body), &text)
	// (This vocabulary is SentencePiece-like: a space prefix follows a
	// special token, as llama.cpp's tokenizer adds one.)
	if rest, ok := strings.CutPrefix(text.Content, "<|im_start|>"); !ok || strings.TrimSpace(rest) != "user" {
		t.Errorf("detokenize of a control token: %q", text.Content)
	}

	// apply-template: the chat request's prompt, which is what the chat
	// completion counts as its prompt tokens.
	chat := `{"model": "script", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "chat_template_kwargs": {"enable_thinking": false}}`
	var tpl struct{ Prompt string }
	if code, b := postUtil(t, ts.URL+"/apply-template", chat, &tpl); code != 200 {
		t.Fatalf("apply-template: %d %s", code, b)
	}
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
	if tpl.Prompt != want {
		t.Errorf("apply-template: %q, want %q", tpl.Prompt, want)
	}
	var cc struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	postUtil(t, ts.URL+"/v1/chat/completions", strings.TrimSuffix(chat, "}")+`, "max_tokens": 1}`, &cc)
	body, _ = json.Marshal(map[string]any{"model": "script", "content": tpl.Prompt, "add_special": true})
	if n := len(tokenize(string(body))); cc.Usage.PromptTokens == 0 || cc.Usage.PromptTokens != n {
		t.Errorf("the chat's prompt is %d tokens, its template %d", cc.Usage.PromptTokens, n)
	}
}

// Bad input is a 4xx in OpenAI's shape (llama-server's), never a crash:
// the worst token ids, a missing or unknown model, wrong types, more
// tokens than one request may ask for.
func TestLlamaServerTokenizeErrors(t *testing.T) {
	ts := startUtilityServer(t)
	many := make([]int, MaxTokenizeTokensForTest+1)
	huge, _ := json.Marshal(map[string]any{"model": "stories", "tokens": many})
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/tokenize", `{"content": "x"}`, 400, "you must provide a model parameter"},
		{"/tokenize", `{"model": "nowhere", "content": "x"}`, 404, "nowhere"},
		{"/tokenize", `{"model": "stories", "content": {"a": 1}}`, 400, "expected a string or an array of strings and token ids"},
		{"/tokenize", `{"model": "stories", "content": [1.5]}`, 400, "content[0]"},
		{"/tokenize", `{"model": "stories", "content": [2147483648]}`, 400, "content[0]"},
		{"/tokenize", `{"model": "stories", "content": ["a", 512]}`, 400, "token 512 is not in the model's vocabulary (0..511)"},
		{"/tokenize", `{"model": "stories", "content": [-1]}`, 400, "token -1 is not in the model's vocabulary"},
		{"/detokenize", `{"model": "stories", "tokens": [1, 99999999]}`, 400, "token 99999999 is not in the model's vocabulary"},
		{"/detokenize", `{"model": "stories", "tokens": [-2147483648]}`, 400, "tokens[0]"},
		{"/detokenize", `{"model": "stories", "tokens": "abc"}`, 400, "tokens"},
		{"/detokenize", string(huge), 400, fmt.Sprintf("at most %d", MaxTokenizeTokensForTest)},
		{"/apply-template", `{"model": "script"}`, 400, "messages"},
		{"/apply-template", `{"model": "script", "messages": [{"role": "wizard", "content": "x"}]}`, 400, "wizard"},
		{"/tokenize", ``, 400, ""},
	} {
		code, b := postUtil(t, ts.URL+c.path, c.body, nil)
		var e struct {
			Error struct{ Message, Type string }
		}
		if code != c.status || json.Unmarshal([]byte(b), &e) != nil || e.Error.Message == "" || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s %.80s: %d %s, want %d with %q", c.path, c.body, code, b, c.status, c.want)
		}
	}
	if code, _, _ := do(t, "GET", ts.URL+"/tokenize", "", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /tokenize: %d", code)
	}
}
