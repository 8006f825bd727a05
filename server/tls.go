package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
)

// Certificate is a TLS certificate and key read from two PEM files and
// read again by Reload (on SIGHUP), so a renewed certificate is served
// without a restart. Connections already open keep the certificate they
// were made with; new ones get the new one.
type Certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads the certificate chain and key.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again. When they do not hold a valid pair, it
// returns the error and the certificate served so far stays.
func (c *Certificate) Reload() error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("load TLS certificate %s and key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&pair)
	if leaf := pair.Leaf; leaf != nil {
		slog.Info("TLS certificate loaded", "file", c.certFile, "subject", leaf.Subject.String(),
			"dns_names", leaf.DNSNames, "not_after", leaf.NotAfter)
	}
	return nil
}

// TLSConfig is the server side of TLS with this certificate: TLS 1.2 or
// later, HTTP/2 offered first (Serve adds it through net/http).
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}

// serveOn serves hs on ln, over TLS when hs.TLSConfig is set (net/http
// then negotiates HTTP/2 as well).
func serveOn(hs *http.Server, ln net.Listener) error {
	if hs.TLSConfig != nil {
		return hs.ServeTLS(ln, "", "")
	}
	return hs.Serve(ln)
}
