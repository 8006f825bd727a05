package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/color"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/chromedp/chromedp"

	"github.com/tadpole-llm/tadpole/models/registry/registrytest"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/auth"
)

// The web console in a real browser: headless Chromium (Debian's
// chromium package; .ci/run installs it) driven over the DevTools
// protocol against a real server. Without Chromium these tests fail:
// they never skip.

// chromiumPath finds the browser: $TADPOLE_CHROMIUM, else chromium on
// the PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TADPOLE_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("TADPOLE_CHROMIUM=%s: %v (the web console's browser tests need headless Chromium)", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the web console's browser tests need headless Chromium: install Debian's package (apt-get install chromium; .ci/run does) or set TADPOLE_CHROMIUM to its path")
	return ""
}

// browser is a headless Chromium tab at 1280×800 whose uncaught page
// exceptions fail the test.
type browser struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	exc []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 800), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.IsException() {
				b.mu.Lock()
				b.exc = append(b.exc, m.Text)
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.exc {
			t.Errorf("uncaught exception in the page: %s", e)
		}
	})
	return b
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

// eval runs a JavaScript expression (a promise is awaited) and decodes
// its value into T.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it is true.
func (b *browser) waitFor(what, js string, timeout time.Duration) {
	b.t.Helper()
	var err error
	seen := false
	defer func() {
		if !seen { // Eventually failed the test
			html, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById('view') ? document.getElementById('view').innerText.slice(0, 2000) : document.body.innerText`))
			b.t.Logf("waiting for %s (%s): last error %v; the page shows:\n%s", what, js, err, html)
		}
	}()
	testkit.Eventually(b.t, timeout, what, func() bool {
		var v bool
		v, err = chromedp.Run(b.ctx, chromedp.Evaluate[bool]("!!("+js+")"))
		return err == nil && v
	})
	seen = true
}

// set sets a form field's value and fires its input and change events.
func (b *browser) set(sel, value string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.value = %q;
		e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return e.value === %q })()`, sel, value, value)
	if !eval[bool](b, js) {
		b.t.Fatalf("could not set %s to %q", sel, value)
	}
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(sel)))
}

