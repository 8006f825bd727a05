package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testPNG is a small PNG.
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 8, 8))
	for i := range 8 {
		img.SetNRGBA(i, i, color.NRGBA{200, 30, 30, 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// imageServer serves routes on loopback and counts the requests it gets.
func imageServer(t *testing.T, routes map[string]http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	mux := http.NewServeMux()
	for p, h := range routes {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { hits.Add(1); h(w, r) })
	}
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts, &hits
}

func wantFetchErr(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: fetched, want an error with %q", what, want)
		return
	}
	if !errors.Is(err, ErrFetch) {
		t.Errorf("%s: %v does not wrap ErrFetch", what, err)
	}
	if !strings.HasPrefix(err.Error(), "fetching ") {
		t.Errorf("%s: %q does not begin with \"fetching \"", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q, want it to say %q", what, err, w)
		}
	}
}

// Without an allow-list, every address that is not public is refused
// when the connection is made: a live server on loopback gets no
// request, a name that resolves to loopback is refused as its address,
// and IPv4-mapped IPv6 forms are judged as IPv4. Nothing here connects
// anywhere: the refusal comes before connect.
func TestFetchRefusesNonPublicAddresses(t *testing.T) {
	pic := testPNG(t)
	ts, hits := imageServer(t, map[string]http.HandlerFunc{"/": func(w http.ResponseWriter, r *http.Request) { w.Write(pic) }})
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	f := &Fetcher{Timeout: 5 * time.Second}
	for _, c := range []struct{ url, why string }{
		{ts.URL + "/x.png", "a loopback address"},
		{"http://localhost:" + port + "/x.png", "a loopback address"},
		{"http://127.1.2.3:" + port + "/", "a loopback address"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "a loopback address"},
		{"http://10.0.0.1/x.png", "a private address"},
		{"http://172.16.5.4/x.png", "a private address"},
		{"http://192.168.1.1:8080/x.png", "a private address"},
		{"https://[::ffff:10.1.2.3]/x.png", "a private address"},
		{"http://[::ffff:192.168.0.1]/x.png", "a private address"},
		{"http://169.254.169.254/latest/meta-data/", "a link-local address"},
		{"http://0.0.0.0:" + port + "/", "an unspecified address"},
		{"http://224.0.0.1/", "a link-local address"},
		{"http://239.1.2.3/", "a multicast address"},
		{"http://[ff02::1]/", "a link-local address"},
		{"http://[ff05::2]/", "a multicast address"},
		{"http://255.255.255.255/", "a broadcast address"},
		{"http://[::1]:" + port + "/", "a loopback address"},
		{"http://[fd00::1]/x.png", "a private address"},
		{"http://[fe80::1]/x.png", "a link-local address"},
		{"http://[::]:" + port + "/", "an unspecified address"},
		{"http://user:secret@10.0.0.1/x.png", "a private address"},
	} {
		start := time.Now()
		_, err := f.Fetch(context.Background(), c.url)
		if err != nil && !errors.Is(err, ErrAddress) && (strings.Contains(err.Error(), "address family not supported") || strings.Contains(err.Error(), "cannot assign requested address")) {
			t.Logf("%s: no IPv6 here: %v", c.url, err)
			continue
		}
		wantFetchErr(t, c.url, err, c.why, "image URLs are fetched only from public addresses")
		if !errors.Is(err, ErrAddress) {
			t.Errorf("%s: %v does not wrap ErrAddress", c.url, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the URL's password: %v", c.url, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: refused after %v, want at once", c.url, d)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server got %d requests, want none", n)
	}
}

// The address check happens when each connection is dialed, on the
// addresses the name resolves to then: with resolution and connecting
// hooked (a public address is "reached" by a connection to the loopback
// test server; nothing leaves the host), a name of the cloud metadata
// service (carrier-grade NAT), of a benchmarking or NAT64-embedded
// loopback address is refused without a connection, and a name that
// rebinds from a public address to loopback is fetched once, then
// refused at the next connection.
func TestFetchChecksEachDial(t *testing.T) {
	pic := testPNG(t)
	ts, hits := imageServer(t, map[string]http.HandlerFunc{"/": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close") // each fetch dials again
		w.Write(pic)
	}})
	answers := map[string][]string{
		"metadata.example": {"100.100.100.200"},
		"bench.example":    {"198.18.0.1"},
		"nat64.example":    {"64:ff9b::127.0.0.1"},
		"compat.example":   {"::127.0.0.1"},
		"rebind.example":   {"93.184.216.34", "127.0.0.1"},
	}
	var dialed []string
	f := &Fetcher{
		Timeout: 5 * time.Second,
		Lookup: func(_ context.Context, _, host string) ([]netip.Addr, error) {
			list := answers[host]
			if len(list) == 0 {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			if len(list) > 1 {
				answers[host] = list[1:]
			}
			return []netip.Addr{netip.MustParseAddr(list[0])}, nil
		},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed = append(dialed, addr)
			var d net.Dialer
			return d.DialContext(ctx, network, ts.Listener.Addr().String())
		},
	}
	for host, why := range map[string]string{
		"metadata.example": "100.100.100.200, a shared (carrier-grade NAT) address",
		"bench.example":    "a benchmarking address",
		"nat64.example":    "a loopback address",
		"compat.example":   "an IPv4-compatible address",
	} {
		_, err := f.Fetch(context.Background(), "http://"+host+"/x.png")
		wantFetchErr(t, host, err, why, "image URLs are fetched only from public addresses")
	}
	if data, err := f.Fetch(context.Background(), "http://rebind.example/x.png"); err != nil || !bytes.Equal(data, pic) {
		t.Fatalf("rebind.example while public: %v", err)
	}
	_, err := f.Fetch(context.Background(), "http://rebind.example/x.png")
	wantFetchErr(t, "rebind.example after rebinding", err, "resolves to 127.0.0.1, a loopback address")
	if len(dialed) != 1 || dialed[0] != "93.184.216.34:80" || hits.Load() != 1 {
		t.Errorf("dialed %v (%d requests served), want only 93.184.216.34:80 once", dialed, hits.Load())
	}
}

// The Reader: without a Fetcher, http(s) URLs wrap ErrRemoteURL (the
// 400 of a server without --allow-image-urls) and data URLs are read; with
// one, at most MaxFetches URLs are fetched a request (data URLs do not
// count), and a fetched image is what the server sent.
func TestFetchReader(t *testing.T) {
	pic := testPNG(t)
	ts, hits := imageServer(t, map[string]http.HandlerFunc{"/x.png": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream") // not trusted either way
		w.Write(pic)
	}})
	data := DataURL(pic)
	if !strings.HasPrefix(data, "data:image/png;base64,") {
		t.Errorf("DataURL: %.40s…", data)
	}

	var none *Fetcher
	read := none.Reader(context.Background())
	for _, u := range []string{ts.URL + "/x.png", "HTTPS://example.com/x.png"} {
		if _, err := read(u); !errors.Is(err, ErrRemoteURL) {
			t.Errorf("no fetcher, %s: %v, want ErrRemoteURL", u, err)
		}
	}
	if got, err := read(data); err != nil || !bytes.Equal(got, pic) {
		t.Errorf("no fetcher, data URL: %v", err)
	}
	if hits.Load() != 0 {
		t.Errorf("without a fetcher the server got %d requests", hits.Load())
	}

	f := &Fetcher{MaxFetches: 2, Allow: []string{ts.Listener.Addr().String()}}
	read = f.Reader(context.Background())
	for i := range 2 {
		got, err := read(ts.URL + "/x.png")
		if err != nil || !bytes.Equal(got, pic) {
			t.Fatalf("fetch %d: %v (%d bytes, want %d)", i, err, len(got), len(pic))
		}
		if _, err := read(data); err != nil {
			t.Errorf("data URL after %d fetches: %v", i+1, err)
		}
	}
	_, err := read(ts.URL + "/x.png")
	wantFetchErr(t, "a third URL", err, "too many image URLs", "at most 2")
	if hits.Load() != 2 {
		t.Errorf("the server got %d requests, want 2", hits.Load())
	}
	// Another request has its own count.
	if _, err := f.Reader(context.Background())(ts.URL + "/x.png"); err != nil {
		t.Errorf("a new request: %v", err)
	}
	// Bad data URLs are still refused as before.
	if _, err := read("data:text/plain;base64,aGk="); !errors.Is(err, ErrInvalid) {
		t.Errorf("text data URL: %v", err)
	}
}

// Answers that are not an image of at most MaxBytes within Timeout are
// refused: the body is not read past the limit, a slow server is left.
func TestFetchLimits(t *testing.T) {
	pic := testPNG(t)
	const limit = 64 << 10
	var sent atomic.Int64
	ts, _ := imageServer(t, map[string]http.HandlerFunc{
		"/ok.png": func(w http.ResponseWriter, r *http.Request) { w.Write(pic) },
		"/exact": func(w http.ResponseWriter, r *http.Request) {
			w.Write(append(pic, make([]byte, limit-len(pic))...)) // trailing bytes after IEND: still a PNG by its head
		},
		"/declared": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(limit+1))
			w.Write(pic)
		},
		"/endless": func(w http.ResponseWriter, r *http.Request) {
			w.Write(pic) // no Content-Length: chunked, and it never ends
			chunk := make([]byte, 32<<10)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				sent.Add(int64(len(chunk)))
			}
		},
		"/slow-head": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
			w.Write(pic)
		},
		"/slow-body": func(w http.ResponseWriter, r *http.Request) {
			w.Write(pic[:10])
			w.(http.Flusher).Flush()
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
			w.Write(pic[10:])
		},
		"/html": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<html><body>not an image</body></html>"))
		},
		"/empty": func(w http.ResponseWriter, r *http.Request) {},
		"/wav": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("RIFF\x24\x00\x00\x00WAVEfmt "))
		},
		"/missing": func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		"/teapot":  func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot); w.Write(pic) },
	})
	f := &Fetcher{MaxBytes: limit, Timeout: 500 * time.Millisecond, Allow: []string{ts.Listener.Addr().String()}}
	ctx := context.Background()
	if got, err := f.Fetch(ctx, ts.URL+"/ok.png"); err != nil || !bytes.Equal(got, pic) {
		t.Errorf("ok.png: %v", err)
	}
	if got, err := f.Fetch(ctx, ts.URL+"/exact"); err != nil || len(got) != limit {
		t.Errorf("exactly the limit: %d bytes, %v", len(got), err)
	}
	_, err := f.Fetch(ctx, ts.URL+"/declared")
	wantFetchErr(t, "Content-Length over the limit", err, fmt.Sprintf("the image is %d bytes, more than the %d allowed", limit+1, limit))

	// Refused for its size as soon as the limit is passed, not for the
	// 500 ms timeout (the error says which): no wall-clock bound, which a
	// busy machine would break.
	_, err = f.Fetch(ctx, ts.URL+"/endless")
	wantFetchErr(t, "endless body", err, fmt.Sprintf("more than the %d bytes allowed", limit))

	for _, p := range []string{"/slow-head", "/slow-body"} {
		start := time.Now()
		_, err = f.Fetch(ctx, ts.URL+p)
		wantFetchErr(t, p, err, "no complete answer within 500ms")
		if d := time.Since(start); d < 400*time.Millisecond {
			t.Errorf("%s: gave up after %v, before the 500ms timeout", p, d)
		}
	}
	// The request's own context bounds the fetch too.
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err = (&Fetcher{Allow: f.Allow}).Fetch(cctx, ts.URL+"/slow-head"); err == nil || !errors.Is(err, ErrFetch) {
		t.Errorf("cancelled request: %v", err)
	}

	for p, want := range map[string]string{
		"/html":    "not a JPEG, PNG, GIF or WebP image (the data looks like text/html",
		"/empty":   "not a JPEG, PNG, GIF or WebP image (the data is empty)",
		"/wav":     "not a JPEG, PNG, GIF or WebP image",
		"/missing": `the server answered "404 Not Found"`,
		"/teapot":  `the server answered "418 I'm a teapot"`,
	} {
		_, err := f.Fetch(ctx, ts.URL+p)
		wantFetchErr(t, p, err, want, "fetching "+ts.URL+p+": ")
	}
	for _, u := range []string{"http://", "https:///x.png", "http://[::1/x.png", "ftp://example.com/x.png", "http://exa mple.com/"} {
		_, err := f.Fetch(ctx, u)
		wantFetchErr(t, u, err)
	}
	long := "http://10.0.0.1/" + strings.Repeat("a", 5000)
	if _, err := f.Fetch(ctx, long); err == nil || len(err.Error()) > 400 {
		t.Errorf("a 5000-byte URL: error of %d bytes, want it shortened", len(err.Error()))
	}
}

