package registry

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// hookedDialer is a PublicDialer whose names resolve from a table (a
// name's answers are given in turn, the last repeated: DNS rebinding)
// and whose connections are pipes: nothing leaves the process. dialed
// lists the "ip:port" each connection went to.
type hookedDialer struct {
	PublicDialer
	mu      sync.Mutex
	answers map[string][][]string
	dialed  []string
}

func newHookedDialer(answers map[string][][]string) *hookedDialer {
	h := &hookedDialer{answers: answers}
	h.Lookup = func(_ context.Context, _, host string) ([]netip.Addr, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		list, ok := h.answers[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		answer := list[0]
		if len(list) > 1 {
			h.answers[host] = list[1:]
		}
		var ips []netip.Addr
		for _, a := range answer {
			ips = append(ips, netip.MustParseAddr(a))
		}
		return ips, nil
	}
	h.Dial = func(_ context.Context, _, addr string) (net.Conn, error) {
		h.mu.Lock()
		h.dialed = append(h.dialed, addr)
		h.mu.Unlock()
		c1, c2 := net.Pipe()
		c2.Close()
		return c1, nil
	}
	return h
}

// The dialer judges the addresses it connects to, after resolution, at
// each dial: a name of the metadata service, a NAT64 or 6to4 form of
// loopback, a name that re-resolves to loopback after a public answer,
// are refused before any connection; of a mixed answer only the public
// address is dialed; an allowed host is dialed as it is.
func TestPublicDialer(t *testing.T) {
	h := newHookedDialer(map[string][][]string{
		"metadata.example": {{"100.100.100.200"}},
		"rebind.example":   {{"93.184.216.34"}, {"127.0.0.1"}},
		"mixed.example":    {{"127.0.0.1", "10.0.0.1", "2606:4700::1"}},
		"nat64.example":    {{"64:ff9b::7f00:1", "::127.0.0.1"}},
		"bench.example":    {{"198.18.0.10"}},
	})
	h.Allowed = func(a string) bool { return a == "registry.internal:5000" }
	ctx := context.Background()
	refused := func(addr, want string) {
		t.Helper()
		n := len(h.dialed)
		c, err := h.DialContext(ctx, "tcp", addr)
		if c != nil {
			c.Close()
		}
		var ee *EgressError
		if !errors.Is(err, ErrEgress) || !errors.As(err, &ee) || !strings.Contains(err.Error(), want) {
			t.Errorf("dial %s: %v, want a refusal saying %q", addr, err, want)
		}
		if len(h.dialed) != n {
			t.Errorf("dial %s connected to %v", addr, h.dialed[n:])
		}
	}
	dialed := func(addr, want string) {
		t.Helper()
		n := len(h.dialed)
		c, err := h.DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		c.Close()
		if got := h.dialed[n:]; len(got) != 1 || got[0] != want {
			t.Errorf("dial %s connected to %v, want %s", addr, got, want)
		}
	}
	refused("metadata.example:80", "100.100.100.200")
	refused("bench.example:443", "benchmarking")
	refused("nat64.example:80", "loopback")
	refused("[64:ff9b::7f00:1]:80", "loopback")
	refused("[2002:7f00:1::1]:80", "loopback")
	refused("[::ffff:169.254.169.254]:80", "link-local")
	refused("100.100.100.200:80", "carrier-grade NAT")
	refused("[fe80::1%eth0]:80", "link-local")
	dialed("rebind.example:80", "93.184.216.34:80")
	refused("rebind.example:80", "loopback")
	refused("rebind.example:80", "loopback")
	dialed("mixed.example:443", "[2606:4700::1]:443")
	dialed("[64:ff9b::808:808]:443", "[64:ff9b::808:808]:443")
	dialed("registry.internal:5000", "registry.internal:5000")
	refused("127.0.0.1:5000", "loopback")

	// Without the Dial hook, a refused address never reaches connect(2).
	d := &PublicDialer{}
	if _, err := d.DialContext(ctx, "tcp", "127.0.0.1:1"); !errors.Is(err, ErrEgress) {
		t.Errorf("dial 127.0.0.1:1 without hooks: %v", err)
	}
	// A Refuse func makes the caller's error.
	mine := errors.New("mine")
	d.Refuse = func(host, addr, why string) error { return mine }
	if _, err := d.DialContext(ctx, "tcp", "[::1]:1"); err != mine {
		t.Errorf("Refuse not used: %v", err)
	}
}
