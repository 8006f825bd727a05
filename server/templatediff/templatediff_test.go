package templatediff_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server"
	"github.com/tadpole-llm/tadpole/server/sched"
	"github.com/tadpole-llm/tadpole/server/templatediff"
)

// The conversations, as OpenAI chat bodies (llama-server ignores
// "model"). Tool call ids are nine letters and digits, as Mistral's
// templates demand; arguments are the strings OpenAI clients send, laid
// out as Python's json.dumps would write them.
const (
	toolsJSON = `[{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city, e.g. \"Paris\""}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},` +
		` {"type": "function", "function": {"name": "get_time", "description": "Get the local time in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]`
	callWeather = `{"id": "call00001", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}`
	callTime    = `{"id": "call00002", "type": "function", "function": {"name": "get_time", "arguments": "{\"city\": \"Paris\"}"}}`
	userAsk     = `{"role": "user", "content": "What's the weather like in Paris?"}`
)

type conversation struct {
	name string
	body string // the request's members after "model"
}

func conversations(imageURL string) []conversation {
	return []conversation{
		{"plain", `"messages": [{"role": "user", "content": "Hello! Who are you?"}]`},
		{"system", `"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "What is the capital of France?"}]`},
		{"multi", `"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Hi there."}, {"role": "assistant", "content": "Hello! How can I help you today?"}, {"role": "user", "content": "Tell me a short joke."}]`},
		{"tools", `"tools": ` + toolsJSON + `, "messages": [` + userAsk + `]`},
		{"tool_call", `"tools": ` + toolsJSON + `, "messages": [` + userAsk + `, {"role": "assistant", "content": null, "tool_calls": [` + callWeather + `]}, {"role": "tool", "tool_call_id": "call00001", "content": "{\"temperature\": 21, \"condition\": \"sunny\"}"}]`},
		{"parallel", `"tools": ` + toolsJSON + `, "messages": [{"role": "user", "content": "What's the weather and the time in Paris?"}, {"role": "assistant", "content": null, "tool_calls": [` + callWeather + `, ` + callTime + `]}, {"role": "tool", "tool_call_id": "call00001", "content": "{\"temperature\": 21}"}, {"role": "tool", "tool_call_id": "call00002", "content": "14:05"}]`},
		{"think_on", `"chat_template_kwargs": {"enable_thinking": true}, "messages": [{"role": "user", "content": "What is 17 * 23?"}]`},
		{"think_off", `"chat_template_kwargs": {"enable_thinking": false}, "messages": [{"role": "user", "content": "What is 17 * 23?"}]`},
		{"reasoning", `"messages": [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4", "reasoning_content": "Two plus two is four."}, {"role": "user", "content": "And 3 + 3?"}]`},
		{"effort_high", `"reasoning_effort": "high", "messages": [{"role": "user", "content": "What is 17 * 23?"}]`},
		{"image", `"messages": [{"role": "user", "content": [{"type": "text", "text": "What is in this image?"}, {"type": "image_url", "image_url": {"url": "` + imageURL + `"}}]}]`},
	}
}

