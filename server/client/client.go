package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// DefaultHost is where a server listens unless told otherwise.
const DefaultHost = "127.0.0.1:11434"

// HostEnv names the environment variable that selects the server.
const HostEnv = "TADPOLE_HOST"

// Client talks to one Tadpole (or Ollama) server. Its methods are safe
// for concurrent use.
type Client struct {
	base *url.URL
	http *http.Client
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
}

// APIKeyEnv names the API key the command-line client sends.
const APIKeyEnv = "TADPOLE_API_KEY"

// New returns a client of the server at host: "host:port", ":port",
// "host", or a URL ("http://host:port", "https://host/prefix"). A
// missing port is 11434 (80 or 443 for a URL with an explicit scheme, as
// Ollama's clients read OLLAMA_HOST); a missing host is 127.0.0.1.
func New(host string, hc *http.Client) (*Client, error) {
	u, err := ParseHost(host)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, http: hc}, nil
}

// FromEnv returns a client of the server named by TADPOLE_HOST, or of
// DefaultHost when it is unset.
func FromEnv() (*Client, error) {
	host := strings.TrimSpace(os.Getenv(HostEnv))
	if host == "" {
		host = DefaultHost
	}
	c, err := New(host, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", HostEnv, err)
	}
	c.APIKey = strings.TrimSpace(os.Getenv(APIKeyEnv))
	return c, nil
}

// ParseHost turns a TADPOLE_HOST value into the server's base URL.
func ParseHost(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	defaultPort := "11434"
	scheme, hostport, ok := strings.Cut(s, "://")
	switch {
	case !ok:
		scheme, hostport = "http", s
	case scheme == "http":
		defaultPort = "80"
	case scheme == "https":
		defaultPort = "443"
	default:
		return nil, fmt.Errorf("invalid host %q: scheme must be http or https", s)
	}
	hostport, path, _ := strings.Cut(hostport, "/")
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.Trim(hostport, "[]"), defaultPort
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return nil, fmt.Errorf("invalid host %q: bad port %q", s, port)
	}
	if strings.ContainsAny(host, " /?#") {
		return nil, fmt.Errorf("invalid host %q", s)
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}
	if path = strings.Trim(path, "/"); path != "" {
		u.Path = "/" + path
	}
	return u, nil
}

// Host is the server's base URL, as messages show it.
func (c *Client) Host() string { return c.base.String() }

// StatusError is an error answer of the server: its HTTP status and the
// message of its {"error": "..."} body.
type StatusError struct {
	StatusCode int
	Message    string
}

func (e *StatusError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("server answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusNotFound
}

// ConnectError means no server answered at the client's address.
type ConnectError struct {
	Host string
	Err  error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("could not connect to a running Tadpole server at %s; start one with `tadpole serve`", e.Host)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// request sends one request with a JSON body (nil for none) and returns
// the response when its status is 2xx; any other status becomes a
// *StatusError, a failed dial a *ConnectError.
func (c *Client) request(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.JoinPath(path).String(), r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/x-ndjson, application/json")
	return c.send(req)
}

// send does req and maps its failures (see request).
func (c *Client) send(req *http.Request) (*http.Response, error) {
	req.Header.Set("User-Agent", "tadpole-cli")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, &ConnectError{Host: c.Host(), Err: err}
		}
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, statusError(resp)
	}
	return resp, nil
}

// statusError reads an error answer's body.
func statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	return &StatusError{StatusCode: resp.StatusCode, Message: msg}
}

// do sends a request and decodes its JSON answer into out (nil: ignore
// the body).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}
