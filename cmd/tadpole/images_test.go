package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/registry/registrytest"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// Which words of a prompt are files to attach, and what is left of it.
func TestFindMediaPaths(t *testing.T) {
	for _, tc := range []struct {
		prompt string
		paths  []string
	}{
		{"describe ./cat.png", []string{"./cat.png"}},
		{"./cat.png", []string{"./cat.png"}},
		{"/tmp/a.JPG and ../b.jpeg and ~/c.WebP", []string{"/tmp/a.JPG", "../b.jpeg", "~/c.WebP"}},
		{"sound ./s.wav", []string{"./s.wav"}},
		{`./my\ pics/cat\'s.png what`, []string{"./my pics/cat's.png"}},
		{`'./my pics/cat.png' and "/a b/c d.jpg"`, []string{"./my pics/cat.png", "/a b/c d.jpg"}},
		{`"./it's here.png"`, []string{"./it's here.png"}},
		{"is it ./cat.png? or (./dog.png), [/x/y.png].", []string{"./cat.png", "./dog.png", "/x/y.png"}},
		{"same ./a.png ./a.png", []string{"./a.png", "./a.png"}},
		{"line one\n./a.png\tthen /b.png\n", []string{"./a.png", "/b.png"}},
		{`"look at ./a.png please"`, []string{"./a.png"}},
		// Left alone: other extensions, no path start, inside a word,
		// backticks, an extension that goes on, an unclosed quote.
		{"./notes.txt ./x.svg ./x.png.bak ./x.pngs /dir.png/", nil},
		{"cat.png a/b.png file:/x.png http://h/x.png `./x.png` x./y.png", nil},
		{`'./my pics/cat.png`, nil},
		{"/.png ./ / ~ ~x/a.png", nil},
		{"", nil},
	} {
		var got []string
		for _, r := range findMediaPaths(tc.prompt) {
			got = append(got, r.path)
			if r.start < 0 || r.end > len(tc.prompt) || r.start >= r.end {
				t.Errorf("%q: span %d-%d", tc.prompt, r.start, r.end)
			}
		}
		if !reflect.DeepEqual(got, tc.paths) {
			t.Errorf("%q: %q, want %q", tc.prompt, got, tc.paths)
		}
	}
}

// visionCLIServer serves the generated vision model ("vision") and the
// bigram chat model ("bigram", text only).
func visionCLIServer(t *testing.T) (*testServer, *client.Client) {
	t.Helper()
	dir := t.TempDir()
	if err := testmodels.WriteVision(filepath.Join(dir, "vision.gguf"), filepath.Join(dir, "vision.mmproj.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteBigram(filepath.Join(dir, "bigram.gguf")); err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{ModelsDir: dir,
		Sched: sched.Config{Parallel: 2, NumCtx: 256, KeepAlive: time.Minute, FlashAttn: engine.FlashAttentionOn, Threads: 1}})
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
	c, err := client.New(ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{host: ln.Addr().String(), dir: dir}, c
}

// testPNG is a size×size PNG of one colour with a diagonal of another.
func testPNG(t *testing.T, size int, c color.NRGBA) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			img.SetNRGBA(x, y, c)
			if x == y {
				img.SetNRGBA(x, y, color.NRGBA{255 - c.R, 255 - c.G, 255 - c.B, 255})
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// greedy are the options of every answer compared here.
var greedy = map[string]any{"temperature": 0, "num_predict": 12}

var greedyFlags = []string{"-p", "temperature=0", "-p", "num_predict=12"}

// apiGenerate is the answer of /api/generate to a prompt and images.
func apiGenerate(t *testing.T, c *client.Client, model, prompt string, images ...[]byte) string {
	t.Helper()
	var imgs []string
	for _, b := range images {
		imgs = append(imgs, base64.StdEncoding.EncodeToString(b))
	}
	var out strings.Builder
	err := c.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: model, Prompt: prompt, Images: imgs, Stream: new(false), Options: greedy},
		func(r ollamaapi.GenerateResponse) error { out.WriteString(r.Response); return nil })
	if err != nil {
		t.Fatalf("generate %q: %v", prompt, err)
	}
	return out.String()
}

