package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server"
)

// boundaryFlags are the serve flags of TLS and the metrics listener.
type boundaryFlags struct {
	tlsCert, tlsKey, metricsHost *string
}

func addBoundaryFlags(fs *pflag.FlagSet) *boundaryFlags {
	return &boundaryFlags{
		tlsCert:     fs.String("tls-cert", env("TADPOLE_TLS_CERT", ""), "PEM certificate (with its chain) to serve HTTPS and HTTP/2 with; read again on SIGHUP (TADPOLE_TLS_CERT)"),
		tlsKey:      fs.String("tls-key", env("TADPOLE_TLS_KEY", ""), "PEM private key of --tls-cert (TADPOLE_TLS_KEY)"),
		metricsHost: fs.String("metrics-host", env("TADPOLE_METRICS_HOST", ""), "serve /metrics on this address alone, without API keys, and not on the API's (TADPOLE_METRICS_HOST)"),
	}
}

// listenAddr is the address to listen on for a --host value: a scheme
// ("http://", "https://") is dropped and a missing port is 11434.
func listenAddr(host string) string {
	if _, rest, ok := strings.Cut(host, "://"); ok {
		host = rest
	}
	host = strings.TrimSuffix(host, "/")
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "11434")
	}
	return host
}

// apply loads the certificate (nil without --tls-cert) into cfg, names
// the host to serve on a loopback listener, and moves /metrics off the
// API when --metrics-host is set.
func (f *boundaryFlags) apply(cfg *server.Config, addr string) (*server.Certificate, error) {
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" {
		if _, err := netip.ParseAddr(h); err != nil {
			cfg.Hosts = append(cfg.Hosts, h) // a name, e.g. "myhost.local"
		}
	}
	cfg.MetricsListener = *f.metricsHost != ""
	if (*f.tlsCert == "") != (*f.tlsKey == "") {
		return nil, fmt.Errorf("--tls-cert and --tls-key go together: give both or neither")
	}
	if *f.tlsCert == "" {
		return nil, nil
	}
	cert, err := server.LoadCertificate(*f.tlsCert, *f.tlsKey)
	if err != nil {
		return nil, err
	}
	cfg.TLS = cert.TLSConfig()
	return cert, nil
}

// serveMetrics listens on --metrics-host and serves /metrics there.
func (f *boundaryFlags) serveMetrics(srv *server.Server, errc chan<- error) error {
	if *f.metricsHost == "" {
		return nil
	}
	addr := listenAddr(*f.metricsHost)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-host: listen on %s: %w", addr, err)
	}
	slog.Info("metrics are served on their own listener", "addr", ln.Addr().String())
	go func() { errc <- srv.ServeMetrics(ln) }()
	return nil
}

// reloadOnHUP reads the certificate again at each SIGHUP until ctx ends;
// a pair that does not load is logged and the old one stays served.
// Without TLS a SIGHUP is logged and ignored: `systemctl reload` (the
// unit's ExecReload) must never end the server.
func reloadOnHUP(ctx context.Context, cert *server.Certificate) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if cert == nil {
					slog.Info("SIGHUP: nothing to reload (no TLS certificate)")
					continue
				}
				if err := cert.Reload(); err != nil {
					slog.Error("TLS certificate not reloaded; the previous one is still served", "error", err)
				} else {
					slog.Info("TLS certificate reloaded")
				}
			}
		}
	}()
}