// TestTemplatesMatchLlamaServer is the rendering differential of issue
// 35: every template of the engine's llama.cpp release, every
// conversation, Tadpole's prompt against llama-server's, byte for byte.
func TestTemplatesMatchLlamaServer(t *testing.T) {
	bin, src := locate(t)
	files, err := filepath.Glob(filepath.Join(src, "models", "templates", "*.jinja"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates in %s/models/templates (%v)", src, err)
	}
	sort.Strings(files)

	// One bigram model per template (its SentencePiece vocabulary has
	// <s> and </s>), each with the same vision projector beside it.
	dir := t.TempDir()
	kvs, tensors := testmodels.Bigram()
	nEmbd := 0
	for _, kv := range kvs {
		if kv.Key == "llama.embedding_length" {
			nEmbd = int(kv.Value.(uint32))
		}
	}
	proj := filepath.Join(dir, "projector.bin")
	if err := testmodels.WriteVisionProjector(proj, nEmbd); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(files))
	for i, f := range files {
		tmpl, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		names[i] = fmt.Sprintf("t%02d", i)
		mk := make([]gguf.KV, len(kvs))
		copy(mk, kvs)
		for j := range mk {
			if mk[j].Key == "tokenizer.chat_template" {
				mk[j].Value = string(tmpl)
			}
		}
		if err := gguf.WriteFile(filepath.Join(dir, names[i]+".gguf"), mk, tensors); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(proj, filepath.Join(dir, names[i]+".mmproj.gguf")); err != nil {
			t.Fatal(err)
		}
	}

	tp := startTadpole(t, dir)
	convs := conversations(pngURL(t))
	known := map[[2]string]string{}
	for _, l := range templatediff.Listed {
		known[[2]string{l.Template, l.Conversation}] = l.Reason
	}
	used := map[[2]string]bool{}
	var equal, listedN, bothErr, lsErr, tpErr int
	type row struct{ tmpl, conv, what string }
	var unlisted []row
	for i, f := range files {
		tmpl := filepath.Base(f)
		ls, stop, startErr := startLlamaServer(t, bin, filepath.Join(dir, names[i]+".gguf"), proj)
		for _, c := range convs {
			body := `{"model": "` + names[i] + `", ` + c.body + `}`
			var lcode int
			var lprompt, lmsg string
			if startErr != "" {
				lcode, lmsg = -1, startErr
			} else {
				lcode, lprompt, lmsg = applyTemplate(t, ls, body)
			}
			tcode, tprompt, tmsg := applyTemplate(t, tp, body)
			if tcode >= 500 {
				t.Errorf("%s %s: Tadpole answered %d (a template error must be a 400): %s", tmpl, c.name, tcode, tmsg)
			}
			if lcode != 200 {
				lsErr++
			}
			if tcode != 200 {
				tpErr++
			}
			var what string
			switch {
			case lcode == 200 && tcode == 200 && lprompt == tprompt:
				equal++
				continue
			case lcode != 200 && tcode != 200:
				bothErr++
				t.Logf("both refuse: %s | %s | llama-server %d: %s | Tadpole %d: %s", tmpl, c.name, lcode, short(lmsg), tcode, short(tmsg))
				continue
			case lcode != 200:
				what = fmt.Sprintf("llama-server refuses (%d: %s); Tadpole renders %q", lcode, short(lmsg), short(tprompt))
			case tcode != 200:
				what = fmt.Sprintf("Tadpole refuses (%d: %s); llama-server renders %q", tcode, short(tmsg), short(lprompt))
			default:
				what = diffAt(lprompt, tprompt)
			}
			key := [2]string{tmpl, c.name}
			if _, ok := known[key]; ok {
				used[key] = true
				listedN++
				continue
			}
			if _, ok := known[[2]string{tmpl, "*"}]; ok {
				used[[2]string{tmpl, "*"}] = true
				listedN++
				continue
			}
			unlisted = append(unlisted, row{tmpl, c.name, what})
		}
		stop()
	}
	for _, r := range unlisted {
		t.Errorf("unlisted difference: %s | %s | %s", r.tmpl, r.conv, r.what)
	}
	for _, l := range templatediff.Listed {
		if !used[[2]string{l.Template, l.Conversation}] {
			t.Errorf("listed difference %s | %s no longer differs (%s): remove it", l.Template, l.Conversation, l.Reason)
		}
	}
	t.Logf("templates: %d, conversations: %d; equal: %d, listed differences: %d, unlisted differences: %d, both refuse: %d; refused by llama-server: %d, by Tadpole: %d",
		len(files), len(convs), equal, listedN, len(unlisted), bothErr, lsErr, tpErr)
}

