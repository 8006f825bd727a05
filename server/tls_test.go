package server

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
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// selfSigned makes a certificate for 127.0.0.1 and localhost with the
// serial number serial and returns its PEM certificate and key.
func selfSigned(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "tadpole test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
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
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// httpsClient trusts the given PEM certificates and speaks HTTP/2.
func httpsClient(certs ...[]byte) *http.Client {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AppendCertsFromPEM(c)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
}

// servedSerial is the serial number of the certificate a response came
// with.
func servedSerial(resp *http.Response) int64 {
	return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
}

// HTTPS natively: TLS 1.2 or later, HTTP/2, an Ollama API client, and a
// certificate reload that new connections see while open ones go on.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certA, keyA := selfSigned(t, 1)
	certB, keyB := selfSigned(t, 2)
	os.WriteFile(certFile, certA, 0o600)
	os.WriteFile(keyFile, keyA, 0o600)
	cert, err := LoadCertificate(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	models := testModels(t, "stories")
	srv := New(Config{ModelsDir: models, Sched: sched.Config{Threads: 1, NumCtx: 256, FlashAttn: engine.FlashAttentionOn}, TLS: cert.TLSConfig()})
	ts := serveForTest(t, srv)
	base := strings.Replace(ts.URL, "http://", "https://", 1)

	// An Ollama API client over HTTPS, on HTTP/2.
	old := httpsClient(certA, certB)
	oc, err := client.New(base, old)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := oc.List(ctx)
	if err != nil || len(list.Models) != 1 {
		t.Fatalf("list over https: %+v %v", list, err)
	}
	var got string
	err = oc.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Options: greedyOpts(5)}, func(r ollamaapi.GenerateResponse) error {
		got += r.Response
		return nil
	})
	if err != nil || got == "" {
		t.Fatalf("generate over https: %q %v", got, err)
	}
	resp, err := old.Get(base + "/api/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.TLS.NegotiatedProtocol != "h2" || resp.TLS.Version < tls.VersionTLS12 || servedSerial(resp) != 1 {
		t.Fatalf("proto %s, ALPN %q, TLS %x, serial %d", resp.Proto, resp.TLS.NegotiatedProtocol, resp.TLS.Version, servedSerial(resp))
	}
	// TLS 1.1 is refused; plain HTTP gets no answer of the API.
	addr := strings.TrimPrefix(ts.URL, "http://")
	if c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}); err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
	if resp, err := http.Get(ts.URL + "/api/tags"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("plain HTTP: %d", resp.StatusCode)
		}
	}

	// A bad pair keeps the old certificate.
	os.WriteFile(certFile, []byte("not a certificate"), 0o600)
	if err := cert.Reload(); err == nil || !strings.Contains(err.Error(), certFile) {
		t.Fatalf("reload of a bad certificate: %v", err)
	}
	if resp, err := httpsClient(certA).Get(base + "/api/version"); err != nil || servedSerial(resp) != 1 {
		t.Fatalf("after a failed reload: %v", err)
	} else {
		resp.Body.Close()
	}
	// A good one is served on new connections; the open one goes on.
	os.WriteFile(certFile, certB, 0o600)
	os.WriteFile(keyFile, keyB, 0o600)
	if err := cert.Reload(); err != nil {
		t.Fatal(err)
	}
	resp, err = httpsClient(certB).Get(base + "/api/version")
	if err != nil {
		t.Fatalf("a new connection after the reload: %v", err)
	}
	resp.Body.Close()
	if servedSerial(resp) != 2 {
		t.Fatalf("a new connection got certificate %d", servedSerial(resp))
	}
	resp, err = old.Get(base + "/api/version")
	if err != nil {
		t.Fatalf("the open connection after the reload: %v", err)
	}
	resp.Body.Close()
	if servedSerial(resp) != 1 || resp.ProtoMajor != 2 {
		t.Fatalf("the open connection was replaced: certificate %d, %s", servedSerial(resp), resp.Proto)
	}
	if _, err := oc.List(ctx); err != nil {
		t.Fatalf("the client after the reload: %v", err)
	}
}
