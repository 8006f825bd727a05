package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/sched"
)

// send sends a request with the given Host (if set) and headers and
// returns the status and body.
func send(t *testing.T, method, url, host, body string, headers ...string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// hasModel reports whether the server lists the model.
func hasModel(t *testing.T, ts *testServer, name string) bool {
	t.Helper()
	list, err := ts.Client.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Models {
		if m.Name == name || m.Name == name+":latest" {
			return true
		}
	}
	return false
}

// DNS rebinding: on a loopback listener only this machine's names are
// served, in every dialect's error shape.
func TestHostGuard(t *testing.T) {
	srv := New(Config{ModelsDir: t.TempDir(), Sched: sched.Config{Threads: 1}, Hosts: []string{"tadpole.example"}})
	ts := serveForTest(t, srv)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"attacker.example:" + port, false},
		{"attacker.example", false},
		{"localhost.attacker.example", false},
		{"192.168.1.10:" + port, false},
		{"localhost:" + port, true},
		{"LOCALHOST.", true},
		{"127.0.0.1:" + port, true},
		{"127.1.2.3", true},
		{"[::1]:" + port, true},
		{"[::1]", true},
		{"app.localhost:" + port, true},
		{"tadpole.example:" + port, true},
		{"Tadpole.Example", true},
	} {
		for _, path := range []struct{ dialect, path string }{{"ollama", "/api/tags"}, {"openai", "/v1/models"}, {"anura", "/api/v1/models"}} {
			code, b := send(t, "GET", ts.URL+path.path, tc.host, "")
			what := fmt.Sprintf("GET %s with Host %s", path.path, tc.host)
			switch {
			case tc.ok && code != 200:
				t.Errorf("%s: %d %s", what, code, b)
			case !tc.ok && code != 403:
				t.Errorf("%s: %d %s", what, code, b)
			case !tc.ok:
				checkShape(t, what, path.dialect, 403, b, "host_not_allowed")
				if !strings.Contains(string(b), "DNS rebinding") {
					t.Errorf("%s: %s", what, b)
				}
			}
		}
	}
	// A listener on a non-loopback address takes any Host: the operator
	// chose to serve other names. (Tests listen on loopback only, so this
	// one hands the handler the context Serve gives such a connection.)
	for _, addr := range []net.IP{net.IPv4zero, net.ParseIP("192.168.1.10"), net.IPv6unspecified} {
		req := httptest.NewRequest("GET", "/api/tags", nil)
		req.Host = "attacker.example"
		req = req.WithContext(context.WithValue(req.Context(), listenerKey{}, &net.TCPAddr{IP: addr, Port: 11434}))
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("listener on %s, foreign Host: %d %s", addr, rec.Code, rec.Body)
		}
	}
}

// A web page from a foreign origin can do nothing, not even with a
// "simple" request a browser sends without a preflight.
func TestOriginGuard(t *testing.T) {
	ts := startServer(t)
	copyBody := `{"source":"stories","destination":"pwned"}`
	code, b := send(t, "POST", ts.URL+"/api/copy", "", copyBody, "Origin", "http://attacker.example", "Content-Type", "text/plain")
	if code != 403 {
		t.Fatalf("cross-origin text/plain copy: %d %s", code, b)
	}
	checkShape(t, "cross-origin copy", "ollama", 403, b, "")
	if !strings.Contains(string(b), "attacker.example") || !strings.Contains(string(b), "--origins") {
		t.Errorf("message: %s", b)
	}
	// Every method, JSON too, every dialect, and preflights.
	for _, tc := range []struct{ dialect, method, path, body string }{
		{"ollama", "POST", "/api/copy", copyBody},
		{"ollama", "GET", "/api/tags", ""},
		{"ollama", "DELETE", "/api/delete", `{"model":"stories"}`},
		{"openai", "POST", "/v1/chat/completions", `{"model":"stories","messages":[{"role":"user","content":"hi"}]}`},
		{"openai", "POST", "/api/chat/completions", `{"model":"stories","messages":[{"role":"user","content":"hi"}]}`},
		{"openai", "GET", "/v1/models", ""},
		{"anura", "POST", "/api/v1/cowsay", `{"message":"moo"}`},
		{"", "OPTIONS", "/api/copy", ""},
	} {
		for _, origin := range []string{"http://attacker.example", "null", "http://localhost.attacker.example"} {
			code, b := send(t, tc.method, ts.URL+tc.path, "", tc.body, "Origin", origin, "Content-Type", "application/json", "Access-Control-Request-Method", "POST")
			what := fmt.Sprintf("%s %s from %s", tc.method, tc.path, origin)
			if code != 403 {
				t.Errorf("%s: %d %s", what, code, b)
				continue
			}
			checkShape(t, what, tc.dialect, 403, b, "origin_not_allowed")
		}
	}
	if !hasModel(t, ts, "stories") || hasModel(t, ts, "pwned") {
		t.Fatal("a cross-origin request changed the models")
	}
	// An allowed origin still works (and reads the answer).
	code, b = send(t, "POST", ts.URL+"/api/copy", "", copyBody, "Origin", "http://localhost:3000", "Content-Type", "application/json")
	if code != 200 || !hasModel(t, ts, "pwned") {
		t.Fatalf("copy from an allowed origin: %d %s", code, b)
	}
}

