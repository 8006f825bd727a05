package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// The defaults of the connection timeouts (Config.ReadTimeout,
// MinBodyRate, IdleTimeout; --read-timeout, --min-body-rate,
// --idle-timeout).
const (
	// DefaultReadTimeout is the longest a request body may pause, and
	// the grace given before DefaultMinBodyRate counts.
	DefaultReadTimeout = 30 * time.Second
	// DefaultMinBodyRate is the slowest average rate, in bytes a second,
	// a request body may arrive at past the first read timeout: 1 KB/s
	// (a 10 MiB body on a 100 KB/s link keeps a 10x margin).
	DefaultMinBodyRate = 1000
	// DefaultIdleTimeout is how long a keep-alive connection may wait
	// for its next request: longer than the 60 s of common load
	// balancers' idle timeouts, so that they, not this server, close
	// their pooled connections first.
	DefaultIdleTimeout = 120 * time.Second
	// headerTimeout is the longest the headers of a request may take.
	headerTimeout = 30 * time.Second
)

// connTimeouts are the timeouts of every listener's connections.
type connTimeouts struct {
	read    time.Duration // body pause and grace (0: no body deadline)
	minRate int64         // bytes a second after the grace (0: none)
	idle    time.Duration // keep-alive idle (0: none)
}

// timeoutsOf is cfg's timeouts with the defaults filled in; negative
// values turn a timeout off.
func timeoutsOf(cfg Config) connTimeouts {
	t := connTimeouts{read: cfg.ReadTimeout, minRate: cfg.MinBodyRate, idle: cfg.IdleTimeout}
	if t.read == 0 {
		t.read = DefaultReadTimeout
	}
	if t.minRate == 0 {
		t.minRate = DefaultMinBodyRate
	}
	if t.idle == 0 {
		t.idle = DefaultIdleTimeout
	}
	t.read, t.idle = max(t.read, 0), max(t.idle, 0)
	t.minRate = max(t.minRate, 0)
	return t
}

// httpServer is the http.Server of one listener: headers within 30 s,
// bodies under bodyDeadline, idle keep-alives closed after t.idle. No
// ReadTimeout: one deadline for the whole request would cut a large blob
// upload on a good link as surely as a trickle.
func (t connTimeouts) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           t.bodyDeadline(h),
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       t.idle,
	}
}

// bodyDeadline puts the connection's read deadline under a request's
// body, whether or not its handler reads it (an unread body is drained
// by net/http after the handler, under the same deadline): the body must
// keep arriving, with no pause over t.read, and at t.minRate bytes a
// second on average past the first t.read, as Apache's mod_reqtimeout
// does ("body=30,MinRate=1000"). A body past either is cut: the read
// fails with an error naming the flag, and the connection is closed.
// Once the body has been read the deadline is lifted, so that a long
// answer streamed after it is not cut.
func (t connTimeouts) bodyDeadline(h http.Handler) http.Handler {
	if t.read <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		now := time.Now()
		b := &deadlineBody{ReadCloser: r.Body, rc: rc, t: t, start: now}
		if b.set(now.Add(t.read)) != nil {
			h.ServeHTTP(w, r) // a writer without deadlines (a test recorder)
			return
		}
		r.Body = b
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), deadlineBodyKey{}, b)))
	})
}

// deadlineBody moves the connection's read deadline on as a body
// arrives.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	t        connTimeouts
	start    time.Time
	n        int64     // bytes read
	deadline time.Time // as set; zero once lifted
	done     bool
	cut      bool // the body came too slowly: the server cut it
}

type deadlineBodyKey struct{}

// bodyCut reports whether the request of ctx had its body cut for
// arriving too slowly: its context ends as a gone client's does, but the
// server cut it, and the client is answered the 400.
func bodyCut(ctx context.Context) bool {
	b, ok := ctx.Value(deadlineBodyKey{}).(*deadlineBody)
	return ok && b.cut
}

func (b *deadlineBody) set(d time.Time) error {
	b.deadline = d
	return b.rc.SetReadDeadline(d)
}

// ErrSlowBody is wrapped by the read error of a body cut for arriving
// too slowly.
var ErrSlowBody = errors.New("request body too slow")

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.done {
		return n, err
	}
	b.n += int64(n)
	now := time.Now()
	switch {
	case err == io.EOF:
		b.done = true
		_ = b.set(time.Time{}) // the body is in: answers are not bounded by it
	case err != nil:
		b.done = true
		if errors.Is(err, os.ErrDeadlineExceeded) {
			b.cut = true
			err = fmt.Errorf("%w: %d bytes in %s; the server wants no pause over %s (--read-timeout) and %d bytes/s on average after it (--min-body-rate): %w",
				ErrSlowBody, b.n, now.Sub(b.start).Round(time.Millisecond), b.t.read, b.t.minRate, err)
		}
	case n > 0:
		d := now.Add(b.t.read)
		if b.t.minRate > 0 {
			secs := min(float64(b.n)/float64(b.t.minRate), 1e8) // no Duration overflow
			byRate := b.start.Add(b.t.read + time.Duration(secs*float64(time.Second)))
			if byRate.Before(d) {
				d = byRate
			}
		}
		// A deadline is only moved on: past the rate's, a pause is
		// not forgiven by a later burst.
		if d.After(b.deadline) {
			_ = b.set(d)
		}
	}
	return n, err
}
