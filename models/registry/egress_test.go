package registry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/registry/registrytest"
)

// Every range of the IANA IPv4 and IPv6 special-purpose registries that
// is not globally reachable is refused, with its class; the addresses
// just outside each range pass; IPv6 forms carrying an IPv4 address are
// judged by it.
func TestAddrClass(t *testing.T) {
	for _, tc := range []struct {
		ip  string
		why string // "" for public
	}{
		// IPv4.
		{"0.0.0.0", "unspecified"}, {"0.1.2.3", "this network"},
		{"10.1.2.3", "private"}, {"9.255.255.255", ""}, {"11.0.0.0", ""},
		{"100.64.0.0", "carrier-grade NAT"}, {"100.100.100.200", "carrier-grade NAT"}, {"100.127.255.255", "carrier-grade NAT"},
		{"100.63.255.255", ""}, {"100.128.0.0", ""},
		{"127.0.0.1", "loopback"}, {"127.3.4.5", "loopback"},
		{"169.254.169.254", "link-local"}, {"169.255.0.1", ""},
		{"172.16.0.1", "private"}, {"172.31.255.255", "private"}, {"172.32.0.1", ""}, {"172.15.255.255", ""},
		{"192.0.0.1", "IETF protocol"}, {"192.0.0.170", "IETF protocol"}, {"192.0.2.1", "documentation"},
		{"192.88.99.1", "6to4 relay"}, {"192.168.1.1", "private"}, {"192.169.0.1", ""},
		{"198.18.0.1", "benchmarking"}, {"198.19.255.255", "benchmarking"}, {"198.17.255.255", ""}, {"198.20.0.0", ""},
		{"198.51.100.7", "documentation"}, {"203.0.113.9", "documentation"}, {"203.0.114.1", ""},
		{"224.0.0.1", "link-local"}, {"239.1.2.3", "multicast"}, {"240.0.0.1", "reserved"},
		{"255.255.255.254", "reserved"}, {"255.255.255.255", "broadcast"},
		{"8.8.8.8", ""}, {"104.21.0.1", ""}, {"223.255.255.255", ""},
		// IPv6.
		{"::", "unspecified"}, {"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"}, {"::ffff:10.0.0.1", "private"}, {"::ffff:100.100.100.200", "carrier-grade NAT"},
		{"::ffff:8.8.8.8", ""},
		{"::127.0.0.1", "IPv4-compatible"}, {"::8.8.8.8", "IPv4-compatible"}, {"::ffff:0:127.0.0.1", "reserved"},
		{"64:ff9b::127.0.0.1", "loopback"}, {"64:ff9b::7f00:1", "loopback"}, {"64:ff9b::a9fe:a9fe", "link-local"},
		{"64:ff9b::100.100.100.200", "carrier-grade NAT"}, {"64:ff9b::8.8.8.8", ""},
		{"64:ff9b:1::808:808", "local-use NAT64"}, {"64:ff9b:1:ffff::1", "local-use NAT64"},
		{"100::1", "discard-only"}, {"100:0:0:1::1", "dummy"},
		{"2001::1", "IETF protocol"}, {"2001:2::1", "IETF protocol"}, {"2001:1ff::1", "IETF protocol"}, {"2001:200::1", ""},
		{"2001:db8::1", "documentation"}, {"3fff::1", "documentation"}, {"5f00::1", "segment-routing"},
		{"2002:7f00:1::1", "loopback"}, {"2002:a00:1::", "private"}, {"2002:6464:64c8::1", "carrier-grade NAT"}, {"2002:808:808::1", ""},
		{"fc00::1", "private"}, {"fd12:3456::1", "private"}, {"fe80::1", "link-local"}, {"fe80::1%eth0", "link-local"},
		{"febf::1", "link-local"}, {"fec0::1", "site-local"},
		{"ff02::1", "link-local"}, {"ff05::2", "multicast"}, {"ff0e::1", "multicast"},
		{"4000::1", "reserved"}, {"1::1", "reserved"}, {"e000::1", "reserved"},
		{"2606:4700::1", ""}, {"2001:4860:4860::8888", ""}, {"2a00:1450::1", ""}, {"3ffe::1", ""},
	} {
		got := AddrClass(netip.MustParseAddr(tc.ip))
		if (got == "") != (tc.why == "") || !strings.Contains(got, tc.why) {
			t.Errorf("AddrClass(%s) = %q, want %q", tc.ip, got, tc.why)
		}
	}
	if got := AddrClass(netip.Addr{}); got == "" {
		t.Errorf("the zero Addr passes")
	}
}

