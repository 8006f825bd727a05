package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// testRegistry is a registry server speaking the v2 protocol subset Ollama
// uses: manifests (GET, PUT), blobs (GET with Range, HEAD), uploads (POST,
// PUT ?digest=), with an optional bearer-token challenge.
type testRegistry struct {
	mu        sync.Mutex
	blobs     map[string][]byte
	manifests map[string][]byte // "ns/model:tag"
	uploads   int
	token     string // required bearer token, "" for none
	// cutAfter makes the next cutCount blob GETs stop after so many bytes.
	cutAfter int
	cutCount int
	// corrupt serves wrong bytes for this digest.
	corrupt  string
	requests []string
	srv      *httptest.Server
}

func newTestRegistry() *testRegistry {
	r := &testRegistry{blobs: map[string][]byte{}, manifests: map[string][]byte{}}
	r.srv = httptest.NewServer(r)
	return r
}

func (r *testRegistry) host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

func (r *testRegistry) addBlob(b []byte) string {
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	r.mu.Lock()
	r.blobs[d] = b
	r.mu.Unlock()
	return d
}

func (r *testRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	if req.URL.Path == "/token" {
		fmt.Fprintf(w, `{"token":%q}`, r.token)
		return
	}
	if r.token != "" && req.Header.Get("Authorization") != "Bearer "+r.token {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="test",scope="x"`, r.srv.URL))
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"auth required"}]}`, http.StatusUnauthorized)
		return
	}
	if r.handleUpload(w, req) {
		return
	}
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, "/v2/"), "/")
	if len(parts) < 4 {
		http.NotFound(w, req)
		return
	}
	repo, kind, ref := parts[0]+"/"+parts[1], parts[2], strings.Join(parts[3:], "/")
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case kind == "manifests" && req.Method == http.MethodGet:
		m, ok := r.manifests[repo+":"+ref]
		if !ok {
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`, http.StatusNotFound)
			return
		}
		w.Write(m)
	case kind == "manifests" && req.Method == http.MethodPut:
		b, _ := io.ReadAll(req.Body)
		r.manifests[repo+":"+ref] = b
		w.WriteHeader(http.StatusCreated)
	case kind == "blobs" && ref == "uploads/" && req.Method == http.MethodPost:
		r.uploads++
		w.Header().Set("Location", fmt.Sprintf("%s/upload/%d", r.srv.URL, r.uploads))
		w.WriteHeader(http.StatusAccepted)
	case kind == "blobs" && (req.Method == http.MethodGet || req.Method == http.MethodHead):
		b, ok := r.blobs[ref]
		if !ok {
			http.NotFound(w, req)
			return
		}
		if req.Method == http.MethodHead {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			return
		}
		if ref == r.corrupt {
			b = append([]byte("x"), b[1:]...)
		}
		from, to := 0, len(b)-1
		if rg := req.Header.Get("Range"); rg != "" {
			fmt.Sscanf(rg, "bytes=%d-%d", &from, &to)
			to = min(to, len(b)-1)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, len(b)))
			w.Header().Set("Content-Length", strconv.Itoa(to-from+1))
			w.WriteHeader(http.StatusPartialContent)
		}
		body := b[from : to+1]
		if r.cutCount > 0 && len(body) > r.cutAfter {
			r.cutCount--
			w.Write(body[:r.cutAfter])
			// Drop the connection mid-body.
			if hj, ok := w.(http.Hijacker); ok {
				conn, _, _ := hj.Hijack()
				conn.Close()
			}
			return
		}
		w.Write(body)
	default:
		http.NotFound(w, req)
	}
}

// The upload endpoint (Location of POST …/uploads/) is routed here.
func (r *testRegistry) handleUpload(w http.ResponseWriter, req *http.Request) bool {
	if !strings.HasPrefix(req.URL.Path, "/upload/") || req.Method != http.MethodPut {
		return false
	}
	b, _ := io.ReadAll(req.Body)
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	if d != req.URL.Query().Get("digest") {
		http.Error(w, `{"errors":[{"code":"DIGEST_INVALID","message":"digest mismatch"}]}`, http.StatusBadRequest)
		return true
	}
	r.mu.Lock()
	r.blobs[d] = b
	r.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	return true
}
