package server

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// One name created, copied over and deleted by concurrent clients while
// others generate with it and show it: each request sees the model
// before or after a change (or no model: 404, or 400 for a create FROM
// it; a delete of a model in use: 409), never a 5xx.
func TestStoreConcurrentName(t *testing.T) {
	dir := testModels(t, "bigram")
	srv := New(Config{ModelsDir: dir, Sched: testSched(2, 256)})
	ts := serveForTest(t, srv)
	if code, _, b := do(t, "POST", ts.URL+"/api/create", "", `{"model":"x","from":"bigram","stream":false}`); code != http.StatusOK {
		t.Fatalf("create: %d %s", code, b)
	}
	const rounds = 30
	ops := map[string]func(i int) (int, []byte){
		"create": func(i int) (int, []byte) {
			code, _, b := do(t, "POST", ts.URL+"/api/create", "", fmt.Sprintf(`{"model":"x","from":"bigram","system":"Version %d.","stream":false}`, i))
			return code, b
		},
		"create from x": func(i int) (int, []byte) {
			code, _, b := do(t, "POST", ts.URL+"/api/create", "", fmt.Sprintf(`{"model":"z","from":"x","system":"Z %d.","stream":false}`, i))
			return code, b
		},
		"copy to x": func(int) (int, []byte) {
			code, _, b := do(t, "POST", ts.URL+"/api/copy", "", `{"source":"bigram","destination":"x"}`)
			return code, b
		},
		"copy from x": func(int) (int, []byte) {
			code, _, b := do(t, "POST", ts.URL+"/api/copy", "", `{"source":"x","destination":"y"}`)
			return code, b
		},
		"delete": func(int) (int, []byte) {
			code, _, b := do(t, "DELETE", ts.URL+"/api/delete", "", `{"model":"x"}`)
			return code, b
		},
		"delete y": func(int) (int, []byte) {
			code, _, b := do(t, "DELETE", ts.URL+"/api/delete", "", `{"model":"y"}`)
			return code, b
		},
		"generate": func(int) (int, []byte) {
			code, _, b := do(t, "POST", ts.URL+"/api/generate", "", `{"model":"x","prompt":"Hi","stream":false,"options":{"num_predict":2}}`)
			return code, b
		},
		"show": func(int) (int, []byte) {
			code, _, b := do(t, "POST", ts.URL+"/api/show", "", `{"model":"x"}`)
			return code, b
		},
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]map[int]int{}
	for name, op := range ops {
		counts[name] = map[int]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				code, body := op(i)
				mu.Lock()
				counts[name][code]++
				mu.Unlock()
				missing := code == http.StatusNotFound || code == http.StatusBadRequest && name == "create from x"
				if code >= 500 || (code != http.StatusOK && !missing && code != http.StatusConflict) {
					t.Errorf("%s, round %d: %d %s", name, i, code, body)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("statuses: %v", counts)
	// The store is whole afterwards: x can be made and used again.
	if code, _, b := do(t, "POST", ts.URL+"/api/create", "", `{"model":"x","from":"bigram","stream":false}`); code != http.StatusOK {
		t.Fatalf("create after: %d %s", code, b)
	}
	if code, _, b := do(t, "POST", ts.URL+"/api/generate", "", `{"model":"x","prompt":"Hi","stream":false,"options":{"num_predict":2}}`); code != http.StatusOK {
		t.Fatalf("generate after: %d %s", code, b)
	}
}

// A name whose file goes between resolving it and reading it (a delete
// racing the show or the load; here the weights removed by hand) is a
// 404 for /api/show and /api/generate, as if the request had come after
// the delete, and no answer shows a server path.
func TestShowOfVanishedFile(t *testing.T) {
	dir := testModels(t, "bigram")
	ts := serveConfig(t, Config{ModelsDir: dir, Sched: testSched(1, 256)})
	if code, _, b := do(t, "POST", ts.URL+"/api/create", "", `{"model":"w","from":"bigram","stream":false}`); code != http.StatusOK {
		t.Fatalf("create: %d %s", code, b)
	}
	blobs, err := filepath.Glob(filepath.Join(dir, "blobs", "sha256-*"))
	if err != nil || len(blobs) == 0 {
		t.Fatalf("no blobs in %s (%v)", dir, err)
	}
	removed := 0
	for _, b := range blobs {
		if fi, err := os.Stat(b); err == nil && fi.Size() > 1<<16 { // the weights, not the manifest's small layers
			if err := os.Remove(b); err != nil {
				t.Fatal(err)
			}
			removed++
		}
	}
	if removed == 0 {
		t.Fatal("no weights blob to remove")
	}
	code, _, b := do(t, "POST", ts.URL+"/api/show", "", `{"model":"w"}`)
	if code != http.StatusNotFound || strings.Contains(string(b), dir) {
		t.Fatalf("show: %d %s, want a 404 without the path", code, b)
	}
	// The same for a generation, whose load finds no file (a delete
	// racing it, as TestStoreConcurrentName found once in CI): 404, not
	// a 500 about the missing blob.
	code, _, b = do(t, "POST", ts.URL+"/api/generate", "", `{"model":"w","prompt":"Hi","stream":false}`)
	if code != http.StatusNotFound || strings.Contains(string(b), dir) {
		t.Fatalf("generate: %d %s, want a 404 without the path", code, b)
	}
}
