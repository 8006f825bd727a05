package media

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tadpole-llm/tadpole/models/registry"
)

// The defaults of a Fetcher's limits.
const (
	// DefaultFetchTimeout bounds one fetch: connecting, the redirects,
	// the answer and its whole body.
	DefaultFetchTimeout = 10 * time.Second
	// DefaultFetchBytes bounds one fetched image (the default request
	// body limit, --max-body).
	DefaultFetchBytes = 10 << 20
	// DefaultMaxFetches bounds the URLs fetched for one request (the
	// default --max-images).
	DefaultMaxFetches = 8
	// MaxFetchRedirects is the most redirects one fetch follows; each
	// goes through the same checks as the URL the client sent.
	MaxFetchRedirects = 3
)

// ErrFetch is wrapped by every error of fetching an image URL: the
// address refused, the server unreachable or slow, an answer that is not
// 200, too large, or not an image. Its message begins "fetching <URL>:".
var ErrFetch = errors.New("image URL not fetched")

// ErrAddress is wrapped (with ErrFetch) when an image URL's host, or a
// redirect's, resolves to an address that is not public: any range of
// the IANA special-purpose registries that is not globally reachable
// (loopback, link-local, private, carrier-grade NAT, benchmarking,
// documentation, multicast, reserved…), and IPv6 forms that carry such
// an IPv4 address (registry.AddrClass).
var ErrAddress = errors.New("not a public address")

// Fetcher fetches the images that requests name by http(s) URL, for an
// operator who allows it (--allow-image-urls); a nil *Fetcher fetches
// nothing, and its Reader refuses such URLs with ErrRemoteURL.
//
// Every connection's address is checked when it is made (a net.Dialer
// Control func sees the address actually dialed, after DNS resolution),
// so a name that resolves, or re-resolves (DNS rebinding), to an internal
// address is refused, and so is a redirect that leads to one. The proxy
// settings of the environment are not used: the server connects itself.
// The zero Fetcher has the default limits; it must not be copied once
// used.
type Fetcher struct {
	// MaxBytes bounds one image (0: DefaultFetchBytes): a larger
	// Content-Length is refused before the body is read, and reading
	// stops one byte past it.
	MaxBytes int64
	// Timeout bounds one fetch, body included (0: DefaultFetchTimeout).
	Timeout time.Duration
	// MaxFetches bounds the URLs fetched for one request (0:
	// DefaultMaxFetches).
	MaxFetches int

	// Allow are hosts ("host" or "host:port") that may be at any
	// address, as --allow-registry does for registries. No flag sets it:
	// it is for tests, whose servers listen on loopback. A redirect from
	// another host to one of them is refused.
	Allow []string
	// Lookup and Dial replace name resolution and connecting (nil: the
	// system's), as registry.PublicDialer's hooks: for tests, which
	// must not connect outside loopback. Dial is given only addresses
	// that passed the check.
	Lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)

	once sync.Once
	hc   *http.Client
}

// Reader returns the reader of one request's image URLs: a data URL is
// read as ImageURL reads it; an http(s) URL is fetched (at most
// MaxFetches of them for the reader's request, each bounded by ctx too),
// or, with a nil f, refused with ErrRemoteURL. An image fetched must be
// JPEG, PNG, GIF or WebP (by its content; the Content-Type is not
// trusted). The dialects make one per request and read every image URL
// of it through it, from one goroutine.
func (f *Fetcher) Reader(ctx context.Context) func(url string) ([]byte, error) {
	n := 0
	return func(s string) ([]byte, error) {
		if f == nil || !isHTTP(s) {
			return ImageURL(s)
		}
		if n >= f.maxFetches() {
			return nil, &fetchError{shortURL(s), fmt.Errorf("too many image URLs: at most %d are fetched for one request (--max-images)", f.maxFetches())}
		}
		n++
		return f.Fetch(ctx, s)
	}
}

func isHTTP(s string) bool {
	_, ok := cutPrefixFold(s, "http://")
	_, ok2 := cutPrefixFold(s, "https://")
	return ok || ok2
}