func TestAllowed(t *testing.T) {
	c := &Client{Allow: []string{"localhost:5000", "Registry.Internal, [::1]", "10.0.0.7:443"}}
	for host, want := range map[string]bool{
		"localhost:5000": true, "localhost:5001": false, "localhost": false,
		"registry.internal": true, "registry.internal:8080": true, "REGISTRY.INTERNAL:1": true,
		"[::1]:5000": true, "10.0.0.7:443": true, "10.0.0.7:80": false, "evil.example": false,
	} {
		if got := c.allowed(host); got != want {
			t.Errorf("allowed(%q) = %v, want %v", host, got, want)
		}
	}
}

// Without --allow-registry, a registry on loopback (by address or by a
// name that resolves to it) is refused before any request reaches it;
// naming it (with or without its port) lets the pull through.
func TestEgressRefusesLoopbackUnlessAllowed(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	publish(t, reg, "library/bigram", "latest")
	_, port, _ := net.SplitHostPort(reg.Host())
	for _, host := range []string{reg.Host(), "localhost:" + port} {
		for _, allow := range [][]string{nil, {"127.0.0.2"}, {"127.0.0.1:1"}, {"registry.ollama.ai"}} {
			st := &models.Store{Dir: t.TempDir()}
			err := (&Client{Insecure: true, Allow: allow}).Pull(context.Background(), st, name(t, host+"/library/bigram"), nil)
			var ee *EgressError
			if !errors.Is(err, ErrEgress) || !errors.As(err, &ee) {
				t.Fatalf("pull from %s with allow %v: %v", host, allow, err)
			}
			if !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "--allow-registry") {
				t.Errorf("refusal does not say why or how to allow it: %v", err)
			}
		}
	}
	reg.Mu.Lock()
	n := len(reg.Requests)
	reg.Mu.Unlock()
	if n != 0 {
		t.Fatalf("refused pulls reached the registry: %v", reg.Requests)
	}
	for _, allow := range []string{reg.Host(), "127.0.0.1", "localhost:" + port} {
		host := reg.Host()
		if strings.HasPrefix(allow, "localhost") {
			host = allow
		}
		st := &models.Store{Dir: t.TempDir()}
		if err := (&Client{Insecure: true, Allow: []string{allow}}).Pull(context.Background(), st, name(t, host+"/library/bigram"), nil); err != nil {
			t.Fatalf("allowed %s: %v", allow, err)
		}
	}
	// Push is guarded the same way.
	st := &models.Store{Dir: t.TempDir()}
	c := &Client{Insecure: true, Allow: []string{reg.Host()}}
	if err := c.Pull(context.Background(), st, name(t, reg.Host()+"/library/bigram"), nil); err != nil {
		t.Fatal(err)
	}
	if err := (&Client{Insecure: true}).Push(context.Background(), st, name(t, reg.Host()+"/library/bigram"), nil); !errors.Is(err, ErrEgress) {
		t.Fatalf("push to a loopback registry not allowed: %v", err)
	}
}

