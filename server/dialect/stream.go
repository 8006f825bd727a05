package dialect

import (
	"bytes"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// WriteTimeoutKey is the echo context key under which the server puts
// its write timeout (a time.Duration) for StreamWriter.
const WriteTimeoutKey = "tadpole.write_timeout"

// DefaultWriteTimeout bounds one streamed write when the server sets none.
const DefaultWriteTimeout = time.Minute

// StreamWriter writes a streamed answer — NDJSON lines or Server-Sent
// Events — for every dialect. What is ready goes into Buffer (or
// Event); Flush sends it in one write and one flush, so the tokens that
// queued while the previous write was on its way leave together instead
// of one flush each. Each write may take at most the write timeout: a
// client that reads nothing fills the socket buffers, its write then
// fails at the deadline, the handler returns and the request's context
// ends, which ends the generation and frees its slot.
type StreamWriter struct {
	w       *echo.Response
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer
}

// NewStreamWriter starts a 200 answer of the given content type (with
// the headers streaming needs behind proxies) and sends the headers.
func NewStreamWriter(c echo.Context, contentType string) *StreamWriter {
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, contentType)
	if contentType == "text/event-stream" {
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
	}
	h.Set("X-Accel-Buffering", "no")
	timeout, _ := c.Get(WriteTimeoutKey).(time.Duration)
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	// The controller of the writer under echo's: its Flush reports a
	// failed write (echo's swallows it).
	s := &StreamWriter{w: w, rc: http.NewResponseController(w.Writer), timeout: timeout}
	s.deadline()
	w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()
	return s
}

func (s *StreamWriter) deadline() {
	// Not every ResponseWriter supports deadlines (tests' recorders);
	// those simply write without one.
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
}

// Buffer is where the next write is assembled.
func (s *StreamWriter) Buffer() *bytes.Buffer { return &s.buf }

// Event appends one Server-Sent Event: "event: name" when name is set,
// then "data: data".
func (s *StreamWriter) Event(name string, data []byte) {
	if name != "" {
		s.buf.WriteString("event: ")
		s.buf.WriteString(name)
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString("data: ")
	s.buf.Write(data)
	s.buf.WriteString("\n\n")
}

// Flush writes what is buffered, if anything, and flushes it to the
// client. An error means the client is gone or stopped reading.
func (s *StreamWriter) Flush() error {
	if s.buf.Len() == 0 {
		return nil
	}
	s.deadline()
	_, err := s.w.Write(s.buf.Bytes())
	s.buf.Reset()
	if err != nil {
		return err
	}
	return s.rc.Flush()
}