// runIn runs the binary in a directory, with HOME there too.
func (ts *testServer) runIn(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tadpole(t), args...)
	cmd.Env = append(ts.env(), "HOME="+dir)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tadpole %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// `tadpole run vision "What is this? ./red.png"` sends the image as
// /api/generate's images, as `ollama run` does: the same answer as the
// API gives to the prompt without the path and the image.
func TestRunImages(t *testing.T) {
	ts, c := visionCLIServer(t)
	dir := t.TempDir()
	red := testPNG(t, 32, color.NRGBA{200, 30, 30, 255})
	blue := testPNG(t, 48, color.NRGBA{20, 40, 220, 255})
	writeFile(t, filepath.Join(dir, "red.png"), red)
	writeFile(t, filepath.Join(dir, "blue.PNG"), blue)
	writeFile(t, filepath.Join(dir, "my pics", "it's red.png"), red)
	writeFile(t, filepath.Join(dir, "my pics", "red (copy).png"), red)
	writeFile(t, filepath.Join(dir, "notes.txt"), []byte("some notes\n"))

	const q = "What is this?"
	withRed := apiGenerate(t, c, "vision", q, red)
	withBlue := apiGenerate(t, c, "vision", q, blue)
	plain := apiGenerate(t, c, "vision", q)
	if withRed == plain || withRed == withBlue {
		t.Fatalf("the answers do not depend on the image: red %q, blue %q, none %q", withRed, withBlue, plain)
	}

	abs := filepath.Join(dir, "my pics", "it's red.png")
	for _, tc := range []struct {
		name, prompt, added string
		want                string
	}{
		{"relative", q + " ./red.png", "./red.png", withRed},
		{"absolute, upper-case extension", q + " " + filepath.Join(dir, "blue.PNG"), filepath.Join(dir, "blue.PNG"), withBlue},
		{"home", q + " ~/red.png", "~/red.png", withRed},
		{"escaped spaces", q + ` ./my\ pics/it\'s\ red.png`, "./my pics/it's red.png", withRed},
		{"double quotes", q + ` "` + abs + `"`, abs, withRed},
		{"single quotes", q + ` '../` + filepath.Base(dir) + `/my pics/red (copy).png'`, "../" + filepath.Base(dir) + "/my pics/red (copy).png", withRed},
		{"first", "./red.png " + q, "./red.png", withRed},
		{"closing punctuation", q + " (./red.png)", "./red.png", apiGenerate(t, c, "vision", q+" ()", red)},
		{"between words", "What is ./red.png this?", "./red.png", apiGenerate(t, c, "vision", "What is  this?", red)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.runIn(t, dir, "", append(append([]string{"run"}, greedyFlags...), "vision", tc.prompt)...)
			if r.code != 0 || r.stdout != tc.want+"\n\n" {
				t.Fatalf("want the API's answer %q: %s", tc.want, r)
			}
			if want := "Added image '" + tc.added + "'\n"; r.stderr != want {
				t.Errorf("stderr %q, want %q", r.stderr, want)
			}
		})
	}

	// Two images: both, in order.
	r := ts.runIn(t, dir, "", append(append([]string{"run"}, greedyFlags...), "vision", q+" ./red.png ./blue.PNG")...)
	if want := apiGenerate(t, c, "vision", q, red, blue); r.code != 0 || r.stdout != want+"\n\n" {
		t.Errorf("two images: want %q: %s", want, r)
	}
	if r.stderr != "Added image './red.png'\nAdded image './blue.PNG'\n" {
		t.Errorf("two images: stderr %q", r.stderr)
	}

	// Sent as text: other extensions, backticks, a path in piped text.
	for _, tc := range []struct{ name, stdin, prompt, sent string }{
		{"other extension", "", "What is ./notes.txt?", "What is ./notes.txt?"},
		{"backticks", "", "What is `./red.png`?", "What is `./red.png`?"},
		{"piped", "./red.png\n", q, "./red.png " + q},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.runIn(t, dir, tc.stdin, append(append([]string{"run"}, greedyFlags...), "vision", tc.prompt)...)
			if want := apiGenerate(t, c, "vision", tc.sent); r.code != 0 || r.stdout != want+"\n\n" || r.stderr != "" {
				t.Fatalf("want the API's answer to %q, no image: %q\n%s", tc.sent, want, r)
			}
		})
	}
}