// Bodies must be declared as JSON (curl -d's form type and no type are
// taken, see bodyTypes), so an HTML form cannot post one; blob uploads
// also take octet-stream.
func TestBodyTypeGuard(t *testing.T) {
	ts := startServer(t)
	copyBody := `{"source":"stories","destination":"copy-%d"}`
	for i, tc := range []struct {
		contentType string
		ok          bool
	}{
		{"text/plain", false},
		{"text/plain;charset=UTF-8", false},
		{"multipart/form-data; boundary=x", false},
		{"application/xml", false},
		{"application/json;;", false},
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON", true},
		{"application/x-www-form-urlencoded", true},
		{"", true},
	} {
		name := fmt.Sprintf("copy-%d", i)
		code, b := send(t, "POST", ts.URL+"/api/copy", "", fmt.Sprintf(copyBody, i), "Content-Type", tc.contentType)
		if tc.ok != (code == 200) || !tc.ok && code != 415 {
			t.Errorf("copy with %q: %d %s", tc.contentType, code, b)
			continue
		}
		if !tc.ok {
			checkShape(t, tc.contentType, "ollama", 415, b, "")
			if !strings.Contains(string(b), "application/json") {
				t.Errorf("%q: %s", tc.contentType, b)
			}
		}
		if hasModel(t, ts, name) != tc.ok {
			t.Errorf("copy with %q: made %v", tc.contentType, !tc.ok)
		}
	}
	// Each dialect answers in its shape.
	chat := `{"model":"stories","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	for _, tc := range []struct{ dialect, path string }{
		{"openai", "/v1/chat/completions"}, {"openai", "/api/chat/completions"}, {"openai", "/v1/embeddings"},
		{"anura", "/api/v1/chat/completions"}, {"ollama", "/api/generate"},
	} {
		code, b := send(t, "POST", ts.URL+tc.path, "", chat, "Content-Type", "text/plain")
		if code != 415 {
			t.Errorf("%s: %d %s", tc.path, code, b)
			continue
		}
		checkShape(t, tc.path, tc.dialect, 415, b, "unsupported_media_type")
	}
	// No body needs no type.
	if code, b := send(t, "POST", ts.URL+"/api/generate", "", "", "Content-Type", "text/plain"); code == 415 {
		t.Errorf("an empty POST: %d %s", code, b)
	}
	// Blobs: raw bytes as octet-stream, JSON (Ollama's client) or no type.
	for i, tc := range []struct {
		contentType string
		want        int
	}{{"application/octet-stream", 201}, {"application/json", 201}, {"", 201}, {"text/plain", 415}} {
		data := []byte(fmt.Sprintf("blob %d", i))
		sum := sha256.Sum256(data)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		req, _ := http.NewRequest("POST", ts.URL+"/api/blobs/"+digest, bytes.NewReader(data))
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("blob as %q: %d, want %d", tc.contentType, resp.StatusCode, tc.want)
		}
	}
	// Ollama's official client uploads blobs as application/json:
	// compat/ollamaclient's TestOfficialClient does that.
}
