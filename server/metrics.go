package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
)

// metricsServer is the listener of /metrics when it has its own
// (Config.MetricsListener).
type metricsServer struct {
	mu  sync.Mutex
	srv *http.Server
}

// ServeMetrics serves GET /metrics alone on ln until Shutdown, with no
// API key (a scraper on a private address, --metrics-host), over TLS when
// Config.TLS is set. The Host guard of the API applies to it too.
func (s *Server) ServeMetrics(ln net.Listener) error {
	mux := http.NewServeMux()
	if s.telemetry != nil {
		mux.Handle("GET /metrics", s.telemetry.Handler())
	}
	hs := s.timeouts.httpServer(hostGuardHandler(s.hosts, mux))
	hs.ConnContext, hs.TLSConfig = withListener(ln.Addr()), s.tls.Clone()
	s.metrics.mu.Lock()
	s.metrics.srv = hs
	s.metrics.mu.Unlock()
	err := serveOn(hs, ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// shutdown stops the metrics listener, if any.
func (m *metricsServer) shutdown(ctx context.Context) {
	m.mu.Lock()
	hs := m.srv
	m.mu.Unlock()
	if hs != nil {
		_ = hs.Shutdown(ctx)
	}
}