// Files that cannot be attached are refused before anything is sent.
func TestRunImageErrors(t *testing.T) {
	ts, _ := visionCLIServer(t)
	dir := t.TempDir()
	red := testPNG(t, 32, color.NRGBA{200, 30, 30, 255})
	writeFile(t, filepath.Join(dir, "red.png"), red)
	writeFile(t, filepath.Join(dir, "text.png"), []byte("not an image at all"))
	writeFile(t, filepath.Join(dir, "red.wav"), red)
	if err := os.Mkdir(filepath.Join(dir, "dir.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Over the limit by one byte: a PNG signature, then a hole.
	huge, err := os.Create(filepath.Join(dir, "huge.png"))
	if err != nil {
		t.Fatal(err)
	}
	huge.Write(red[:64])
	if err := huge.Truncate(maxAttachBytes + 1); err != nil {
		t.Fatal(err)
	}
	huge.Close()
	// Under the limit but, base64-encoded, over the server's 10 MiB body.
	big := make([]byte, 8<<20)
	copy(big, red)
	writeFile(t, filepath.Join(dir, "big.png"), big)

	for _, tc := range []struct {
		name, model, prompt, stderr string
	}{
		{"text-only model", "bigram", "What is this? ./red.png", `model "bigram" does not take images ("vision" is not among its capabilities): image './red.png' named in the prompt`},
		{"audio for a vision model", "vision", "Listen: ./red.wav", `model "vision" does not take audio ("audio" is not among its capabilities): audio './red.wav'`},
		{"missing file", "vision", "What is this? ./nope.png", "image './nope.png' named in the prompt: no such file (to send a path as text, write it in backticks)"},
		{"missing among good ones", "vision", "./red.png and ./nope.jpg", "image './nope.jpg' named in the prompt: no such file"},
		{"directory", "vision", "./dir.png", "image './dir.png' named in the prompt: not a regular file"},
		{"not an image", "vision", "./text.png", "image './text.png' named in the prompt: not a JPEG, PNG or WebP image (its content is text/plain; charset=utf-8)"},
		{"too large", "vision", "./huge.png", "image './huge.png' named in the prompt: 104857601 bytes, over the 100 MiB a file may have"},
		{"over the server's body limit", "vision", "./big.png", "the server's body limit (tadpole serve --max-body, TADPOLE_MAX_BODY)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.runIn(t, dir, "", append(append([]string{"run"}, greedyFlags...), tc.model, tc.prompt)...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.stderr) || r.stdout != "" {
				t.Fatalf("want exit 1 and %q: %s", tc.stderr, r)
			}
			t.Log(r.stderr)
			if tc.name != "over the server's body limit" && strings.Contains(r.stderr, "Added") {
				t.Errorf("a file was added: %s", r.stderr)
			}
		})
	}
}