// Redirects: at most MaxFetchRedirects, each to http(s), and each one's
// address checked when it is dialed: an allowed server cannot redirect to
// another loopback port, nor to a name that resolves to loopback.
func TestFetchRedirects(t *testing.T) {
	pic := testPNG(t)
	other, otherHits := imageServer(t, map[string]http.HandlerFunc{"/x.png": func(w http.ResponseWriter, r *http.Request) { w.Write(pic) }})
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	var ts *httptest.Server
	ts, _ = imageServer(t, map[string]http.HandlerFunc{
		"/x.png": func(w http.ResponseWriter, r *http.Request) { w.Write(pic) },
		"/hop/": func(w http.ResponseWriter, r *http.Request) {
			var n int
			fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/hop/"), &n)
			if n == 0 {
				http.Redirect(w, r, "/x.png", http.StatusFound)
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusMovedPermanently)
		},
		"/to-other": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/x.png", http.StatusFound)
		},
		"/to-localhost": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://localhost:"+otherPort+"/x.png", http.StatusFound)
		},
		"/to-private": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://10.0.0.1/x.png", http.StatusFound)
		},
		"/to-file": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		},
		"/to-gopher": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "gopher://10.0.0.1/", http.StatusFound)
		},
	})
	f := &Fetcher{Timeout: 5 * time.Second, Allow: []string{ts.Listener.Addr().String()}}
	ctx := context.Background()
	// /hop/2 is 3 redirects: allowed; /hop/3 is 4.
	if got, err := f.Fetch(ctx, ts.URL+"/hop/2"); err != nil || !bytes.Equal(got, pic) {
		t.Errorf("3 redirects: %v", err)
	}
	_, err := f.Fetch(ctx, ts.URL+"/hop/3")
	wantFetchErr(t, "4 redirects", err, "more than 3 redirects")
	for p, why := range map[string]string{
		"/to-other":     "a loopback address",
		"/to-localhost": "a loopback address",
		"/to-private":   "a private address",
	} {
		_, err := f.Fetch(ctx, ts.URL+p)
		wantFetchErr(t, p, err, why)
		if !errors.Is(err, ErrAddress) {
			t.Errorf("%s: %v does not wrap ErrAddress", p, err)
		}
	}
	if otherHits.Load() != 0 {
		t.Errorf("the server redirected to got %d requests, want none", otherHits.Load())
	}
	for _, p := range []string{"/to-file", "/to-gopher"} {
		_, err := f.Fetch(ctx, ts.URL+p)
		wantFetchErr(t, p, err, "refused a redirect to a")
	}

	// From https to http, and from another host to an allowed one.
	req := func(s string) *http.Request { u, _ := url.Parse(s); return &http.Request{URL: u} }
	if err := f.checkRedirect(req("http://example.com/x.png"), []*http.Request{req("https://example.com/a")}); err == nil || !strings.Contains(err.Error(), "from https to http") {
		t.Errorf("https to http: %v", err)
	}
	if err := f.checkRedirect(req(ts.URL+"/x.png"), []*http.Request{req("http://example.com/a")}); err == nil || !strings.Contains(err.Error(), "only the request's own URL") {
		t.Errorf("to the allowed host: %v", err)
	}
	if err := f.checkRedirect(req("https://cdn.example.com/x.png"), []*http.Request{req("http://example.com/a")}); err != nil {
		t.Errorf("http to https on another public host: %v", err)
	}
}
