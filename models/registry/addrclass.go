package registry

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// special is one range of the IANA IPv4 and IPv6 Special-Purpose Address
// Registries (RFC 6890 and its updates) that is not a public unicast
// destination, with how a refusal names it. The ranges IANA marks
// globally reachable (AS112, AMT, the 192.0.0.9/10 anycasts, ORCHIDv2…)
// are left out where they sit outside a refused block.
type special struct {
	prefix netip.Prefix
	why    string
}

// specials4 are checked in order: the first match names the class, so a
// narrower range comes before a wider one holding it.
var specials4 = []special{
	{netip.MustParsePrefix("0.0.0.0/32"), "an unspecified address"},
	{netip.MustParsePrefix("0.0.0.0/8"), `a "this network" address`},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/24"), "a link-local address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "a broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
}

// specials6 are the IPv6 ranges refused outright. Every address outside
// 2000::/3 (global unicast) that is not below is refused as reserved;
// ::ffff:0:0/96, 64:ff9b::/96 and 2002::/16 carry an IPv4 address and
// are judged by it (embedded6).
var specials6 = []special{
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address (deprecated)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("100:0:0:1::/64"), "a dummy address"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol address (Teredo, benchmarking, ORCHID…)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
	{netip.MustParsePrefix("5f00::/16"), "a segment-routing address"},
	{netip.MustParsePrefix("fc00::/7"), "a private address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address (deprecated)"},
	{netip.MustParsePrefix("ff02::/16"), "a link-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4  = netip.MustParsePrefix("2002::/16")
	global6 = netip.MustParsePrefix("2000::/3")
)

// AddrClass says why ip is not a public unicast address ("a loopback
// address", "a private address" …), or "" when it is one. Every range of
// the IANA special-purpose registries that is not globally reachable is
// refused: for IPv4 0/8, 10/8, 100.64/10 (carrier-grade NAT, where cloud
// metadata services such as 100.100.100.200 live), 127/8, 169.254/16,
// 172.16/12, 192.0.0/24, the documentation nets, 192.88.99/24,
// 192.168/16, 198.18/15, 224/4 and 240/4; for IPv6 everything outside
// 2000::/3 but the forms below, and 2001::/23, 2001:db8::/32, 3fff::/20,
// 5f00::/16. An IPv6 address that carries an IPv4 one is judged by it:
// IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::a.b.c.d, which a NAT64
// gateway forwards to a.b.c.d) and 6to4 (2002:AABB:CCDD::). Registry
// pulls and the image URLs of server/media (--allow-image-urls) connect
// only to addresses it passes, checked at connect time (PublicDialer).
func AddrClass(ip netip.Addr) string {
	if !ip.IsValid() {
		return "an invalid address"
	}
	// A zone (fe80::1%eth0) makes Prefix.Contains false: judge the
	// address without it.
	ip = ip.WithZone("").Unmap()
	if ip.Is4() {
		for _, s := range specials4 {
			if s.prefix.Contains(ip) {
				return s.why
			}
		}
		return ""
	}
	if v4, ok := embedded6(ip); ok {
		if why := AddrClass(v4); why != "" {
			return why + " (inside " + ip.String() + ")"
		}
		return ""
	}
	for _, s := range specials6 {
		if s.prefix.Contains(ip) {
			return s.why
		}
	}
	if !global6.Contains(ip) {
		return "a reserved address"
	}
	return ""
}

// embedded6 is the IPv4 address a NAT64 (RFC 6052 well-known prefix) or
// 6to4 (RFC 3056) address carries: the address it ends up reaching.
func embedded6(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixTo4.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// PublicDialer connects only to public addresses (AddrClass), judging
// the addresses a connection is actually made to: a name is resolved
// here, each address checked, and only checked addresses are dialed
// (each again checked by the socket's Control, just before connect). So
// a name that resolves, or re-resolves (DNS rebinding), to an internal
// address is refused, whatever a check made earlier saw.
type PublicDialer struct {
	Timeout   time.Duration // of one DialContext, resolution included (0: 30 s)
	KeepAlive time.Duration // TCP keep-alive period (0: 30 s)
	// Allowed reports whether "host:port" (as dialed) may be at any
	// address; nil allows none.
	Allowed func(hostport string) bool
	// Refuse makes the error of a refused connection: host as dialed,
	// the address it resolved to, and why (AddrClass); nil returns
	// errors that wrap ErrEgress.
	Refuse func(host, addr, why string) error

	// Lookup and Dial replace name resolution and the connection itself
	// (nil: net.DefaultResolver and a net.Dialer). They are hooks for
	// tests, which must not connect outside loopback: Dial sees exactly
	// the "ip:port" that passed the check.
	Lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (d *PublicDialer) refuse(host, addr, why string) error {
	if d.Refuse != nil {
		return d.Refuse(host, addr, why)
	}
	return &EgressError{Host: host, Addr: addr, Why: why}
}

// DialContext connects to addr ("host:port"): to any address when
// Allowed says so, else to the first public address the host resolves
// to that answers. A refusal names the first address refused when no
// address passed.
func (d *PublicDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	timeout, keepAlive := d.Timeout, d.KeepAlive
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if keepAlive <= 0 {
		keepAlive = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nd := &net.Dialer{KeepAlive: keepAlive}
	dial := d.Dial
	if dial == nil {
		dial = nd.DialContext
	}
	if d.Allowed != nil && d.Allowed(addr) {
		return dial(ctx, network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, d.refuse(addr, addr, "an address that cannot be checked")
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		lookup := d.Lookup
		if lookup == nil {
			lookup = net.DefaultResolver.LookupNetIP
		}
		ipNet := "ip"
		switch network {
		case "tcp4":
			ipNet = "ip4"
		case "tcp6":
			ipNet = "ip6"
		}
		if ips, err = lookup(ctx, ipNet, host); err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	// The socket's own check: the address connect(2) is given.
	nd.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return d.refuse(host, address, "an address that cannot be checked")
		}
		if why := AddrClass(ap.Addr()); why != "" {
			return d.refuse(host, ap.Addr().String(), why)
		}
		return nil
	}
	var first, last error
	for _, ip := range ips {
		if why := AddrClass(ip); why != "" {
			if first == nil {
				first = d.refuse(host, ip.String(), why)
			}
			continue
		}
		c, err := dial(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	if last != nil {
		return nil, last
	}
	if first == nil {
		first = errors.New("no address to dial")
	}
	return nil, first
}
