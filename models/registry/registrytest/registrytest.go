// Package registrytest is a registry server for tests: the subset of the
// Docker registry v2 protocol Ollama uses (manifests GET/PUT, blobs GET
// with Range and HEAD, uploads POST/PUT), with an optional bearer-token
// challenge and fault injection (cut connections, corrupt bytes).
package registrytest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/tadpole-llm/tadpole/models"
)

// Server is a registry server speaking the v2 protocol subset Ollama
// uses: manifests (GET, PUT), blobs (GET with Range, HEAD), uploads (POST,
// PUT ?digest=), with an optional bearer-token challenge.
type Server struct {
	Mu        sync.Mutex
	Blobs     map[string][]byte
	Manifests map[string][]byte // "ns/model:tag"
	uploads   int
	Token     string // required bearer token, "" for none
	// cutAfter makes the next cutCount blob GETs stop after so many bytes.
	CutAfter int
	CutCount int
	// corrupt serves wrong bytes for this digest.
	Corrupt  string
	Requests []string
	// Ranges are the Range headers of blob GETs, in order ("" for none).
	Ranges []string
	// StallAfter and Stall hold blob downloads: when Stall is not nil, a
	// blob GET sends StallAfter bytes, then waits until Stall is closed
	// (or the client goes away) before the rest, so a test can act on a
	// download in flight.
	StallAfter int
	Stall      chan struct{}
	// HTTP is the listening server.
	HTTP *httptest.Server
}

// New starts a registry server; Close it when done.
func New() *Server {
	r := &Server{Blobs: map[string][]byte{}, Manifests: map[string][]byte{}}
	r.HTTP = httptest.NewServer(r)
	return r
}

// Host is the registry's host:port, for model names.
func (r *Server) Host() string { return strings.TrimPrefix(r.HTTP.URL, "http://") }

// AddBlob stores a blob and returns its digest.
func (r *Server) AddBlob(b []byte) string {
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	r.Mu.Lock()
	r.Blobs[d] = b
	r.Mu.Unlock()
	return d
}

// Close stops the server.
func (r *Server) Close() { r.HTTP.Close() }

// Publish stores a manifest under repo ("namespace/model") and tag.
func (r *Server) Publish(repo, tag string, manifest []byte) {
	r.Mu.Lock()
	r.Manifests[repo+":"+tag] = manifest
	r.Mu.Unlock()
}

// ServeHTTP answers the registry protocol.
func (r *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.Mu.Lock()
	r.Requests = append(r.Requests, req.Method+" "+req.URL.Path)
	r.Mu.Unlock()
	if req.URL.Path == "/token" {
		fmt.Fprintf(w, `{"token":%q}`, r.Token)
		return
	}
	if r.Token != "" && req.Header.Get("Authorization") != "Bearer "+r.Token {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="test",scope="x"`, r.HTTP.URL))
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
	r.Mu.Lock()
	defer r.Mu.Unlock()
	switch {
	case kind == "manifests" && req.Method == http.MethodGet:
		m, ok := r.Manifests[repo+":"+ref]
		if !ok {
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`, http.StatusNotFound)
			return
		}
		w.Write(m)
	case kind == "manifests" && req.Method == http.MethodPut:
		b, _ := io.ReadAll(req.Body)
		r.Manifests[repo+":"+ref] = b
		w.WriteHeader(http.StatusCreated)
	case kind == "blobs" && ref == "uploads/" && req.Method == http.MethodPost:
		r.uploads++
		w.Header().Set("Location", fmt.Sprintf("%s/upload/%d", r.HTTP.URL, r.uploads))
		w.WriteHeader(http.StatusAccepted)
	case kind == "blobs" && (req.Method == http.MethodGet || req.Method == http.MethodHead):
		b, ok := r.Blobs[ref]
		if !ok {
			http.NotFound(w, req)
			return
		}
		if req.Method == http.MethodHead {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			return
		}
		r.Ranges = append(r.Ranges, req.Header.Get("Range"))
		if ref == r.Corrupt {
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
		if r.Stall != nil && len(body) > r.StallAfter {
			stall, n := r.Stall, r.StallAfter
			r.Mu.Unlock() // not held while stalled
			defer r.Mu.Lock()
			w.Write(body[:n])
			w.(http.Flusher).Flush()
			select {
			case <-stall:
				w.Write(body[n:])
			case <-req.Context().Done():
			}
			return
		}
		if r.CutCount > 0 && len(body) > r.CutAfter {
			r.CutCount--
			w.Write(body[:r.CutAfter])
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
func (r *Server) handleUpload(w http.ResponseWriter, req *http.Request) bool {
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
	r.Mu.Lock()
	r.Blobs[d] = b
	r.Mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	return true
}

// PublishModel publishes a model made of a GGUF file and, if not empty, a
// system prompt layer, under repo and tag, the way Ollama lays models out.
func (r *Server) PublishModel(repo, tag string, gguf []byte, system string) {
	config := []byte(`{"model_format":"gguf"}`)
	m := models.Manifest{
		SchemaVersion: 2, MediaType: models.MediaTypeManifest,
		Config: models.Layer{MediaType: models.MediaTypeConfig, Digest: r.AddBlob(config), Size: int64(len(config))},
		Layers: []models.Layer{{MediaType: models.MediaTypeModel, Digest: r.AddBlob(gguf), Size: int64(len(gguf))}},
	}
	if system != "" {
		m.Layers = append(m.Layers, models.Layer{MediaType: models.MediaTypeSystem, Digest: r.AddBlob([]byte(system)), Size: int64(len(system))})
	}
	raw, _ := json.Marshal(m)
	r.Publish(repo, tag, raw)
}
