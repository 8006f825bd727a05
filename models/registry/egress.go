package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrEgress is wrapped when a pull or push would connect to an address
// the operator has not allowed: one that is not public (AddrClass:
// loopback, link-local, private, carrier-grade NAT, multicast, reserved,
// or an IPv6 form carrying one of those), or a redirect that leaves the
// registry for one of those.
var ErrEgress = errors.New("registry address not allowed")

// EgressError is the refusal of one connection. It names the host and
// the address it resolved to, never anything the remote side sent.
type EgressError struct {
	Host string // the host as named in the URL
	Addr string // the address it resolved to, or "" for a refused hop
	Why  string
}

func (e *EgressError) Error() string {
	if e.Addr == "" {
		return fmt.Sprintf("registry %s: %s", e.Host, e.Why)
	}
	return fmt.Sprintf("registry %s resolves to %s, %s; the server's operator must allow it with --allow-registry %s (TADPOLE_ALLOW_REGISTRY)", e.Host, e.Addr, e.Why, e.Host)
}

func (e *EgressError) Unwrap() error { return ErrEgress }

// hostPort is one --allow-registry entry: a host, and a port or "" for
// any port.
type hostPort struct{ host, port string }

func parseHostPort(s string) hostPort {
	s = strings.ToLower(strings.TrimSpace(s))
	if h, p, err := net.SplitHostPort(s); err == nil {
		return hostPort{strings.Trim(h, "[]"), p}
	}
	return hostPort{strings.Trim(s, "[]"), ""}
}

// allowed reports whether the operator named host ("host" or
// "host:port", as in a URL) with Allow: such a registry may live at any
// address.
func (c *Client) allowed(host string) bool {
	want := parseHostPort(host)
	for _, a := range c.Allow {
		for _, e := range strings.Split(a, ",") {
			got := parseHostPort(e)
			if got.host != "" && got.host == want.host && (got.port == "" || got.port == want.port) {
				return true
			}
		}
	}
	return false
}

// client is the HTTP client of every request the Client makes. Its
// dialer checks the address each connection actually goes to (after DNS
// resolution, so a name that re-resolves to 127.0.0.1 between a check
// and the connection is still refused): only public addresses, unless
// the host is allowed. Redirects are checked by checkRedirect.
func (c *Client) client() *http.Client {
	c.once.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = c.dialContext
		t.Proxy = c.proxy
		c.hc = &http.Client{Transport: t, CheckRedirect: c.checkRedirect}
	})
	return c.hc
}

// dialContext connects to addr ("host:port" as named in the URL, or the
// proxy's), refusing non-public addresses (PublicDialer) for hosts that
// are not allowed.
func (c *Client) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &PublicDialer{
		Allowed: func(a string) bool { return c.allowed(a) || c.isProxy(a) },
	}
	return d.DialContext(ctx, network, addr)
}

// proxy is http.ProxyFromEnvironment (HTTPS_PROXY, NO_PROXY …). The
// proxy is the operator's choice, so connections to it are not checked;
// the registry's own name is then checked by resolving it here, since the
// proxy, not this process, connects to it.
func (c *Client) proxy(req *http.Request) (*url.URL, error) {
	u, err := http.ProxyFromEnvironment(req)
	if err != nil || u == nil {
		return u, err
	}
	if !c.allowed(req.URL.Host) {
		ips, err := net.DefaultResolver.LookupNetIP(req.Context(), "ip", req.URL.Hostname())
		if err != nil {
			return nil, fmt.Errorf("registry %s: resolve: %w", req.URL.Hostname(), err)
		}
		for _, ip := range ips {
			if why := AddrClass(ip); why != "" {
				return nil, &EgressError{Host: req.URL.Host, Addr: ip.String(), Why: why}
			}
		}
	}
	c.mu.Lock()
	if c.proxies == nil {
		c.proxies = map[string]bool{}
	}
	c.proxies[canonicalAddr(u)] = true
	c.mu.Unlock()
	return u, nil
}

func (c *Client) isProxy(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proxies[strings.ToLower(addr)]
}

// canonicalAddr is the "host:port" the transport dials for a proxy URL.
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}

// checkHop decides whether a request may go from one URL to the next
// (a redirect, or an upload's Location). Within one host anything goes
// but a downgrade from https to http. Another host is reached only when
// it is a public address: Ollama's registry sends blob downloads to a CDN
// on another host, so refusing every other host would break pulls from
// it, but an allowed (internal) registry is never reachable through a
// hop, which would let any registry point the server at it.
func (c *Client) checkHop(from, to *url.URL) error {
	if to.Scheme != "http" && to.Scheme != "https" {
		return &EgressError{Host: from.Host, Why: fmt.Sprintf("refused a redirect to a %q URL", to.Scheme)}
	}
	if from.Scheme == "https" && to.Scheme == "http" {
		return &EgressError{Host: from.Host, Why: "refused a redirect from https to http"}
	}
	if !strings.EqualFold(from.Host, to.Host) && c.allowed(to.Host) {
		return &EgressError{Host: from.Host, Why: fmt.Sprintf("refused a redirect to the allowed registry %s: redirects to other hosts go only to public addresses", to.Host)}
	}
	return nil
}

// maxRedirects bounds the redirects of one request.
const maxRedirects = 10

func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("registry %s: more than %d redirects: %w", via[0].URL.Host, maxRedirects, ErrRemote)
	}
	return c.checkHop(via[len(via)-1].URL, req.URL)
}
