package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// smallBuffers makes a socket's kernel buffers small, so that a client
// that reads nothing blocks the server's writes after a few kilobytes
// instead of megabytes.
func smallBuffers(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096); serr == nil {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// A client that asks for an endless stream and reads nothing keeps its
// slot only until a write misses the write timeout: then its generation
// is cancelled and the slot freed, while its connection is still open.
// Another client streams its whole answer meanwhile.
func TestStalledReaderLosesItsSlot(t *testing.T) {
	dir := testModels(t, "stories")
	srv := New(Config{ModelsDir: dir, WriteTimeout: 2 * time.Second, Sched: testSched(2, 128)})
	ln, err := (&net.ListenConfig{Control: smallBuffers}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client := serveListener(t, srv, ln).Client
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Load the model first.
	if err := client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once", Options: greedyOpts(1)}, func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	busy := func() int {
		n := 0
		for _, in := range srv.sched.Status() {
			b, _ := in.Runner.Slots()
			n += b
		}
		return n
	}

	// The stalled client: an endless streamed generation, never read.
	conn, err := (&net.Dialer{Control: smallBuffers}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"stories","prompt":"Once upon a time","options":{"num_predict":-1,"temperature":0}}`
	fmt.Fprintf(conn, "POST /api/generate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	testkit.Eventually(t, 30*time.Second, "the stalled request to get a slot", func() bool { return busy() != 0 })

	// Another client streams a whole answer while the stalled one holds
	// its slot.
	var text strings.Builder
	var final ollamaapi.GenerateResponse
	err = client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Options: greedyOpts(64)}, func(r ollamaapi.GenerateResponse) error {
		text.WriteString(r.Response)
		if r.Done {
			final = r
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if final.EvalCount != 64 || text.Len() == 0 {
		t.Fatalf("the other stream: %d tokens, %q", final.EvalCount, text.String())
	}

	// The stalled request is cancelled and its slot freed, its
	// connection still open.
	// (30 s: the default timeout, a minute, would miss it.)
	testkit.Eventually(t, 30*time.Second, "the stalled request to lose its slot", func() bool { return busy() == 0 })
	conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := conn.Read(make([]byte, 1)); err != nil && !os.IsTimeout(err) {
		// Reading now may return buffered bytes or the server's close;
		// either way the slot above was freed first.
		t.Logf("stalled connection after the cancel: %v", err)
	}
}
