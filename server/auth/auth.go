package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// Config configures API keys and their limits.
type Config struct {
	// Keys are the accepted keys or their "sha256:<hex>" hashes, each
	// optionally followed by a space and its scope (LoadKeys). None:
	// every request is served without a key.
	Keys []string
	// Rate is how many requests a key may make per Per (default one
	// minute); 0: no limit.
	Rate int
	Per  time.Duration
	// MaxStreams is how many requests a key may have on models at once
	// (generations and embeddings; infer enforces it when a request
	// acquires its model); 0: no limit.
	MaxStreams int
	// Usage receives each key's counters (nil: a table of its own).
	Usage *usage.Table
}

// Auth checks API keys. A nil or key-less Auth lets every request in.
type Auth struct {
	keys       []*key
	rate       float64 // tokens per second
	burst      float64
	maxStreams int64
	usage      *usage.Table
}

// key is one accepted key: its hash and its limits' state.
type key struct {
	hash    [sha256.Size]byte
	id      string
	scope   Scope
	usage   *usage.Counters
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	streams *usage.Streams
}

// New checks the configuration and builds an Auth.
func New(cfg Config) (*Auth, error) {
	a := &Auth{maxStreams: int64(cfg.MaxStreams), usage: cfg.Usage}
	if a.usage == nil {
		a.usage = &usage.Table{}
	}
	if cfg.Rate < 0 || cfg.MaxStreams < 0 {
		return nil, fmt.Errorf("rate limits must not be negative")
	}
	if cfg.Rate > 0 {
		per := cfg.Per
		if per <= 0 {
			per = time.Minute
		}
		a.burst = float64(cfg.Rate)
		a.rate = float64(cfg.Rate) / per.Seconds()
	}
	seen := map[[sha256.Size]byte]*key{}
	for i, e := range cfg.Keys {
		en, err := parseEntry(e)
		if err != nil {
			return nil, fmt.Errorf("api key %d: %w", i+1, err)
		}
		if k := seen[en.hash]; k != nil {
			if k.scope != en.scope {
				return nil, fmt.Errorf("api key %d: key %s is listed twice, with scopes %s and %s", i+1, k.id, k.scope, en.scope)
			}
			continue
		}
		id := keyID(en.hash)
		k := &key{hash: en.hash, id: id, scope: en.scope, usage: a.usage.For(id), tokens: a.burst,
			streams: usage.NewStreams(int(a.maxStreams))}
		seen[en.hash] = k
		a.keys = append(a.keys, k)
	}
	return a, nil
}

// Enabled reports whether requests need a key.
func (a *Auth) Enabled() bool { return a != nil && len(a.keys) > 0 }

// Usage is every key's usage so far (nil for a nil Auth); an exporter
// reads it through usage.Reader.
func (a *Auth) Usage() *usage.Table {
	if a == nil {
		return nil
	}
	return a.usage
}

// lookup finds the key whose hash matches the presented secret, looking
// at every key with a constant-time comparison.
func (a *Auth) lookup(secret string) *key {
	if secret == "" {
		return nil
	}
	h := sha256.Sum256([]byte(secret))
	var found *key
	for _, k := range a.keys {
		if subtle.ConstantTimeCompare(h[:], k.hash[:]) == 1 {
			found = k
		}
	}
	return found
}

// public reports whether a request needs no key: the liveness, readiness
// and version routes, and the web console's static files under /ui/
// (they hold no data: the page asks for a key and sends it on every API
// call). /metrics needs one (it names models and keys' usage) unless it
// has its own listener.
func public(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case "/", "/api/version", "/healthz", "/readyz", "/ui":
		return true
	}
	return strings.HasPrefix(r.URL.Path, "/ui/")
}

// adminRoutes are the routes (echo's patterns, as c.Path() names them)
// that manage models and so need an admin key: they write to the model
// store or reach out to registries.
var adminRoutes = map[string]bool{
	"/api/create": true, "/api/copy": true, "/api/delete": true,
	"/api/pull": true, "/api/push": true, "/api/blobs/:digest": true,
	// LoRA adapters: setting the scales every request of a model gets,
	// and loading adapters while serving, change other clients' answers.
	"/lora-adapters": true, "/lora-adapters/load": true,
}

// AdminRoute reports whether the route pattern needs an admin key.
func AdminRoute(pattern string) bool { return adminRoutes[pattern] }

// secret is the key a request presents: "Authorization: Bearer KEY"
// (or "X-API-Key: KEY", which older Anura clients send).
func secret(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(rest)
		}
		return ""
	}
	return strings.TrimSpace(r.Header.Get("X-API-Key"))
}

// Middleware refuses requests without a valid key (401) and over a key's
// request rate (429 with Retry-After), and counts each key's requests.
// The request's context carries the key's counters and its bound on
// concurrent requests, which infer enforces when the request acquires a
// model.
func (a *Auth) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if !a.Enabled() || public(req) {
				return next(c)
			}
			s := secret(req)
			k := a.lookup(s)
			if k == nil {
				msg := "invalid API key"
				if s == "" {
					msg = "missing API key: send it as Authorization: Bearer <key>"
				}
				return dialect.Write(c, dialect.Error{Status: http.StatusUnauthorized, Message: msg, Code: "invalid_api_key"})
			}
			if k.scope != Admin && AdminRoute(c.Path()) {
				return dialect.Write(c, dialect.Error{
					Status: http.StatusForbidden, Code: "insufficient_scope",
					Message: fmt.Sprintf("%s manages models and needs an admin key; this key's scope is %s", req.URL.Path, k.scope),
				})
			}
			ctx := usage.WithStreams(usage.NewContext(context.WithValue(req.Context(), keyCtx{}, k), k.usage), k.streams)
			c.SetRequest(req.WithContext(ctx))
			if wait := a.take(k, time.Now()); wait > 0 {
				k.usage.Limited()
				return dialect.Write(c, dialect.Error{
					Status: http.StatusTooManyRequests, Message: fmt.Sprintf("rate limit reached: %.0f requests per %s", a.burst, perText(a.burst/a.rate)),
					Code: "rate_limit_exceeded", RetryAfter: int(math.Ceil(wait.Seconds())),
				})
			}
			k.usage.Request()
			return next(c)
		}
	}
}

// take takes one request from k's bucket, or returns how long until one
// is there.
func (a *Auth) take(k *key, now time.Time) time.Duration {
	if a.rate == 0 {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.last.IsZero() {
		k.tokens = math.Min(a.burst, k.tokens+now.Sub(k.last).Seconds()*a.rate)
	}
	k.last = now
	if k.tokens >= 1 {
		k.tokens--
		return 0
	}
	return time.Duration((1 - k.tokens) / a.rate * float64(time.Second))
}

func perText(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second))
	if d == time.Minute {
		return "minute"
	}
	return d.String()
}

type keyCtx struct{}

// KeyID is the id of the key a request's context was authenticated with
// ("" without keys).
func KeyID(ctx context.Context) string {
	if k, _ := ctx.Value(keyCtx{}).(*key); k != nil {
		return k.id
	}
	return ""
}

// ScopeOf is the scope of the key a request's context was authenticated
// with ("" without keys, when every request may do everything).
func ScopeOf(ctx context.Context) Scope {
	if k, _ := ctx.Value(keyCtx{}).(*key); k != nil {
		return k.scope
	}
	return ""
}