// screenshots is where the tests put their screenshots: $TADPOLE_SCREENSHOTS,
// else a directory of the test's own.
func screenshots(t *testing.T) string {
	if d := os.Getenv("TADPOLE_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// shoot saves the viewport (1280×800) in the light and the dark theme.
func (b *browser) shoot(dir, name string) {
	b.t.Helper()
	for _, theme := range []string{"light", "dark"} {
		eval[bool](b, fmt.Sprintf(`(document.documentElement.dataset.theme = %q, true)`, theme))
		time.Sleep(150 * time.Millisecond)
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			b.t.Fatal(err)
		}
		p := filepath.Join(dir, name+"-"+theme+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			b.t.Fatal(err)
		}
		b.t.Logf("screenshot %s", p)
	}
	eval[bool](b, `(delete document.documentElement.dataset.theme, true)`)
}

// storedMessage is a message as the console stores it; lastAssistant
// is the last of the current conversation.
type storedMessage struct {
	Role, Content, Model string
	Chunks               int
	Stopped              bool
	Error                string
	Stats                map[string]any
}

func (b *browser) lastAssistant() storedMessage {
	b.t.Helper()
	s := eval[string](b, `localStorage.getItem('tadpole.conversations') || '[]'`)
	cur := eval[string](b, `localStorage.getItem('tadpole.current') || ''`)
	var all []struct {
		ID       string
		Messages []storedMessage
	}
	if err := json.Unmarshal([]byte(s), &all); err != nil {
		b.t.Fatal(err)
	}
	for _, c := range all {
		if c.ID == cur && len(c.Messages) > 0 {
			return c.Messages[len(c.Messages)-1]
		}
	}
	b.t.Fatalf("no current conversation in local storage: %.500s", s)
	return storedMessage{}
}

// apiChat is the answer of a non-streamed /api/chat.
func apiChat(t *testing.T, ts *testServer, body string) string {
	t.Helper()
	code, _, b := do(t, "POST", ts.URL+"/api/chat", "", body)
	if code != 200 {
		t.Fatalf("/api/chat: %d %s", code, b)
	}
	var r struct {
		Message struct{ Content string }
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Message.Content
}

// Load the console, pick the demo model, send "Once upon a time" at
// temperature 0 and see the same greedy continuation the API gives
// stream in, with its figures; measure first paint.
func TestUIChat(t *testing.T) {
	ts := startServer(t)
	want := apiChat(t, ts, `{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"stream":false,"options":{"temperature":0,"num_predict":30}}`)
	if len(strings.Fields(want)) < 5 {
		t.Fatalf("API answer %q", want)
	}
	b := newBrowser(t)
	start := time.Now()
	b.do(chromedp.Navigate(ts.URL + "/ui/"))
	b.waitFor("the model picker", `document.querySelector('#model option[value="stories:latest"]')`, 30*time.Second)
	paint := eval[map[string]float64](b, `Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]))`)
	ready := eval[float64](b, `(performance.getEntriesByName('tadpole-chat-ready')[0] || {startTime: -1}).startTime`)
	t.Logf("first paint %.0f ms, first contentful paint %.0f ms, chat ready (models listed) %.0f ms after navigation start; %v from the test's navigate",
		paint["first-paint"], paint["first-contentful-paint"], ready, time.Since(start).Round(time.Millisecond))
	if paint["first-contentful-paint"] <= 0 || ready <= 0 {
		t.Errorf("paint timings %v, ready %v", paint, ready)
	}
	// Again with the browser warm (the first load also starts Chromium's
	// renderer).
	b.do(chromedp.Reload())
	b.waitFor("the model picker after a reload", `performance.getEntriesByName('tadpole-chat-ready').length`, 30*time.Second)
	t.Logf("after a reload: first contentful paint %.0f ms, chat ready %.0f ms",
		eval[float64](b, `performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint').startTime`),
		eval[float64](b, `performance.getEntriesByName('tadpole-chat-ready')[0].startTime`))
	// Light and dark come from the stylesheet, not the page's default.
	bg := eval[[]string](b, `['light', 'dark'].map(t => { document.documentElement.dataset.theme = t; return getComputedStyle(document.body).backgroundColor })`)
	if bg[0] == bg[1] {
		t.Errorf("light and dark have the same background %v", bg)
	}
	b.set("#model", "stories:latest")
	b.set("#temperature", "0")
	b.set("#num-predict", "30")
	b.do(chromedp.SendKeys(chromedp.CSS("#prompt"), "Once upon a time"))
	b.click("#send")
	b.waitFor("the answer", `document.querySelector('.msg.assistant[data-state=done]')`, 60*time.Second)
	m := b.lastAssistant()
	if m.Content != want {
		t.Fatalf("the console got %q, the API %q", m.Content, want)
	}
	if m.Chunks < 10 {
		t.Errorf("the answer came in %d chunks: not streamed", m.Chunks)
	}
	shown := eval[string](b, `document.querySelector('.msg.assistant .content').textContent`)
	figures := eval[string](b, `document.querySelector('.msg.assistant .figures').textContent`)
	// (Markdown shows a line break as <br>, which has no text.)
	if strings.Join(strings.Fields(shown), "") != strings.Join(strings.Fields(want), "") || !strings.Contains(figures, "30 tokens") ||
		!strings.Contains(figures, "tok/s") || !strings.Contains(figures, "first token") {
		t.Errorf("shown %q, figures %q", shown, figures)
	}
	t.Logf("figures: %s", figures)
	// Regenerate gives the same greedy answer again.
	b.click(".msg.assistant .regenerate")
	b.waitFor("the regenerated answer", `document.querySelector('.msg.assistant[data-state=done] .regenerate')`, 60*time.Second)
	if n := eval[int](b, `document.querySelectorAll('.msg').length`); n != 2 {
		t.Errorf("%d messages after regenerate", n)
	}
	if m := b.lastAssistant(); m.Content != want {
		t.Errorf("regenerated %q", m.Content)
	}
	// Edit puts the question back in the composer, drops it and what
	// followed, and resends.
	b.click(".msg.user .edit")
	if got := eval[string](b, `document.querySelector('#prompt').value + '|' + document.querySelectorAll('.msg').length`); got != "Once upon a time|0" {
		t.Errorf("after edit: %q", got)
	}
	b.click("#send")
	b.waitFor("the answer to the edited question", `document.querySelector('.msg.assistant[data-state=done]')`, 60*time.Second)
	if m := b.lastAssistant(); m.Content != want {
		t.Errorf("resent %q", m.Content)
	}
	// The conversation survives a reload (local storage).
	b.do(chromedp.Reload())
	b.waitFor("the stored conversation", `document.querySelector('.msg.assistant[data-state=done]')`, 30*time.Second)
	if got := eval[string](b, `document.querySelector('.msg.user').textContent`); !strings.Contains(got, "Once upon a time") {
		t.Errorf("after reload: %q", got)
	}
	dir := screenshots(t)
	b.shoot(dir, "chat")
	b.do(chromedp.Navigate(ts.URL + "/ui/#/running"))
	b.waitFor("the running model", `document.querySelector('#ps-table tr[data-model="stories:latest"]')`, 30*time.Second)
	b.waitFor("a chart", `document.querySelectorAll('.chart').length === 6`, 60*time.Second)
	// The chats' time to first token, from /metrics' histogram.
	if got := eval[string](b, `document.querySelector('.chart[data-chart=ttft] strong').textContent`); !strings.HasSuffix(got, " ms") && !strings.HasSuffix(got, " s") {
		t.Errorf("time to first token chart shows %q", got)
	}
	b.waitFor("a second sample", `document.querySelector('.chart[data-chart=running] polyline')`, 60*time.Second)
	b.shoot(dir, "running")
	b.do(chromedp.Navigate(ts.URL + "/ui/#/models"))
	b.waitFor("the models table", `document.querySelector('#models-table tr[data-model="stories:latest"]')`, 30*time.Second)
	b.shoot(dir, "models")
}

// Stop a long answer mid-stream: the fetch is aborted, the message kept
// as stopped, and the slot is freed (the Running view shows it idle).
func TestUIStop(t *testing.T) {
	ts := startServer(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(ts.URL + "/ui/"))
	b.waitFor("the model picker", `document.querySelector('#model option[value="stories:latest"]')`, 30*time.Second)
	b.set("#model", "stories:latest")
	b.set("#num-predict", "-1") // no end but the stop button
	b.do(chromedp.SendKeys(chromedp.CSS("#prompt"), "Once upon a time"))
	b.click("#send")
	b.waitFor("tokens streaming in", `+(document.querySelector('.msg.assistant[data-state=streaming]') || {dataset: {}}).dataset.chunks > 20`, 60*time.Second)
	busy := psSlots(t, ts)
	// Running shows the busy slot while the answer streams on; back in
	// the chat, the answer is still coming and Stop still stops it.
	eval[bool](b, `(location.hash = '#/running', true)`)
	b.waitFor("the busy slot", `(document.querySelector('#ps-table tr[data-model="stories:latest"] .slots-text') || {}).textContent === '1 / 4' && document.querySelectorAll('#ps-table .slot.busy').length === 1`, 20*time.Second)
	b.shoot(screenshots(t), "running-busy")
	eval[bool](b, `(location.hash = '#/chat', true)`)
	b.waitFor("the answer still streaming", `document.querySelector('.msg.assistant[data-state=streaming]') && !document.querySelector('#stop').hidden`, 60*time.Second)
	before := eval[int](b, `+document.querySelector('.msg.assistant').dataset.chunks`)
	b.waitFor("more tokens", fmt.Sprintf(`+document.querySelector('.msg.assistant').dataset.chunks > %d`, before), 60*time.Second)
	b.click("#stop")
	b.waitFor("the stopped message", `document.querySelector('.msg.assistant[data-state=stopped]')`, 60*time.Second)
	m := b.lastAssistant()
	if !m.Stopped || m.Content == "" || m.Error != "" {
		t.Fatalf("stopped message %+v", m)
	}
	if busy != 1 {
		t.Errorf("%d slots busy while streaming", busy)
	}
	testkit.Eventually(t, 10*time.Second, "the slot to be freed after stop", func() bool { return psSlots(t, ts) == 0 })
	b.do(chromedp.Navigate(ts.URL + "/ui/#/running"))
	b.waitFor("idle slots", `(document.querySelector('#ps-table tr[data-model="stories:latest"] .slots-text') || {}).textContent === '0 / 4'`, 20*time.Second)
	if n := eval[int](b, `document.querySelectorAll('#ps-table .slot.busy').length`); n != 0 {
		t.Errorf("%d busy slots shown", n)
	}
}

// psSlots is how many slots of the demo model are busy (/api/ps).
func psSlots(t *testing.T, ts *testServer) int {
	t.Helper()
	code, _, body := do(t, "GET", ts.URL+"/api/ps", "", "")
	var ps struct {
		Models []struct {
			Name    string
			Tadpole struct {
				SlotsBusy int `json:"slots_busy"`
			}
		}
	}
	if code != 200 || json.Unmarshal(body, &ps) != nil {
		t.Fatalf("/api/ps: %d %s", code, body)
	}
	for _, m := range ps.Models {
		if m.Name == "stories:latest" {
			return m.Tadpole.SlotsBusy
		}
	}
	return -1
}

const xss = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`

// Markup in a model's SYSTEM, in the user's text, in a model's answer
// and in an imported conversation shows as text: no element is made
// from it, no script runs, the CSP is never even tested.
func TestUIEscapesMarkup(t *testing.T) {
	ts := startServer(t)
	body, _ := json.Marshal(map[string]any{"model": "xss", "from": "stories", "system": xss, "stream": false})
	if code, _, b := do(t, "POST", ts.URL+"/api/create", "", string(body)); code != 200 {
		t.Fatalf("create: %d %s", code, b)
	}
	b := newBrowser(t)
	// A stored conversation whose answer holds markup and a javascript:
	// link, as a model could write it.
	conv, _ := json.Marshal([]map[string]any{{"id": "c1", "title": xss, "model": "xss:latest", "messages": []map[string]any{
		{"role": "user", "content": xss},
		{"role": "assistant", "content": xss + "\n\n[click](javascript:window.__xss=3) **bold** `" + xss + "`\n\n```html\n" + xss + "\n```"},
	}}})
	b.do(chromedp.Navigate(ts.URL + "/ui/"))
	b.waitFor("the first load", `document.querySelector('#model option[value="xss:latest"]')`, 30*time.Second)
	eval[bool](b, fmt.Sprintf(`(localStorage.setItem('tadpole.conversations', %q), localStorage.setItem('tadpole.current', 'c1'), true)`, conv))
	b.do(chromedp.Reload())
	b.waitFor("the model picker", `document.querySelector('#model option[value="xss:latest"]')`, 30*time.Second)
	b.set("#model", "xss:latest")
	b.waitFor("the model's system prompt", `document.querySelector('#model-system .model-system-text')`, 60*time.Second)
	if got := eval[string](b, `document.querySelector('#model-system .model-system-text').textContent`); got != xss {
		t.Errorf("model system shown as %q", got)
	}
	if got := eval[string](b, `document.querySelector('.msg.user .content').textContent`); got != xss {
		t.Errorf("user text shown as %q", got)
	}
	if got := eval[string](b, `document.querySelector('.msg.assistant .content p').textContent`); got != xss {
		t.Errorf("answer shown as %q", got)
	}
	if got := eval[string](b, `document.querySelector('.convs li a').textContent`); got != xss {
		t.Errorf("title shown as %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('.msg.assistant strong, .msg.assistant pre code').length`); n != 2 {
		t.Errorf("markdown: %d of bold and code block", n)
	}
	// The user sends markup too; the demo model answers.
	b.set("#num-predict", "5")
	b.do(chromedp.SendKeys(chromedp.CSS("#prompt"), xss))
	b.click("#send")
	b.waitFor("the answer", `document.querySelectorAll('.msg.assistant[data-state=done]').length === 2`, 60*time.Second)
	b.do(chromedp.Navigate(ts.URL + "/ui/#/models"))
	b.waitFor("the models table", `document.querySelector('#models-table tr[data-model="xss:latest"] .model-system-text')`, 30*time.Second)
	if got := eval[string](b, `document.querySelector('#models-table tr[data-model="xss:latest"] .model-system-text').textContent`); got != xss {
		t.Errorf("Models view shows SYSTEM as %q", got)
	}
	if !eval[bool](b, `document.querySelector('#models-table tr[data-model="xss:latest"] pre').textContent.includes('<img src=x onerror')`) {
		t.Error("the Modelfile is not shown as text")
	}
	// Back to the chat; import a conversation file with markup in its
	// title, its answer and a tool call's name.
	b.do(chromedp.Navigate(ts.URL + "/ui/#/chat"))
	b.waitFor("the conversation", `document.querySelectorAll('.msg.assistant[data-state=done]').length === 2`, 30*time.Second)
	imported, _ := json.Marshal(map[string]any{"conversations": []map[string]any{{"id": "imp", "title": xss, "messages": []map[string]any{
		{"role": "user", "content": "hi"},
		{"role": "assistant", "content": xss, "tool_calls": []map[string]any{{"function": map[string]any{"name": xss, "arguments": map[string]any{"x": xss}}}},
			"stats": map[string]any{"tps": xss}},
		{"role": "system", "content": "dropped: not a chat turn"},
	}}}})
	file := filepath.Join(t.TempDir(), "conversations.json")
	if err := os.WriteFile(file, imported, 0o644); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.SetUploadFiles(chromedp.CSS("#import-file"), []string{file}))
	b.waitFor("the import", `document.getElementById('banner').textContent.includes('Imported 1 conversation')`, 60*time.Second)
	b.click(".convs li:nth-child(2) a")
	b.waitFor("the imported conversation", `document.querySelector('.msg.assistant .tool-call')`, 60*time.Second)
	if got := eval[string](b, `document.querySelector('.msg.assistant .content p').textContent`); got != xss {
		t.Errorf("imported answer shown as %q", got)
	}
	if got := eval[string](b, `document.querySelector('.msg.assistant .tool-call code').textContent`); !strings.HasPrefix(got, xss+" ") {
		t.Errorf("imported tool call shown as %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('.msg').length`); n != 2 {
		t.Errorf("%d imported messages shown (the system turn is dropped)", n)
	}
	for _, check := range []string{
		`document.querySelectorAll('img[src="x"], script:not([src]), [onerror], a[href^="javascript"]').length === 0`,
		`window.__xss === undefined`,
		`window.__cspViolations.length === 0`,
	} {
		if !eval[bool](b, check) {
			t.Errorf("not true: %s (CSP violations: %v)", check, eval[[]string](b, `window.__cspViolations`))
		}
	}
}

