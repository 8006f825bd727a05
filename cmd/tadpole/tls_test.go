package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// writeCert writes a self-signed certificate for 127.0.0.1 with the
// serial number serial, and its key, to certFile and keyFile.
func writeCert(t *testing.T, serial int64, certFile, keyFile string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "tadpole cli test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	os.WriteFile(certFile, certPEM, 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certPEM
}

// `tadpole serve --tls-cert --tls-key` with scoped keys and
// --metrics-host: the CLI reaches it at an https:// TADPOLE_HOST, an
// inference key cannot manage models, /metrics lives on its own
// listener, and SIGHUP serves a new certificate to new connections
// while an open one goes on.
func TestServeTLSAndScopes(t *testing.T) {
	models := t.TempDir()
	abs, _ := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err := os.Symlink(abs, filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certA := writeCert(t, 1, certFile, keyFile)
	caFile := filepath.Join(dir, "ca.pem")
	keys := map[string][]string{}
	for _, scope := range []string{"inference", "admin"} {
		r := runBin(t, os.Environ(), "", "keys", "new", "--scope", scope)
		keys[scope] = strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(keys[scope]) != 2 {
			t.Fatalf("keys new --scope %s: %s", scope, r)
		}
	}
	if !strings.HasSuffix(keys["admin"][1], " admin") || strings.Contains(keys["inference"][1], " ") {
		t.Fatalf("keys: %q", keys)
	}
	if r := runBin(t, os.Environ(), "", "keys", "new", "--scope", "root"); r.code == 0 {
		t.Fatalf("keys new --scope root: %s", r)
	}
	keysFile := filepath.Join(dir, "keys")
	os.WriteFile(keysFile, []byte(keys["inference"][1]+"\n"+keys["admin"][1]+"\n"), 0o600)
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsHost := ml.Addr().String()
	ml.Close()
	d := startDaemon(t, "--models", models, "--data-dir", filepath.Join(dir, "data"), "--threads", "1", "--context-length", "256",
		"--tls-cert", certFile, "--tls-key", keyFile, "--api-keys-file", keysFile, "--metrics-host", metricsHost)
	host := "https://" + strings.TrimPrefix(d.url, "http://")

	// The CLI at an https:// host, trusting the certificate through the
	// system's SSL_CERT_FILE.
	os.WriteFile(caFile, certA, 0o600)
	cli := func(key string, args ...string) result {
		return runBin(t, binEnv("TADPOLE_HOST="+host, "SSL_CERT_FILE="+caFile, "TADPOLE_API_KEY="+key), "", args...)
	}
	if r := cli(keys["inference"][0], "list"); r.code != 0 || !strings.Contains(r.stdout, "stories") {
		t.Fatalf("list over https: %s\n%s", r, d.log())
	}
	if r := cli(keys["inference"][0], "cp", "stories", "copied"); r.code == 0 || !strings.Contains(r.stderr, "admin key") {
		t.Fatalf("cp with an inference key: %s", r)
	}
	if r := cli(keys["admin"][0], "cp", "stories", "copied"); r.code != 0 {
		t.Fatalf("cp with an admin key: %s", r)
	}

	// /metrics: on its own listener (over TLS too), without a key; gone
	// from the API.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certA)
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	get := func(c *http.Client, url string) *http.Response {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := get(old, "https://"+metricsHost+"/metrics"); resp.StatusCode != 200 {
		t.Fatalf("metrics listener: %d", resp.StatusCode)
	}
	if resp := get(old, host+"/metrics"); resp.StatusCode != 401 && resp.StatusCode != 404 {
		t.Fatalf("metrics on the API: %d", resp.StatusCode)
	}
	resp := get(old, host+"/api/version")
	if resp.ProtoMajor != 2 || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 1 {
		t.Fatalf("first connection: %s, serial %v", resp.Proto, resp.TLS.PeerCertificates[0].SerialNumber)
	}

	// A broken pair and SIGHUP: logged, the old certificate stays.
	os.WriteFile(certFile, []byte("garbage"), 0o600)
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, "the reload error in the log", func() bool { return strings.Contains(d.log(), "TLS certificate not reloaded") })
	if r := cli(keys["inference"][0], "list"); r.code != 0 {
		t.Fatalf("list after a failed reload: %s", r)
	}
	// A new pair and SIGHUP: new connections get it.
	certB := writeCert(t, 2, certFile, keyFile)
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poolB := x509.NewCertPool()
	poolB.AppendCertsFromPEM(certB)
	testkit.Eventually(t, time.Minute, "the new certificate to be served", func() bool {
		c, err := tls.Dial("tcp", strings.TrimPrefix(host, "https://"), &tls.Config{RootCAs: poolB})
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	// The connection opened before the reload goes on, with its certificate.
	resp = get(old, host+"/api/version")
	if resp.StatusCode != 200 || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 1 {
		t.Fatalf("the open connection after the reload: %d, serial %v", resp.StatusCode, resp.TLS.PeerCertificates[0].SerialNumber)
	}
	os.WriteFile(caFile, certB, 0o600)
	if r := cli(keys["inference"][0], "list"); r.code != 0 || !strings.Contains(r.stdout, "copied") {
		t.Fatalf("list with the new certificate: %s", r)
	}
	select {
	case <-d.exited:
		t.Fatalf("the server exited: %s", d.log())
	default:
	}
}
