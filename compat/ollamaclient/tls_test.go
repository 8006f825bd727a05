package ollamaclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

// protocols records the protocol of each response a transport gets.
type protocols struct {
	http.RoundTripper
	mu   sync.Mutex
	seen map[string]int
}

func (p *protocols) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.RoundTripper.RoundTrip(r)
	if err == nil {
		p.mu.Lock()
		p.seen[resp.Proto]++
		p.mu.Unlock()
	}
	return resp, err
}

// The official client over HTTPS (--tls-cert, --tls-key), on HTTP/2,
// trusting the server's self-signed certificate.
func TestOfficialClientTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tadpole compat test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	seen := &protocols{
		RoundTripper: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true},
		seen:         map[string]int{},
	}
	s := startTadpoleWith(t, "https", &http.Client{Transport: seen}, "--tls-cert", certFile, "--tls-key", keyFile)
	ctx := context.Background()

	list, err := s.client.List(ctx)
	if err != nil || len(list.Models) == 0 {
		t.Fatalf("list over https: %v %+v", err, list)
	}
	var text strings.Builder
	err = s.client.Generate(ctx, &api.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Options: greedy(30)},
		func(r api.GenerateResponse) error { text.WriteString(r.Response); return nil })
	if err != nil || !strings.HasPrefix(text.String(), storiesContinuation) {
		t.Fatalf("streamed over https: %v %q", err, text.String())
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.seen) != 1 || seen.seen["HTTP/2.0"] == 0 {
		t.Fatalf("protocols %v, want HTTP/2.0 only", seen.seen)
	}
}
