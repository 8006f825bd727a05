// Package registry pulls models from and pushes them to registries that
// speak Ollama's protocol (the Docker registry v2 API with Ollama's media
// types): registry.ollama.ai by default, Hugging Face's GGUF repositories
// as hf.co/{user}/{repo}:{quant}, or a private registry. Downloads are
// chunked, resumable across interruptions and verified with sha256 before
// a blob enters the store; a manifest is written only after all its blobs.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/tadpole-llm/tadpole/models"
)

// Store is what the client needs from the model store.
type Store interface {
	// BlobPath is the path of a blob, which may not exist yet.
	BlobPath(digest string) (string, error)
	HasBlob(digest string) bool
	// ReadManifest and WriteManifest handle a model's raw manifest.
	ReadManifest(name models.Name) ([]byte, error)
	WriteManifest(name models.Name, raw []byte) error
	// CheckCapacity refuses blobs too large for the store, or that would
	// leave too little free disk (see [models.Store.CheckCapacity]).
	CheckCapacity(sizes ...int64) error
}

// Progress is one status update: Total and Completed are bytes of the
// blob named by Digest.
type Progress struct {
	Status    string
	Digest    string
	Total     int64
	Completed int64
}

// Client talks to registries. It connects only to public addresses
// (see egress.go) unless the registry's host is in Allow, and never
// hands a registry's answer body to its caller: errors name the host and
// the status only.
type Client struct {
	// Allow lists the registries, "host" (any port) or "host:port", that
	// may resolve to addresses that are not public (AddrClass); entries
	// may be comma-separated lists.
	Allow []string
	// Insecure uses http:// instead of https:// (local registries).
	Insecure bool
	// ChunkSize is the size of each ranged request of a download
	// (0: 64 MiB).
	ChunkSize int64

	once    sync.Once
	hc      *http.Client
	mu      sync.Mutex
	tokens  map[string]string // scope → bearer token
	proxies map[string]bool   // proxy addresses in use ("host:port")
}

func (c *Client) http() *http.Client { return c.client() }

func (c *Client) url(n models.Name, kind, ref string) string {
	scheme := "https"
	if c.Insecure {
		scheme = "http"
	}
	return fmt.Sprintf("%s://%s/v2/%s/%s/%s/%s", scheme, n.Host, n.Namespace, n.Model, kind, ref)
}

// do sends a request, answering a registry's bearer-token challenge once.
func (c *Client) do(ctx context.Context, n models.Name, method, u string, hdr http.Header, body func() io.Reader) (*http.Response, error) {
	scope := fmt.Sprintf("repository:%s/%s:pull", n.Namespace, n.Model)
	if method != http.MethodGet && method != http.MethodHead {
		scope += ",push"
	}
	for attempt := 0; attempt < 2; attempt++ {
		var r io.Reader
		if body != nil {
			r = body()
		}
		req, err := http.NewRequestWithContext(ctx, method, u, r)
		if err != nil {
			return nil, err
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		c.mu.Lock()
		tok := c.tokens[n.Host+" "+scope]
		c.mu.Unlock()
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := c.http().Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusUnauthorized || attempt == 1 {
			return resp, nil
		}
		challenge := resp.Header.Get("WWW-Authenticate")
		resp.Body.Close()
		tok, err = c.token(ctx, challenge, scope)
		if err != nil {
			return nil, fmt.Errorf("%s %s: authorization: %w", method, u, err)
		}
		c.mu.Lock()
		if c.tokens == nil {
			c.tokens = map[string]string{}
		}
		c.tokens[n.Host+" "+scope] = tok
		c.mu.Unlock()
	}
	panic("unreachable")
}

// token answers a `Bearer realm="…",service="…",scope="…"` challenge.
func (c *Client) token(ctx context.Context, challenge, scope string) (string, error) {
	params := map[string]string{}
	rest, ok := strings.CutPrefix(challenge, "Bearer ")
	if !ok {
		return "", fmt.Errorf("unsupported challenge %q", challenge)
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		params[k] = strings.Trim(v, `"`)
	}
	if params["realm"] == "" {
		return "", fmt.Errorf("challenge without realm: %q", challenge)
	}
	if params["scope"] != "" {
		scope = params["scope"]
	}
	u, err := url.Parse(params["realm"])
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("service", params["service"])
	q.Set("scope", scope)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token endpoint %s answered %s: %w", u.Host, resp.Status, ErrRemote)
	}
	var t struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&t); err != nil {
		return "", fmt.Errorf("token endpoint %s: the answer is not a token: %w", u.Host, ErrRemote)
	}
	if t.Token == "" {
		t.Token = t.AccessToken
	}
	return t.Token, nil
}

// statusError turns a registry's error answer into an error that names
// the host and the status only: the body (an error page, a registry's
// message) is the remote side's text and is never passed on.
func statusError(resp *http.Response, what string) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) // reuse the connection
	host := resp.Request.URL.Host
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s: %w (%s answered %s)", what, ErrNotFound, host, resp.Status)
	}
	return fmt.Errorf("%s: %w: %s answered %s", what, ErrRemote, host, resp.Status)
}

// ErrNotFound is wrapped when the registry does not have the model.
var ErrNotFound = errors.New("not found in the registry")

// ErrRemote is wrapped when a registry answers with an error or with
// something that is not what the protocol expects.
var ErrRemote = errors.New("registry error")