// DataURL is data (an image or audio clip Sniff names) as a data URL:
// what the Responses API stores of an image it fetched.
func DataURL(data []byte) string {
	return "data:" + MIMEType(Sniff(data)) + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// fetchError is an error of fetching one URL.
type fetchError struct {
	url string // as shown: shortURL
	err error
}

func (e *fetchError) Error() string { return "fetching " + e.url + ": " + e.err.Error() }
func (e *fetchError) Unwrap() []error {
	return []error{ErrFetch, e.err}
}

// addrError refuses a connection to an address that is not public.
type addrError struct {
	host string
	addr string
	why  string
}

func (e *addrError) Error() string {
	if e.host == e.addr {
		return fmt.Sprintf("%s is %s: image URLs are fetched only from public addresses", e.host, e.why)
	}
	return fmt.Sprintf("%s resolves to %s, %s: image URLs are fetched only from public addresses", e.host, e.addr, e.why)
}

func (e *addrError) Unwrap() error { return ErrAddress }

// Fetch fetches the image at an http(s) URL, with f's limits; errors
// wrap ErrFetch (and ErrAddress for an address refused).
func (f *Fetcher) Fetch(ctx context.Context, raw string) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &fetchError{shortURL(raw), errors.New("not a valid http(s) URL")}
	}
	show := shortURL(u.String())
	fail := func(err error) ([]byte, error) { return nil, &fetchError{show, err} }
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fail(errors.New("not a valid http(s) URL"))
	}
	req.Header.Set("Accept", "image/jpeg, image/png, image/gif, image/webp")
	req.Header.Set("User-Agent", "tadpole (image URL of a request)")
	resp, err := f.client().Do(req)
	if err != nil {
		return fail(f.reason(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("the server answered %q", resp.Status))
	}
	limit := f.maxBytes()
	if resp.ContentLength > limit {
		return fail(fmt.Errorf("the image is %d bytes, more than the %d allowed", resp.ContentLength, limit))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fail(f.reason(ctx, err))
	}
	if int64(len(data)) > limit {
		return fail(fmt.Errorf("the image is more than the %d bytes allowed", limit))
	}
	switch Sniff(data) {
	case "jpeg", "png", "gif", "webp":
		return data, nil
	}
	return fail(fmt.Errorf("not a JPEG, PNG, GIF or WebP image (%s)", describe(data)))
}

// reason is why a request or its body failed, in a client's words.
func (f *Fetcher) reason(ctx context.Context, err error) error {
	var ae *addrError
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no complete answer within %s", f.timeout())
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// shortURL is a URL as errors show it: without credentials, at most 200
// bytes.
func shortURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = nil
		s = u.String()
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (f *Fetcher) timeout() time.Duration {
	if f.Timeout > 0 {
		return f.Timeout
	}
	return DefaultFetchTimeout
}

func (f *Fetcher) maxBytes() int64 {
	if f.MaxBytes > 0 {
		return f.MaxBytes
	}
	return DefaultFetchBytes
}

func (f *Fetcher) maxFetches() int {
	if f.MaxFetches > 0 {
		return f.MaxFetches
	}
	return DefaultMaxFetches
}

// client is the HTTP client of every fetch: no proxy, addresses checked
// at connect time (dialContext), redirects by checkRedirect.
func (f *Fetcher) client() *http.Client {
	f.once.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.DialContext = f.dialContext
		t.MaxResponseHeaderBytes = 64 << 10
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 16, 2
		f.hc = &http.Client{Transport: t, CheckRedirect: f.checkRedirect}
	})
	return f.hc
}

// dialContext connects to addr ("host:port" of the URL), refusing every
// address that registry.AddrClass does not pass, unless the host is
// allowed. The check is of the address each connection is made to, after
// resolution (registry.PublicDialer).
func (f *Fetcher) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &registry.PublicDialer{
		Timeout: f.timeout(),
		Allowed: f.allowed,
		Refuse:  func(host, addr, why string) error { return &addrError{host, addr, why} },
		Lookup:  f.Lookup,
		Dial:    f.Dial,
	}
	return d.DialContext(ctx, network, addr)
}

// allowed reports whether hostport ("host:port" as dialed, or a URL's
// Host) is one of f.allow.
func (f *Fetcher) allowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	host = strings.Trim(host, "[]")
	for _, a := range f.Allow {
		ah, ap, err := net.SplitHostPort(a)
		if err != nil {
			ah, ap = a, ""
		}
		if strings.EqualFold(strings.Trim(ah, "[]"), host) && (ap == "" || ap == port) {
			return true
		}
	}
	return false
}

// checkRedirect follows at most MaxFetchRedirects redirects, each to an
// http(s) URL, not from https to http, and not from another host to an
// allowed one (which only the client's own URL may name). The address
// each leads to is checked when it is dialed.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxFetchRedirects {
		return fmt.Errorf("more than %d redirects", MaxFetchRedirects)
	}
	from, to := via[len(via)-1].URL, req.URL
	switch {
	case to.Scheme != "http" && to.Scheme != "https":
		return fmt.Errorf("refused a redirect to a %q URL", to.Scheme)
	case from.Scheme == "https" && to.Scheme == "http":
		return errors.New("refused a redirect from https to http")
	case !strings.EqualFold(from.Host, to.Host) && f.allowed(hostPort(to)):
		return fmt.Errorf("refused a redirect from %s to %s: only the request's own URL may name that host", from.Host, to.Host)
	}
	return nil
}

// hostPort is a URL's "host:port", with the scheme's default port.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