// locate finds llama-server and the llama.cpp source tree: LLAMA_SERVER
// and LLAMA_CPP_SRC, or the engine's build directory named in
// CGO_CPPFLAGS (-I<build>/src/include) and the llama-server build
// scripts/llama.sh makes beside it.
func locate(t *testing.T) (bin, src string) {
	testkit.Full(t, "llama-server side by side")
	bin, src = os.Getenv("LLAMA_SERVER"), os.Getenv("LLAMA_CPP_SRC")
	if src == "" || bin == "" {
		for _, f := range strings.Fields(os.Getenv("CGO_CPPFLAGS")) {
			if inc, ok := strings.CutPrefix(f, "-I"); ok && strings.HasSuffix(inc, "/src/include") {
				build := strings.TrimSuffix(inc, "/src/include")
				if src == "" {
					src = build + "/src"
				}
				if bin == "" {
					if m, _ := filepath.Glob(build + "-server*/server.env"); len(m) > 0 {
						bin = filepath.Join(filepath.Dir(m[len(m)-1]), "llama-server")
					}
				}
				break
			}
		}
	}
	if _, err := os.Stat(bin); bin != "" && err != nil {
		bin = ""
	}
	if _, err := os.Stat(filepath.Join(src, "models", "templates")); src != "" && err != nil {
		src = ""
	}
	if bin == "" || src == "" {
		msg := "no llama-server built (make llama-server) or no llama.cpp source tree with models/templates (LLAMA_SERVER, LLAMA_CPP_SRC)"
		if os.Getenv("TADPOLE_REQUIRE_LLAMA_SERVER") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin, src
}

func startTadpole(t *testing.T, dir string) string {
	t.Helper()
	srv := server.New(server.Config{ModelsDir: dir, Sched: sched.Config{Parallel: 1, NumCtx: 256, KeepAlive: time.Second, FlashAttn: engine.FlashAttentionOn, Threads: 1}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// startLlamaServer runs llama-server on model at a free loopback port
// until /health answers 200. A template llama-server cannot load makes
// it exit: that is returned as startErr (the log's last lines).
func startLlamaServer(t *testing.T, bin, model, proj string) (url string, stop func(), startErr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var log bytes.Buffer
	cmd := exec.Command(bin, "-m", model, "--mmproj", proj, "--jinja", "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"-c", "256", "-np", "1", "-t", "1", "--no-warmup", "--no-webui")
	cmd.Stdout, cmd.Stderr = &log, &log
	// mtmd's own marker, which Tadpole writes, instead of a random one.
	cmd.Env = append(os.Environ(), "LLAMA_MEDIA_MARKER=<__media__>")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop = func() {
		cmd.Process.Kill()
		<-done
	}
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return "", stop, "llama-server exited: " + lastLines(log.String(), 3)
		default:
		}
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url, stop, ""
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	t.Fatalf("llama-server on %s did not start: %s", model, lastLines(log.String(), 10))
	return
}

// applyTemplate posts body to /apply-template: the status, the prompt,
// and an error answer's message.
func applyTemplate(t *testing.T, base, body string) (int, string, string) {
	t.Helper()
	code, b, msg := post(t, base+"/apply-template", body)
	if code != 200 {
		return code, "", msg
	}
	var p struct {
		Prompt *string `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(b), &p); err != nil || p.Prompt == nil {
		t.Fatalf("%s: not a prompt: %.300s", base, b)
	}
	return 200, *p.Prompt, ""
}

// post posts a JSON body: the status, the answer, and an error answer's
// message.
func post(t *testing.T, url, body string) (int, string, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return resp.StatusCode, string(b), e.Error.Message
		}
		return resp.StatusCode, string(b), string(b)
	}
	return 200, string(b), ""
}

// diffAt describes where two prompts part.
func diffAt(ls, tp string) string {
	i := 0
	for i < len(ls) && i < len(tp) && ls[i] == tp[i] {
		i++
	}
	from := max(0, i-30)
	return fmt.Sprintf("at byte %d: llama-server %q, Tadpole %q", i, ls[from:min(len(ls), i+50)], tp[from:min(len(tp), i+50)])
}

func short(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// pngURL is a small PNG as a data URL.
func pngURL(t *testing.T) string {
	img := image.NewNRGBA(image.Rect(0, 0, 16, 16))
	for i := range 16 {
		img.SetNRGBA(i, i, color.NRGBA{255, 0, 0, 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}
