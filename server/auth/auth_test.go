package auth

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	hashed := Hash("secret-2")
	os.WriteFile(file, []byte("# comment\n\n  secret-1  \n"+hashed+"\n"), 0o600)
	for _, tc := range []struct {
		name, file, list string
		want             []string
		err              string
	}{
		{"file", file, "", []string{"secret-1", hashed}, ""},
		{"list", "", " a, b ,,", []string{"a", "b"}, ""},
		{"both", file, "c", []string{"secret-1", hashed, "c"}, ""},
		{"none", "", "", nil, ""},
		{"missing file", filepath.Join(dir, "nope"), "", nil, "no such file"},
		{"bad hash", "", "sha256:abc", nil, "64 hex digits"},
		{"space", "", "my secret key", nil, "spaces"},
		{"unknown scope", "", "my key", nil, "unknown scope"},
		{"scoped", "", "a admin, " + hashed + "  inference", []string{"a admin", hashed + "  inference"}, ""},
	} {
		got, err := LoadKeys(tc.file, tc.list)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q, %v", tc.name, got, err)
		}
	}
	// A malformed entry is reported without quoting it.
	os.WriteFile(file, []byte("good\nsha256:not-hex secret\n"), 0o600)
	if _, err := LoadKeys(file, ""); err == nil || !strings.Contains(err.Error(), ":2:") || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad line: %v", err)
	}
}

func TestLookup(t *testing.T) {
	a, err := New(Config{Keys: []string{"plain", Hash("hashed"), "plain"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.keys) != 2 || !a.Enabled() {
		t.Fatalf("%d keys", len(a.keys))
	}
	for _, tc := range []struct {
		secret string
		ok     bool
	}{
		{"plain", true}, {"hashed", true}, {Hash("hashed"), false}, {"", false}, {"plain ", false}, {"Plain", false},
	} {
		if got := a.lookup(tc.secret) != nil; got != tc.ok {
			t.Errorf("lookup(%q) = %v", tc.secret, got)
		}
	}
	if k := a.lookup("plain"); k.id != strings.TrimPrefix(Hash("plain"), HashPrefix)[:12] {
		t.Errorf("id %s", k.id)
	}
	var none *Auth
	if none.Enabled() || none.Usage() != nil {
		t.Error("a nil Auth is enabled")
	}
	if _, err := New(Config{Rate: -1}); err == nil {
		t.Error("negative rate: no error")
	}
}

func TestTake(t *testing.T) {
	a, _ := New(Config{Keys: []string{"k"}, Rate: 2, Per: time.Second})
	k := a.keys[0]
	t0 := time.Unix(1000, 0)
	steps := []struct {
		after time.Duration
		wait  time.Duration
	}{
		{0, 0}, {0, 0}, {0, 500 * time.Millisecond},
		{250 * time.Millisecond, 250 * time.Millisecond},
		{500 * time.Millisecond, 0},
		{500 * time.Millisecond, 500 * time.Millisecond},
		{10 * time.Second, 0}, {10 * time.Second, 0}, {10 * time.Second, 500 * time.Millisecond},
	}
	for i, s := range steps {
		if got := a.take(k, t0.Add(s.after)); got.Round(time.Millisecond) != s.wait {
			t.Errorf("step %d (+%v): wait %v, want %v", i, s.after, got, s.wait)
		}
	}
	unlimited, _ := New(Config{Keys: []string{"k"}})
	for range 100 {
		if unlimited.take(unlimited.keys[0], t0) != 0 {
			t.Fatal("limited without a rate")
		}
	}
}

func TestNewKey(t *testing.T) {
	a, _ := NewKey()
	b, _ := NewKey()
	if a == b || !strings.HasPrefix(a, "tp-") || len(a) != 46 {
		t.Fatalf("%q %q", a, b)
	}
	if h := Hash("abc"); h != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("Hash: %s", h)
	}
}

func TestScopes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	os.WriteFile(file, []byte("# one of each\nplain-admin admin\n"+Hash("hashed-admin")+"\tadmin\nplain-user\n"+Hash("hashed-user")+" inference\n"), 0o600)
	entries, err := LoadKeys(file, "env-admin admin,env-user")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Keys: entries})
	if err != nil {
		t.Fatal(err)
	}
	for secret, want := range map[string]Scope{
		"plain-admin": Admin, "hashed-admin": Admin, "env-admin": Admin,
		"plain-user": Inference, "hashed-user": Inference, "env-user": Inference,
	} {
		if k := a.lookup(secret); k == nil || k.scope != want {
			t.Errorf("%s: %+v, want scope %s", secret, k, want)
		}
	}
	// The same key twice with one scope is one key; with two it is an error.
	if a, err := New(Config{Keys: []string{"k admin", Hash("k") + " admin"}}); err != nil || len(a.keys) != 1 {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := New(Config{Keys: []string{"k admin", "k"}}); err == nil || !strings.Contains(err.Error(), "scopes admin and inference") || strings.Contains(err.Error(), " k ") {
		t.Errorf("conflicting scopes: %v", err)
	}
	for _, route := range []string{"/api/create", "/api/copy", "/api/delete", "/api/pull", "/api/push", "/api/blobs/:digest"} {
		if !AdminRoute(route) {
			t.Errorf("%s is not an admin route", route)
		}
	}
	for _, route := range []string{"/api/generate", "/api/chat", "/api/show", "/api/tags", "/v1/chat/completions", "/api/v1/jobs/:id", "/metrics"} {
		if AdminRoute(route) {
			t.Errorf("%s is an admin route", route)
		}
	}
}

// Plain keys in TADPOLE_API_KEYS are warned about (without the key);
// hashes and keys files are not.
func TestPlainEnvKeysWarn(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	file := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(file, []byte("file-secret admin\n"), 0o600)
	if _, err := LoadKeys(file, Hash("x")+" admin"); err != nil || buf.Len() != 0 {
		t.Fatalf("hashed entries warned: %v %s", err, buf.String())
	}
	if _, err := LoadKeys("", "env-secret admin, "+Hash("x")+", other-secret"); err != nil {
		t.Fatal(err)
	}
	if log := buf.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "plain_keys=2") || strings.Contains(log, "secret") {
		t.Fatalf("warning: %s", log)
	}
}