// With keys configured the console asks for one and refuses a bad one;
// an inference key chats but sees no Keys view and no model management
// (and the server refuses its delete anyway); an admin key sees both.
// The key lives in session storage only. Screenshots of every view.
func TestUIKeys(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"user-key", "admin-key admin"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	dir := screenshots(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(ts.URL + "/ui/"))
	b.waitFor("the key prompt", `document.querySelector('#key')`, 30*time.Second)
	if eval[bool](b, `!!document.querySelector('#model')`) || !eval[bool](b, `document.querySelector('a[data-view=keys]').hidden`) {
		t.Fatal("the console shows the chat or the Keys view without a key")
	}
	b.shoot(dir, "signin")
	login := func(key string) {
		b.t.Helper()
		b.set("#key", key)
		b.click("form.login button[type=submit]")
	}
	login("wrong-key")
	b.waitFor("the refusal", `(document.querySelector('form.login .error') || {}).textContent === 'The server refused this key.'`, 60*time.Second)
	if eval[string](b, `sessionStorage.getItem('tadpole.key') || ''`) != "" {
		t.Error("a refused key was kept")
	}
	login("user-key")
	b.waitFor("the chat with the models", `document.querySelector('#model option[value="stories:latest"]')`, 30*time.Second)
	if got := eval[string](b, `document.getElementById('whoami').textContent`); got != "inference key" {
		t.Errorf("whoami %q", got)
	}
	if !eval[bool](b, `document.querySelector('a[data-view=keys]').hidden`) {
		t.Error("an inference key sees the Keys link")
	}
	if eval[string](b, `sessionStorage.getItem('tadpole.key')`) != "user-key" ||
		eval[bool](b, `Object.keys(localStorage).some(k => localStorage.getItem(k).includes('user-key'))`) {
		t.Error("the key is not in session storage only")
	}
	b.do(chromedp.Navigate(ts.URL + "/ui/#/keys"))
	b.waitFor("the refusal of the Keys view", `document.getElementById('view').textContent.includes('needs an admin key')`, 60*time.Second)
	b.do(chromedp.Navigate(ts.URL + "/ui/#/models"))
	b.waitFor("the models", `document.querySelector('#models-table tr[data-model="stories:latest"]')`, 30*time.Second)
	if eval[bool](b, `!!document.querySelector('#pull, #models-table .confirm, .copy-dest')`) {
		t.Error("an inference key is offered model management")
	}
	// The page's own origin reaches the API; the server refuses the
	// inference key's delete.
	status := eval[int](b, `fetch('/api/delete', {method: 'DELETE', headers: {'Content-Type': 'application/json', Authorization: 'Bearer ' + sessionStorage.getItem('tadpole.key')}, body: JSON.stringify({model: 'stories'})}).then(r => r.status)`)
	if status != 403 {
		t.Errorf("delete with an inference key from the page: %d", status)
	}

	b.click("#signout")
	b.waitFor("the key prompt", `document.querySelector('#key')`, 60*time.Second)
	login("admin-key")
	b.waitFor("the models as admin", `document.querySelector('#models-table tr[data-model="stories:latest"] .confirm')`, 30*time.Second)
	if !eval[bool](b, `!document.querySelector('a[data-view=keys]').hidden`) {
		t.Error("an admin key does not see the Keys link")
	}
	// Copy, then delete the copy with its confirmation.
	b.set(`#models-table tr[data-model="stories:latest"] .copy-dest`, "copied")
	b.click(`#models-table tr[data-model="stories:latest"] form.inline button`)
	b.waitFor("the copy", `document.querySelector('#models-table tr[data-model="copied:latest"]')`, 30*time.Second)
	b.click(`#models-table tr[data-model="copied:latest"] .confirm button`)
	b.click(`#models-table tr[data-model="copied:latest"] .confirm button[data-confirm=yes]`)
	b.waitFor("the copy gone", `document.querySelector('#models-table tr[data-model="stories:latest"]') && !document.querySelector('#models-table tr[data-model="copied:latest"]')`, 30*time.Second)
	if code, _, body := do(t, "GET", ts.URL+"/api/tags", "admin-key", ""); code != 200 || strings.Contains(string(body), "copied") {
		t.Errorf("after the delete: %d %s", code, body)
	}
	b.shoot(dir, "models-admin")

	// A chat as admin, a job, then every view.
	b.do(chromedp.Navigate(ts.URL + "/ui/#/chat"))
	b.waitFor("the model picker", `document.querySelector('#model option[value="stories:latest"]')`, 30*time.Second)
	b.set("#model", "stories:latest")
	b.set("#num-predict", "40")
	b.do(chromedp.SendKeys(chromedp.CSS("#prompt"), "Once upon a time"))
	b.click("#send")
	b.waitFor("the answer", `document.querySelector('.msg.assistant[data-state=done]')`, 60*time.Second)
	job := submitJob(t, ts, "admin-key", "/api/v1/cowsay", `{"message":"hello from the console test"}`)
	b.do(chromedp.Navigate(ts.URL + "/ui/#/jobs"))
	b.waitFor("the completed job", fmt.Sprintf(`document.querySelector('#jobs-table tr[data-job=%q][data-state=completed]')`, job.ID), 30*time.Second)
	b.click(fmt.Sprintf(`#jobs-table tr[data-job=%q] button`, job.ID))
	b.waitFor("the cow", `document.querySelector('#job-result').textContent.includes('hello from the console test')`, 60*time.Second)
	b.shoot(dir, "jobs")
	b.do(chromedp.Navigate(ts.URL + "/ui/#/keys"))
	b.waitFor("the usage table", `document.querySelectorAll('#keys-table tbody tr').length === 2`, 30*time.Second)
	ids := eval[[]string](b, `[...document.querySelectorAll('#keys-table tbody tr')].map(r => r.dataset.key).sort()`)
	for _, id := range ids {
		if len(id) != 12 {
			t.Errorf("key id %q", id)
		}
	}
	if eval[bool](b, `document.body.textContent.includes('admin-key') || document.body.textContent.includes('user-key')`) {
		t.Error("the page shows a key's secret")
	}
	b.shoot(dir, "keys")
	b.do(chromedp.Navigate(ts.URL + "/ui/#/running"))
	b.waitFor("the running model", `document.querySelector('#ps-table tr[data-model="stories:latest"]')`, 30*time.Second)
	b.click(`#ps-table tr[data-model="stories:latest"] .unload`)
	b.waitFor("nothing loaded", `document.querySelector('#ps-empty')`, 30*time.Second)
}