// The chat attaches images to the user message of /api/chat; they stay
// in the conversation; a line that starts with a path is a message, not
// a command; a missing file is an error that keeps the session.
func TestRunInteractiveImages(t *testing.T) {
	ts, c := visionCLIServer(t)
	dir := t.TempDir()
	red := testPNG(t, 32, color.NRGBA{200, 30, 30, 255})
	writeFile(t, filepath.Join(dir, "red.png"), red)
	img := base64.StdEncoding.EncodeToString(red)
	chat := func(msgs ...ollamaapi.Message) string {
		t.Helper()
		var out strings.Builder
		err := c.Chat(context.Background(), &ollamaapi.ChatRequest{Model: "vision", Messages: msgs, Stream: new(false), Options: greedy},
			func(r ollamaapi.ChatResponse) error { out.WriteString(r.Message.Content); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	first := chat(ollamaapi.Message{Role: "user", Content: "What colour?", Images: []string{img}})
	second := chat(ollamaapi.Message{Role: "user", Content: "What colour?", Images: []string{img}},
		ollamaapi.Message{Role: "assistant", Content: first}, ollamaapi.Message{Role: "user", Content: "Sure?"})
	if withoutImage := chat(ollamaapi.Message{Role: "user", Content: "What colour?"}); withoutImage == first {
		t.Fatalf("the answer does not depend on the image: %q", first)
	}
	abs := filepath.Join(dir, "red.png")
	third := chat(ollamaapi.Message{Role: "user", Content: "what is it?", Images: []string{img}})

	cmd := exec.Command(tadpole(t), append(append([]string{"run", "--nowordwrap"}, greedyFlags...), "vision")...)
	cmd.Env = ts.env()
	cmd.Dir = dir
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	screen := &syncBuffer{}
	go io.Copy(screen, f)
	text := func() string { return strings.ReplaceAll(screen.String(), "\r\n", "\n") }
	prompts := func(n int) {
		t.Helper()
		waitFor(t, screen, func(s string) bool { return strings.Count(s, ">>> ") >= n }, ">>> prompt")
	}
	prompts(1)
	f.Write([]byte("What colour? ./red.png\n"))
	prompts(2)
	f.Write([]byte("Sure?\n"))
	prompts(3)
	f.Write([]byte("What colour? ./nope.png\n"))
	prompts(4)
	f.Write([]byte("/clear\n"))
	prompts(5)
	f.Write([]byte(abs + " what is it?\n"))
	prompts(6)
	f.Write([]byte("/bye\n"))
	if err := wait(t, cmd); err != nil {
		t.Fatalf("exit: %v\n%s", err, screen)
	}
	// What follows each message up to the next prompt (the spinner, the
	// answer); the answers are compared as written.
	out := text()
	after := func(msg string) string {
		t.Helper()
		_, rest, ok := strings.Cut(out, ">>> "+msg+"\n")
		if !ok {
			t.Fatalf("no message %q in the chat:\n%s", msg, out)
		}
		rest, _, _ = strings.Cut(rest, ">>> ")
		return rest
	}
	for _, tc := range []struct{ msg, added, answer string }{
		{"What colour? ./red.png", "./red.png", first},
		{"Sure?", "", second},
		{abs + " what is it?", abs, third},
	} {
		got := after(tc.msg)
		if added := "Added image '" + tc.added + "'\n"; (tc.added != "") != strings.HasPrefix(got, added) {
			t.Errorf("after %q: %q, want Added image only for a file", tc.msg, got)
		}
		if !strings.Contains(got, tc.answer+"\n") {
			t.Errorf("after %q: %q, want the API's answer %q", tc.msg, got, tc.answer)
		}
	}
	if got := after("What colour? ./nope.png"); got != "Error: image './nope.png' named in the prompt: no such file (to send a path as text, write it in backticks)\n\n" {
		t.Errorf("missing file: %q", got)
	}
	if strings.Contains(out, "Unknown command") {
		t.Errorf("a path taken for a command:\n%s", out)
	}
}

// A model the server lacks is pulled before its capabilities are asked:
// here a text-only one, which then refuses the image.
func TestRunImagePull(t *testing.T) {
	ts := startServer(t)
	reg := registrytest.New()
	defer reg.Close()
	gguf, err := os.ReadFile(filepath.Join(ts.dir, "bigram.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	reg.PublishModel("library/text", "latest", gguf, "")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "red.png"), testPNG(t, 32, color.NRGBA{200, 30, 30, 255}))
	name := reg.Host() + "/library/text"
	r := ts.runIn(t, dir, "", "run", "--insecure", name, "What is this? ./red.png")
	if r.code != 1 || !strings.Contains(r.stderr, "pulling manifest\n") ||
		!strings.Contains(r.stderr, "success\ntadpole: model \""+name+"\" does not take images") || strings.Contains(r.stderr, "Added") {
		t.Fatalf("want the model pulled, then the image refused: %s", r)
	}
	if !strings.Contains(ts.mustRun(t, "list").stdout, "text") {
		t.Errorf("list lacks the pulled model")
	}
}
