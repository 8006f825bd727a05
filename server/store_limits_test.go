package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/registry/registrytest"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// startStoreServer serves dir (a new directory holding "stories" and
// "bigram" when dir is "") with the configuration edit makes.
func startStoreServer(t *testing.T, dir string, edit func(*Config)) *testServer {
	t.Helper()
	if dir == "" {
		dir = testModels(t, "stories", "bigram")
	}
	cfg := Config{ModelsDir: dir, Sched: testSched(2, 256)}
	if edit != nil {
		edit(&cfg)
	}
	return serveConfig(t, cfg)
}

// storeRequest sends body to path and returns the status and Ollama's error
// message (the answer must be {"error": "..."} unless it is a 2xx).
func storeRequest(t *testing.T, ts *testServer, method, path string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, ts.URL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 300 {
		return resp.StatusCode, ""
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Error == "" {
		t.Fatalf("%s %s: %d answer %q is not Ollama's error shape", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, e.Error
}

// A name that is not a model name ("../../evil") is the client's mistake
// on every route that takes one: 400 in Ollama's shape, never a 500, and
// nothing is written.
func TestInvalidNamesAre400(t *testing.T) {
	dir := testModels(t, "stories")
	ts := startStoreServer(t, dir, nil)
	f := false
	for _, bad := range []string{"../../evil", "a/b/c/d", "x:", "..", "stories/../../x"} {
		for _, tc := range []struct {
			method, path string
			body         any
			field        string
		}{
			{"POST", "/api/copy", map[string]any{"source": "stories", "destination": bad}, "destination"},
			{"POST", "/api/copy", map[string]any{"source": bad, "destination": "fine"}, "source"},
			{"POST", "/api/create", map[string]any{"model": bad, "from": "stories", "stream": f}, ""},
			{"DELETE", "/api/delete", map[string]any{"model": bad}, "model"},
			{"POST", "/api/show", map[string]any{"model": bad}, "model"},
			{"POST", "/api/pull", map[string]any{"model": bad, "stream": f}, ""},
			{"POST", "/api/push", map[string]any{"model": bad, "stream": f}, ""},
		} {
			code, msg := storeRequest(t, ts, tc.method, tc.path, tc.body)
			if code != http.StatusBadRequest || !strings.Contains(msg, "invalid model name") || !strings.Contains(msg, tc.field) {
				t.Errorf("%s %s with %q: %d %q", tc.method, tc.path, bad, code, msg)
			}
		}
	}
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		names = append(names, p)
		return nil
	})
	if len(names) != 2 { // dir and stories.gguf
		t.Errorf("invalid names wrote %v", names)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(dir)), "evil")); err == nil {
		t.Error("a file escaped the store")
	}
}

