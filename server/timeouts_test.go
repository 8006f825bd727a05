package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/server/sched"
)

// timeoutServer is a real server with short connection timeouts: a body
// may pause 1 s and must average 100 bytes/s past it; a keep-alive
// connection is closed after 300 ms idle.
func timeoutServer(t *testing.T) string {
	t.Helper()
	srv := New(Config{
		ModelsDir: t.TempDir(), Sched: sched.Config{Parallel: 1, NumCtx: 256, KeepAlive: time.Minute, Threads: 1},
		ReadTimeout: time.Second, MinBodyRate: 100, IdleTimeout: 300 * time.Millisecond,
	})
	return strings.TrimPrefix(serveForTest(t, srv).URL, "http://")
}

// readAll reads what the server sends until it closes the connection,
// failing the test if that takes a minute (a connection left open).
func readUntilClosed(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("the server did not close the connection: %v (read %q)", err, b)
	}
	return string(b)
}

// A body that dribbles (one byte every 200 ms: never a pause over the
// 1 s read timeout, but 5 bytes/s, under the 100 bytes/s minimum) and one
// that stops are cut: the answer is a 400 naming the limits, and the
// connection is closed. So is a dribbled body the handler never reads
// (a 404 route), which net/http would otherwise drain without end.
func TestSlowBodyIsCut(t *testing.T) {
	addr := timeoutServer(t)
	for _, tc := range []struct {
		name, path string
		every      time.Duration // 0: 10 bytes, then nothing
		want       string
	}{
		{"dribble", "/api/chat", 200 * time.Millisecond, "400 Bad Request"},
		{"pause", "/api/chat", 0, "400 Bad Request"},
		{"dribble to an unread body", "/no/such/route", 200 * time.Millisecond, "404 Not Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			head := "POST " + tc.path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
			if _, err := io.WriteString(c, head+`{"model":"x",`); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			if tc.every > 0 {
				go func() {
					for {
						select {
						case <-stop:
							return
						case <-time.After(tc.every):
						}
						if _, err := c.Write([]byte(" ")); err != nil {
							return
						}
					}
				}()
			}
			got := readUntilClosed(t, c)
			if !strings.HasPrefix(got, "HTTP/1.1 "+tc.want) {
				t.Fatalf("answer %q, want %s", got, tc.want)
			}
			if tc.path == "/api/chat" && (!strings.Contains(got, "--read-timeout") || !strings.Contains(got, "--min-body-rate")) {
				t.Errorf("the answer does not name the limits: %q", got)
			}
		})
	}
}

// A keep-alive connection left idle is closed by the server.
func TestIdleConnectionIsClosed(t *testing.T) {
	addr := timeoutServer(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /api/version HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("first request: %s, close %v", resp.Status, resp.Close)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("idle keep-alive connection: read %d, %v; want it closed", n, err)
	}
}

// Once a body is in, its deadline is lifted: a handler that answers
// long after the read timeout (a generation) is neither cancelled nor
// cut, and a large body sent at full speed is not cut by the rate.
func TestBodyDeadlineLiftedOnceRead(t *testing.T) {
	tm := connTimeouts{read: 200 * time.Millisecond, minRate: 100, idle: time.Minute}
	cancelled := make(chan bool, 1)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = tm.httpServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-r.Context().Done():
			cancelled <- true
		case <-time.After(time.Second): // five read timeouts
			cancelled <- false
		}
		io.WriteString(w, strings.Repeat("x", int(n%7)))
	}))
	ts.Start()
	defer ts.Close()
	resp, err := http.Post(ts.URL, "application/octet-stream", strings.NewReader(strings.Repeat("y", 8<<20)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(b) != (8<<20)%7 {
		t.Fatalf("%s %q", resp.Status, b)
	}
	if <-cancelled {
		t.Fatal("the request was cancelled after its body was read")
	}
}
