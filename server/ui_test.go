package server

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/ui"
)

// The console's files are served at /ui/ with a strict CSP, without a
// key even when keys are configured (they hold no data), while the API
// still needs one; GET / still answers the plain probe.
func TestUIServed(t *testing.T) {
	a, err := auth.New(auth.Config{Keys: []string{"user-key"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := startAPIServer(t, apiOptions{auth: a})
	get := func(path string) (*http.Response, string) {
		t.Helper()
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	res, body := get("/ui/")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, `src="js/main.js"`) {
		t.Fatalf("/ui/: %d %s %.200s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); csp != ui.CSP || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("CSP %q", csp)
	}
	if res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("headers %v", res.Header)
	}
	// No inline script or style anywhere in the page.
	if strings.Contains(body, "<script>") || strings.Contains(body, "style=") || regexp.MustCompile(`\son[a-z]+=`).MatchString(body) {
		t.Fatalf("inline code in index.html")
	}
	for path, typ := range map[string]string{"/ui/js/main.js": "text/javascript", "/ui/app.css": "text/css", "/ui/icon.svg": "image/svg+xml"} {
		res, body := get(path)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), typ) || body == "" || res.Header.Get("Content-Security-Policy") != ui.CSP {
			t.Errorf("%s: %d %q", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	if res, _ := get("/ui"); res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res, body := get("/ui/nope.js"); res.StatusCode != 404 || !strings.Contains(body, "no such console file") {
		t.Errorf("/ui/nope.js: %d %s", res.StatusCode, body)
	}
	if res, body := get("/ui/../api/tags"); res.StatusCode != 404 || strings.Contains(body, "stories") {
		t.Errorf("/ui/../api/tags: %d %s", res.StatusCode, body)
	}
	if res, body := get("/api/tags"); res.StatusCode != 401 {
		t.Errorf("/api/tags without a key: %d %s", res.StatusCode, body)
	}
	if res, body := get("/"); res.StatusCode != 200 || body != "Tadpole is running" {
		t.Errorf("/: %d %q", res.StatusCode, body)
	}
	t.Logf("console assets embedded: %d bytes", ui.Size())
	if n := ui.Size(); n < 10_000 || n > 500_000 {
		t.Errorf("console assets: %d bytes", n)
	}
}

// A page's own origin may call the API when its Host cannot be a
// rebinding attacker's: the name the server was told to listen on (and
// IP addresses, localhost); another origin is still refused.
func TestUISameOrigin(t *testing.T) {
	srv := New(Config{ModelsDir: t.TempDir(), Hosts: []string{"tadpole.test"},
		Sched: testSched(1, 256)})
	ts := serveForTest(t, srv)
	port := ts.URL[strings.LastIndex(ts.URL, ":"):]
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"tadpole.test" + port, "http://tadpole.test" + port, 200},
		{"tadpole.test" + port, "http://evil.test" + port, 403},
		{"tadpole.test" + port, "https://tadpole.test" + port, 403}, // not this plain-HTTP listener's origin
		{"tadpole.test" + port, "http://tadpole.test:1", 403},
		{"127.0.0.1" + port, "http://127.0.0.1" + port, 200},
	} {
		req, _ := http.NewRequest("POST", ts.URL+"/api/show", strings.NewReader(`{"model":"nope"}`))
		req.Host = tc.host
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got := res.StatusCode
		if got == 404 { // allowed through to the handler: the model does not exist
			got = 200
		}
		if got != tc.want {
			t.Errorf("Host %s, Origin %s: %d %s", tc.host, tc.origin, res.StatusCode, b)
		}
	}
}