// A registry on loopback is refused (403, naming the flag) unless the
// operator allows it; allowed, the pull works.
func TestPullFromUnallowedRegistry(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	data, err := os.ReadFile(testmodels.Testdata("stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	reg.PublishModel("library/tiny", "latest", data, "")
	name := reg.Host() + "/library/tiny"
	ts := startStoreServer(t, "", nil)
	f := false
	code, msg := storeRequest(t, ts, "POST", "/api/pull", map[string]any{"model": name, "insecure": true, "stream": f})
	if code != http.StatusForbidden || !strings.Contains(msg, "--allow-registry") || !strings.Contains(msg, "loopback") {
		t.Fatalf("pull from a loopback registry: %d %q", code, msg)
	}
	reg.Mu.Lock()
	reached := len(reg.Requests)
	reg.Mu.Unlock()
	if reached != 0 {
		t.Fatalf("the refused pull reached the registry: %v", reg.Requests)
	}
	ts = startStoreServer(t, "", func(c *Config) { c.AllowRegistries = []string{reg.Host()} })
	if code, msg := storeRequest(t, ts, "POST", "/api/pull", map[string]any{"model": name, "insecure": true, "stream": f}); code != http.StatusOK {
		t.Fatalf("pull from an allowed registry: %d %q", code, msg)
	}
}

// A blob above --max-blob-size is 413, before or while it is read; a
// write that would leave less than --min-free-disk is 507. The store is
// unchanged by either.
func TestDiskLimits(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 4096)
	digest := models.DigestBytes(big)
	ts := startStoreServer(t, "", func(c *Config) { c.MaxBlobSize = 1000 })
	upload := func(ts *testServer, body io.Reader, length int64) (int, string) {
		req, _ := http.NewRequest("POST", ts.URL+"/api/blobs/"+digest, body)
		req.Header.Set("Content-Type", "application/octet-stream")
		req.ContentLength = length
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error
	}
	// Declared size, then a chunked body that declares none.
	if code, msg := upload(ts, bytes.NewReader(big), int64(len(big))); code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "--max-blob-size") {
		t.Fatalf("declared large blob: %d %q", code, msg)
	}
	if code, msg := upload(ts, io.MultiReader(bytes.NewReader(big)), -1); code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "--max-blob-size") {
		t.Fatalf("chunked large blob: %d %q", code, msg)
	}
	// A pull whose manifest declares a layer above the limit.
	reg := registrytest.New()
	defer reg.Close()
	data, _ := os.ReadFile(testmodels.Testdata("stories260K.gguf"))
	reg.PublishModel("library/tiny", "latest", data, "")
	ts = startStoreServer(t, "", func(c *Config) { c.MaxBlobSize = 1 << 20; c.AllowRegistries = []string{reg.Host()} })
	f := false
	if code, msg := storeRequest(t, ts, "POST", "/api/pull", map[string]any{"model": reg.Host() + "/library/tiny", "insecure": true, "stream": f}); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("pull of a large blob: %d %q", code, msg)
	}
	reg.Mu.Lock()
	ranges := len(reg.Ranges)
	reg.Mu.Unlock()
	if ranges != 0 {
		t.Fatalf("the refused pull downloaded blobs")
	}

	// The free-disk floor above the disk's free space: every write is 507.
	dir := t.TempDir()
	linkFile(testmodels.Testdata("stories260K.gguf"), filepath.Join(dir, "stories.gguf"))
	ts = startStoreServer(t, dir, func(c *Config) { c.MinFreeDisk = 1 << 62; c.AllowRegistries = []string{reg.Host()} })
	if code, msg := upload(ts, bytes.NewReader(big), int64(len(big))); code != http.StatusInsufficientStorage || !strings.Contains(msg, "--min-free-disk") {
		t.Fatalf("upload below the floor: %d %q", code, msg)
	}
	for _, tc := range []struct {
		path string
		body any
	}{
		{"/api/create", map[string]any{"model": "mine", "from": "stories", "system": "Be brief.", "stream": f}},
		{"/api/create", map[string]any{"model": "mine", "from": "stories", "quantize": "q8_0", "stream": f}},
		{"/api/copy", map[string]any{"source": "stories", "destination": "copied"}},
		{"/api/pull", map[string]any{"model": reg.Host() + "/library/tiny", "insecure": true, "stream": f}},
	} {
		if code, msg := storeRequest(t, ts, "POST", tc.path, tc.body); code != http.StatusInsufficientStorage || !strings.Contains(msg, "--min-free-disk") {
			t.Errorf("%s %v below the floor: %d %q", tc.path, tc.body, code, msg)
		}
	}
	var after []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			after = append(after, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if len(after) != 1 {
		t.Errorf("refused writes left %v", after)
	}
	// Streamed, the refusal is the stream's error line.
	err := ts.Client.Pull(context.Background(), &ollamaapi.PullRequest{Model: reg.Host() + "/library/tiny", Insecure: true}, func(ollamaapi.ProgressResponse) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "--min-free-disk") {
		t.Errorf("streamed pull below the floor: %v", err)
	}
	var se *client.StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusInternalServerError {
		t.Errorf("streamed pull: %v", err)
	}
}