// A thinking model (the scripted test model, Qwen3's template): the
// Think switch appears, and the reasoning is shown folded apart from the
// answer, here a tool call.
func TestUIThinking(t *testing.T) {
	ts := startStoreServer(t, testModels(t, "script"), nil)
	b := newBrowser(t)
	b.do(chromedp.Navigate(ts.URL + "/ui/"))
	b.waitFor("the model picker", `document.querySelector('#model option[value="script:latest"]')`, 30*time.Second)
	b.set("#model", "script:latest")
	b.waitFor("the Think switch", `document.querySelector('#caps').textContent.includes('thinking') && !document.querySelector('#think').closest('label').hidden`, 60*time.Second)
	b.set("#temperature", "0")
	b.set("#num-predict", "40")
	b.do(chromedp.SendKeys(chromedp.CSS("#prompt"), "What is the weather in Paris?"))
	b.click("#send")
	b.waitFor("the answer", `document.querySelector('.msg.assistant[data-state=done]')`, 60*time.Second)
	m := b.lastAssistant()
	if got := eval[string](b, `document.querySelector('.msg.assistant details.thinking .thinking-text').textContent`); strings.TrimSpace(got) != testmodels.ScriptThinking {
		t.Errorf("reasoning shown %q (stored %+v)", got, m)
	}
	if eval[bool](b, `document.querySelector('.msg.assistant details.thinking').open`) {
		t.Error("the reasoning is not folded")
	}
	if got := eval[string](b, `document.querySelector('.msg.assistant').textContent`); !strings.Contains(got, testmodels.ScriptTool) {
		t.Errorf("the answer %q does not show the call", got)
	}
	b.click(".msg.assistant details.thinking summary")
	b.shoot(screenshots(t), "chat-thinking")
}