// front is an allowed registry that answers blob downloads (or upload
// starts) with a redirect to target, and proxies the rest to reg.
func front(t *testing.T, reg *registrytest.Server, target func(r *http.Request) string) *httptest.Server {
	t.Helper()
	backend, _ := url.Parse(reg.HTTP.URL)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := target(r); to != "" {
			if r.Method == http.MethodPost {
				w.Header().Set("Location", to)
				w.WriteHeader(http.StatusAccepted)
				return
			}
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			return
		}
		r2 := r.Clone(r.Context())
		r2.RequestURI, r2.URL.Scheme, r2.URL.Host = "", backend.Scheme, backend.Host
		resp, err := http.DefaultTransport.RoundTrip(r2)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			w.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// A registry's redirect (Ollama's registry sends blob downloads to a CDN)
// is followed within its host, and to another host only when that host
// has a public address: never to loopback, nor to another registry the
// operator allowed.
func TestRedirectsToOtherHosts(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	publish(t, reg, "library/bigram", "latest")
	_, port, _ := net.SplitHostPort(reg.Host())
	blobs := func(to string) func(r *http.Request) string {
		return func(r *http.Request) string {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				return to + r.URL.Path
			}
			return ""
		}
	}
	cases := []struct {
		name   string
		target string
		allow  []string
		ok     bool
	}{
		// Same host (the front itself is only a proxy; the registry's
		// port is another "host:port", so this one is allowed by both).
		{"another allowed registry", reg.HTTP.URL, nil, false},
		{"another host on loopback", "http://localhost:" + port, nil, false},
		{"another host on loopback, though allowed", "http://localhost:" + port, []string{"localhost"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fr := front(t, reg, blobs(tc.target))
			frHost := strings.TrimPrefix(fr.URL, "http://")
			allow := append([]string{frHost, reg.Host()}, tc.allow...)
			st := &models.Store{Dir: t.TempDir()}
			err := (&Client{Insecure: true, Allow: allow}).Pull(context.Background(), st, name(t, frHost+"/library/bigram"), nil)
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, ErrEgress)) {
				t.Fatalf("pull redirected to %s: %v", tc.target, err)
			}
		})
	}
	// A redirect within the same host is followed.
	var fr *httptest.Server
	fr = front(t, reg, func(r *http.Request) string {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") && r.URL.Query().Get("hop") == "" {
			return fr.URL + r.URL.Path + "?hop=1"
		}
		return ""
	})
	frHost := strings.TrimPrefix(fr.URL, "http://")
	st := &models.Store{Dir: t.TempDir()}
	if err := (&Client{Insecure: true, Allow: []string{frHost}}).Pull(context.Background(), st, name(t, frHost+"/library/bigram"), nil); err != nil {
		t.Fatalf("same-host redirect: %v", err)
	}
	// An upload Location on another allowed host is refused.
	up := front(t, reg, func(r *http.Request) string {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/uploads/") {
			return reg.HTTP.URL + "/upload/1"
		}
		return ""
	})
	upHost := strings.TrimPrefix(up.URL, "http://")
	// A new system layer: a blob the registry lacks, so it is uploaded.
	mf := &models.Modelfile{Commands: []models.Command{{Name: models.CmdFrom, Value: frHost + "/library/bigram"}, {Name: models.CmdSystem, Value: "Another prompt."}}}
	if err := st.Create(upHost+"/me/copy:v1", mf, nil); err != nil {
		t.Fatal(err)
	}
	err := (&Client{Insecure: true, Allow: []string{upHost, reg.Host()}}).Push(context.Background(), st, name(t, upHost+"/me/copy:v1"), nil)
	if !errors.Is(err, ErrEgress) {
		t.Fatalf("upload Location on another allowed host: %v", err)
	}
}

func TestCheckHop(t *testing.T) {
	c := &Client{Allow: []string{"internal:5000"}}
	u := func(s string) *url.URL { v, _ := url.Parse(s); return v }
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"https://registry.ollama.ai/v2/x", "https://cdn.example/blob", true},
		{"https://registry.ollama.ai/v2/x", "https://registry.ollama.ai/v2/y", true},
		{"https://registry.ollama.ai/v2/x", "http://cdn.example/blob", false},
		{"http://internal:5000/v2/x", "http://internal:5000/v2/y", true},
		{"https://registry.ollama.ai/v2/x", "http://internal:5000/v2/y", false},
		{"https://evil.example/v2/x", "https://internal:5000/v2/y", false},
		{"https://registry.ollama.ai/v2/x", "file:///etc/passwd", false},
	} {
		if err := c.checkHop(u(tc.from), u(tc.to)); (err == nil) != tc.ok {
			t.Errorf("%s → %s: %v, want ok %v", tc.from, tc.to, err, tc.ok)
		}
	}
}

// A registry's error page never reaches the caller: the error names the
// host and the status only.
func TestRemoteBodyNotReturned(t *testing.T) {
	const secret = "internal-stack-trace-at-10.0.0.5"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusInternalServerError
		if strings.Contains(r.URL.Path, "missing") {
			code = http.StatusNotFound
		}
		http.Error(w, `{"errors":[{"code":"X","message":"`+secret+`"}]}`, code)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	c := &Client{Insecure: true, Allow: []string{host}}
	st := &models.Store{Dir: t.TempDir()}
	for model, want := range map[string]error{"library/broken": ErrRemote, "library/missing": ErrNotFound} {
		err := c.Pull(context.Background(), st, name(t, host+"/"+model), nil)
		if !errors.Is(err, want) {
			t.Fatalf("%s: %v", model, err)
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), host) || !strings.Contains(err.Error(), "answered") {
			t.Errorf("%s: error %q", model, err)
		}
	}
}

// A registry that redirects without end is the registry's failure (502 at
// the API), not this server's.
func TestRedirectLoopIsRemoteError(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	publish(t, reg, "library/bigram", "latest")
	var self string
	fr := front(t, reg, func(r *http.Request) string {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			return self + r.URL.Path
		}
		return ""
	})
	self = fr.URL
	frHost := strings.TrimPrefix(fr.URL, "http://")
	err := (&Client{Insecure: true, Allow: []string{frHost, reg.Host()}}).Pull(context.Background(), &models.Store{Dir: t.TempDir()}, name(t, frHost+"/library/bigram"), nil)
	if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), "redirects") {
		t.Fatalf("redirect loop: %v", err)
	}
}
