package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// The probes of an orchestrator (Kubernetes' kubelet, a load balancer):
//
//   - GET /healthz (liveness) answers 200 while the process serves HTTP,
//     draining included: a liveness failure restarts the process, which
//     a drain must not cause.
//   - GET /readyz (readiness) answers 200 once the --preload models are
//     loaded and 503 while they load and from the moment a drain starts,
//     so that the pod leaves its Service and InferencePool at once.
//
// Both need no API key (auth.public), like GET / and /api/version.
const (
	livePath  = "/healthz"
	readyPath = "/readyz"
)

// alwaysServed reports whether a request is answered even while the
// server drains, and is not counted as in flight: the probes, the
// version and /metrics (a router keeps reading a draining server's
// gauges until it leaves the pool).
func alwaysServed(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case "/", "/api/version", livePath, readyPath, "/metrics":
		return true
	}
	return false
}

// drainState counts the requests in flight and, once a drain started,
// refuses new ones.
type drainState struct {
	mu       sync.Mutex
	draining bool
	active   int
	idle     chan struct{} // closed when active drops to 0 during a drain
}

// enter counts a request in, unless the server drains.
func (d *drainState) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return false
	}
	d.active++
	return true
}

func (d *drainState) leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active--
	if d.active == 0 && d.idle != nil {
		close(d.idle)
		d.idle = nil
	}
}

// start begins the drain; the channel is closed when no request is in
// flight (at once if none is), with the number in flight now.
func (d *drainState) start() (<-chan struct{}, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.draining = true
	ch := make(chan struct{})
	if d.active == 0 {
		close(ch)
	} else if d.idle != nil {
		ch = d.idle // a second Drain waits for the same moment
	} else {
		d.idle = ch
	}
	return ch, d.active
}

func (d *drainState) isDraining() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.draining
}

func (d *drainState) inFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.active
}

// drainGuard refuses every request but the probes while the server
// drains: a 503 in the request's dialect with Retry-After and
// "Connection: close", which a gateway retries on another replica.
func (s *Server) drainGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if alwaysServed(c.Request()) {
			return next(c)
		}
		if !s.drain.enter() {
			c.Response().Header().Set(echo.HeaderConnection, "close")
			return dialect.Unavailable("the server is shutting down; send the request to another replica")
		}
		defer s.drain.leave()
		return next(c)
	}
}

// Drain starts the server's stop: from now on /readyz answers 503,
// every new request but the probes and /metrics is refused with a 503,
// and the job workers claim no new job; the requests in flight (streams
// included) and the running jobs go on. It returns when none is left, or
// when ctx ends: the jobs still running then are handed back to the
// queue (for this or another replica, the attempt not counted), and the
// requests still running are reported in the error (Shutdown cuts them).
func (s *Server) Drain(ctx context.Context) error {
	idle, n := s.drain.start()
	slog.Info("draining: new requests are refused, readiness fails", "in_flight", n)
	jobsDone := make(chan struct{})
	go func() {
		defer close(jobsDone)
		if s.jobs != nil {
			s.jobs.Drain(ctx)
		}
	}()
	var err error
	select {
	case <-idle:
	case <-ctx.Done():
		err = fmt.Errorf("requests still running: %d: %w", s.drain.inFlight(), ctx.Err())
	}
	<-jobsDone // returns by ctx's end at the latest
	return err
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.drain.isDraining() }

// preloadState is the progress of Config.Preload.
type preloadState struct {
	names []string
	done  atomic.Bool
}

// Preload loads the Config.Preload models (keep_alive forever), in order;
// /readyz answers 503 until they are all loaded. It returns the first
// model that cannot be loaded, which a server started for them should
// treat as fatal.
func (s *Server) Preload(ctx context.Context) error {
	forever := time.Duration(-1)
	for _, name := range s.preload.names {
		t0 := time.Now()
		in, err := s.infer.Acquire(ctx, name, ollamaapi.Options{}, &forever)
		if err != nil {
			return fmt.Errorf("preload %s: %w", name, err)
		}
		in.Release()
		slog.Info("model preloaded", "model", in.Name, "took", time.Since(t0).Round(time.Millisecond))
	}
	s.preload.done.Store(true)
	return nil
}

// readiness is the body of GET /readyz.
type readiness struct {
	Status string   `json:"status"` // "ready", "loading" or "draining"
	Models []string `json:"models"` // the models loaded now (only to a key holder)
	Loaded int      `json:"loaded"` // how many models are loaded
}

// readinessCount is the body of GET /readyz without the models' names.
type readinessCount struct {
	Status string `json:"status"`
	Loaded int    `json:"loaded"`
}

// readyz answers the readiness probe, which needs no key. With API keys
// configured, the loaded models' names are listed only to a request with
// a valid key; others get the count.
func (s *Server) readyz(c echo.Context) error {
	r := readiness{Status: "ready", Models: []string{}}
	seen := map[string]bool{}
	for _, in := range s.sched.Status() {
		if !seen[in.Name] {
			seen[in.Name] = true
			r.Models = append(r.Models, in.Name)
		}
	}
	r.Loaded = len(r.Models)
	code := http.StatusOK
	switch {
	case s.drain.isDraining():
		r.Status, code = "draining", http.StatusServiceUnavailable
	case len(s.preload.names) > 0 && !s.preload.done.Load():
		r.Status, code = "loading", http.StatusServiceUnavailable
	}
	if !s.auth.Allows(c.Request()) {
		return c.JSON(code, readinessCount{Status: r.Status, Loaded: r.Loaded})
	}
	return c.JSON(code, r)
}

func healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// registerHealth adds the probes' routes.
func (s *Server) registerHealth(e *echo.Echo) {
	e.GET(livePath, healthz)
	e.HEAD(livePath, healthz)
	e.GET(readyPath, s.readyz)
	e.HEAD(readyPath, s.readyz)
}