// A vision model: the attach button appears, a picked image goes with
// the message, and the answer is the API's for the same image (and
// differs from the answer for another image).
func TestUIVision(t *testing.T) {
	ts := startVisionServer(t)
	red := solidPNG(t, 64, color.NRGBA{220, 30, 30, 255})
	blue := solidPNG(t, 64, color.NRGBA{30, 30, 220, 255})
	chat := func(img []byte) string {
		return apiChat(t, ts, fmt.Sprintf(`{"model":"vision","messages":[{"role":"user","content":"What is this?","images":[%q]}],"stream":false,"options":{"temperature":0,"num_predict":12}}`,
			base64.StdEncoding.EncodeToString(img)))
	}
	want, other := chat(red), chat(blue)
	if want == other {
		t.Fatalf("the vision model answers %q for both images", want)
	}
	file := filepath.Join(t.TempDir(), "red.png")
	if err := os.WriteFile(file, red, 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(chromedp.Navigate(ts.URL + "/ui/"))
	b.waitFor("the model picker", `document.querySelector('#model option[value="vision:latest"]')`, 30*time.Second)
	b.set("#model", "stories:latest")
	b.waitFor("no attach for the demo model", `document.querySelector('#attach').hidden`, 60*time.Second)
	b.set("#model", "vision:latest")
	b.waitFor("the attach button", `!document.querySelector('#attach').hidden && document.querySelector('#caps').textContent.includes('vision')`, 60*time.Second)
	b.set("#temperature", "0")
	b.set("#num-predict", "12")
	b.do(chromedp.SetUploadFiles(chromedp.CSS("#attach-file"), []string{file}))
	b.waitFor("the thumbnail", `document.querySelector('#thumbs img')`, 60*time.Second)
	b.do(chromedp.SendKeys(chromedp.CSS("#prompt"), "What is this?"))
	b.click("#send")
	b.waitFor("the answer", `document.querySelector('.msg.assistant[data-state=done]')`, 60*time.Second)
	if m := b.lastAssistant(); m.Content != want {
		t.Fatalf("the console got %q for the red image; the API %q (and %q for blue)", m.Content, want, other)
	}
	if !eval[bool](b, `document.querySelector('.msg.user img').naturalWidth === 64`) {
		t.Error("the sent image is not shown")
	}
}

// Pull from a local test registry: the progress bar reaches 100% and the
// model appears in the list; a missing model shows the registry's error.
func TestUIPull(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	ts := startStoreServer(t, "", func(c *Config) { c.AllowRegistries = []string{reg.Host()} })
	path := filepath.Join(t.TempDir(), "bigram.gguf")
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reg.PublishModel("library/chatty", "latest", data, "Be nice.")
	name := reg.Host() + "/library/chatty:latest"
	missing := reg.Host() + "/library/missing"
	// The API's own error for the missing model, for comparison.
	code, _, body := do(t, "POST", ts.URL+"/api/pull", "", fmt.Sprintf(`{"model":%q,"insecure":true,"stream":false}`, missing))
	var apiErr struct{ Error string }
	if code < 400 || json.Unmarshal(body, &apiErr) != nil || apiErr.Error == "" {
		t.Fatalf("API pull of a missing model: %d %s", code, body)
	}

	b := newBrowser(t)
	b.do(chromedp.Navigate(ts.URL + "/ui/#/models"))
	b.waitFor("the models table", `document.querySelector('#models-table tr[data-model="stories:latest"]')`, 30*time.Second)
	b.set("#pull-name", name)
	b.click("#pull-insecure")
	b.click("#pull")
	b.waitFor("the finished pull", `document.querySelector('.pull[data-state]')`, 60*time.Second)
	state := eval[string](b, `document.querySelector('.pull').dataset.state + ' ' + document.querySelector('.pull').textContent`)
	if !strings.HasPrefix(state, "done ") {
		t.Fatalf("pull: %s", state)
	}
	if !eval[bool](b, `(p => p.value === p.max && p.max > 0)(document.querySelector('.pull progress'))`) {
		t.Error("the progress bar is not full")
	}
	b.waitFor("the pulled model in the list", fmt.Sprintf(`document.querySelector('#models-table tr[data-model=%q]')`, name), 30*time.Second)
	if eval[string](b, `localStorage.getItem('tadpole.pulls')`) != "[]" {
		t.Error("a finished pull is still remembered")
	}
	b.shoot(screenshots(t), "models-pulled")

	b.set("#pull-name", missing)
	b.click("#pull")
	b.waitFor("the failed pull", `document.querySelectorAll('.pull[data-state=error]').length === 1`, 60*time.Second)
	if got := eval[string](b, `document.querySelector('.pull[data-state=error] .error').textContent`); got != "failed: "+apiErr.Error {
		t.Errorf("the console shows %q; the API's error is %q", got, apiErr.Error)
	}

	// Create from a Modelfile; a bad one shows the server's error.
	b.click("details.create summary")
	b.set("#create-name", "brief")
	b.set("#create-modelfile", "FROM nope-not-here\n")
	b.click("details.create button[type=submit]")
	b.waitFor("the refused create", `document.querySelector('#create-status .error')`, 30*time.Second)
	b.set("#create-modelfile", "FROM stories\nSYSTEM Be brief.\nPARAMETER temperature 0.5\n")
	b.click("details.create button[type=submit]")
	b.waitFor("the created model", `(document.querySelector('#models-table tr[data-model="brief:latest"] .model-system-text') || {}).textContent === 'Be brief.'`, 30*time.Second)
	if got := eval[string](b, `document.querySelector('#create-status').textContent`); got != "success" {
		t.Errorf("create status %q", got)
	}
}

// The server goes away mid-answer: the console says the connection was
// lost, keeps the conversation, and Retry answers once the server is
// back on the same address.
func TestUIServerRestart(t *testing.T) {
	testkit.Full(t, "a browser on the real engine")
	dir := testModels(t, "stories")
	cfg := Config{ModelsDir: dir, Sched: testSched(2, 256)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	first := New(cfg)
	go first.Serve(ln)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			first.Shutdown(ctx)
		}
	}
	t.Cleanup(stop)

	b := newBrowser(t)
	b.do(chromedp.Navigate("http://" + addr + "/ui/"))
	b.waitFor("the model picker", `document.querySelector('#model option[value="stories:latest"]')`, 30*time.Second)
	b.set("#model", "stories:latest")
	b.set("#num-predict", "-1")
	b.do(chromedp.SendKeys(chromedp.CSS("#prompt"), "Once upon a time"))
	b.click("#send")
	b.waitFor("tokens streaming in", `+(document.querySelector('.msg.assistant[data-state=streaming]') || {dataset: {}}).dataset.chunks > 20`, 60*time.Second)
	stop()
	b.waitFor("the lost connection", `document.querySelector('.msg.assistant[data-state=error]')`, 20*time.Second)
	m := b.lastAssistant()
	if !strings.Contains(m.Error, "Connection lost") || m.Content == "" {
		t.Errorf("cut message %+v", m)
	}
	if !eval[bool](b, `!document.getElementById('banner').hidden && document.getElementById('banner').textContent.includes('Connection lost')`) {
		t.Error("no connection-lost banner")
	}
	b.shoot(screenshots(t), "chat-connection-lost")

	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening again on %s: %v", addr, err)
	}
	serveListener(t, New(cfg), ln2)
	b.set("#num-predict", "8")
	b.click("#banner button") // Retry
	b.waitFor("the answer after the restart", `document.querySelector('.msg.assistant[data-state=done]')`, 60*time.Second)
	if n := eval[int](b, `document.querySelectorAll('.msg').length`); n != 2 {
		t.Errorf("%d messages after the retry", n)
	}
	if m := b.lastAssistant(); m.Error != "" || m.Content == "" || m.Stats["eval_count"] != float64(8) {
		t.Errorf("after the retry: %+v", m)
	}
	if got := eval[string](b, `document.querySelector('.msg.user').textContent`); !strings.Contains(got, "Once upon a time") {
		t.Errorf("the question is gone: %q", got)
	}
}
