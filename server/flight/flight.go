// Package flight keeps the list of requests in flight where a death of
// the process cannot erase it: a small file in the data directory,
// written before each request's expensive phases and cleared when it
// ends.
//
// A Go fatal error (out of memory, concurrent map writes), a ggml
// abort() or a SIGKILL from the kernel's OOM killer ends the process
// without running any Go code, so nothing in-process can say which
// request did it. The file can: each request owns one fixed-size slot
// (a JSON object padded with spaces), rewritten in place with one
// copy into the file, mapped shared (pwrite where there is no mmap),
// when the request begins, enters a phase (queued, rendering, prefill,
// decode) or ends. Writes go to the page cache, which survives the
// process (not a power cut), so no fsync is needed; recording a request
// (six writes) costs about 2 µs, 0 allocations (BenchmarkRequest; 15 µs
// with pwrite). The first slot is the header:
// the writer's pid and start time, and "clean" once it has shut down.
//
// At start-up Open reads the file left by the previous process: if that
// one did not shut down cleanly, the requests in its slots are logged as
// an error ("the previous process died with these requests in flight")
// and kept in crash-<time>.json beside it.
package flight

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Phase is where a request is in its life.
type Phase string

const (
	// Received: the request's body is being read and decoded.
	Received Phase = "received"
	// Queued: waiting for its model (loading) or a place in the queue.
	Queued Phase = "queued"
	// Rendering: its prompt is rendered and tokenized, its images
	// decoded, its grammar built.
	Rendering Phase = "rendering"
	// Prefill: queued on the model's runner, its prompt being read.
	Prefill Phase = "prefill"
	// Decode: generating (the first token came out).
	Decode Phase = "decode"
)

// FileName is the in-flight file's name in the data directory.
const FileName = "inflight"

const (
	// slotSize is the bytes of one slot: a JSON object padded with spaces
	// and a newline. Strings are cut to fit (fieldMax).
	slotSize = 512
	// MaxSlots is how many requests the file records at once; more are
	// counted in the header (overflow) but not named.
	MaxSlots = 4096
	fieldMax = 80 // escaped bytes of one string field at most: four fit a slot
)

// Entry is one request in flight, as the file records it.
type Entry struct {
	ID    string    `json:"id"`
	Route string    `json:"route"` // "POST /api/generate", "job ollama"
	Model string    `json:"model,omitempty"`
	Key   string    `json:"key,omitempty"` // the API key's id
	Phase Phase     `json:"phase"`
	Start time.Time `json:"start"`
	Body  int64     `json:"body"` // the body's size in bytes (-1: unknown)
}

// Log is one process's in-flight list: in memory, and in the file when
// opened on a directory.
type Log struct {
	f   *os.File // nil: memory only
	mem []byte   // the file mapped (nil: written with pwrite)
	// io is held shared by each write and exclusively by Close, which
	// unmaps the file: a request cut by a shutdown may still end and
	// clear its slot after it.
	io       sync.RWMutex
	closed   bool
	mu       sync.Mutex
	slots    []*Slot // grown on demand up to MaxSlots
	free     []*Slot
	overflow atomic.Int64 // requests not recorded since the start (over MaxSlots at once)
	pid      int
	started  time.Time
}

// Slot is one request's place in the list. Its methods are safe on a
// nil Slot (a request with no list) and from several goroutines.
type Slot struct {
	log   *Log
	idx   int // position in the file: slot idx+1 (the header is 0)
	mu    sync.Mutex
	e     Entry
	inUse bool
	buf   [slotSize]byte
}

// live are the open logs, for the report of a ggml abort (Lines).
var live sync.Map // *Log → struct{}

// Memory is a Log without a file: the abort report still lists its
// requests, a death leaves nothing.
func Memory() *Log {
	l := &Log{pid: os.Getpid(), started: time.Now()}
	live.Store(l, struct{}{})
	return l
}

// Begin records a request that starts now in phase Received; End must be
// called when it ends. Over MaxSlots requests at once, the request is
// counted but not named (nil Slot).
func (l *Log) Begin(id, route string, body int64) *Slot {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	var s *Slot
	if n := len(l.free); n > 0 {
		s, l.free = l.free[n-1], l.free[:n-1]
	} else if len(l.slots) < MaxSlots {
		s = &Slot{log: l, idx: len(l.slots)}
		l.slots = append(l.slots, s)
	}
	l.mu.Unlock()
	if s == nil {
		if l.overflow.Add(1) == 1 {
			l.writeHeader(false)
		}
		return nil
	}
	s.mu.Lock()
	s.e = Entry{ID: id, Route: route, Phase: Received, Start: time.Now(), Body: body}
	s.inUse = true
	s.write()
	s.mu.Unlock()
	return s
}

// End clears the request's slot and frees it.
func (s *Slot) End() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.inUse = false
	s.e = Entry{}
	s.clear()
	s.mu.Unlock()
	l := s.log
	l.mu.Lock()
	l.free = append(l.free, s)
	l.mu.Unlock()
}

// SetKey records the API key's id; it is written with the next phase.
func (s *Slot) SetKey(id string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.e.Key = id
	s.mu.Unlock()
}

// Mark records that the request enters phase (on model, unless empty):
// one write, none when nothing changed.
func (s *Slot) Mark(phase Phase, model string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.inUse && (phase != s.e.Phase || model != "" && model != s.e.Model) {
		s.e.Phase = phase
		if model != "" {
			s.e.Model = model
		}
		s.write()
	}
	s.mu.Unlock()
}

// Phase is the phase the request last entered ("" for none, or a nil
// slot).
func (s *Slot) Phase() Phase {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e.Phase
}

type ctxKey struct{}

// NewContext returns ctx carrying the request's slot.
func NewContext(ctx context.Context, s *Slot) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, s)
}

// FromContext is the slot ctx carries (nil if none).
func FromContext(ctx context.Context) *Slot {
	s, _ := ctx.Value(ctxKey{}).(*Slot)
	return s
}

// Mark records that the request ctx carries enters phase (see
// Slot.Mark); without one it does nothing.
func Mark(ctx context.Context, phase Phase, model string) { FromContext(ctx).Mark(phase, model) }

// Entries are the requests in flight now.
func (l *Log) Entries() []Entry {
	l.mu.Lock()
	slots := l.slots
	l.mu.Unlock()
	var out []Entry
	for _, s := range slots {
		s.mu.Lock()
		if s.inUse {
			out = append(out, s.e)
		}
		s.mu.Unlock()
	}
	return out
}

// Close marks the file clean (the process shut down: no report at the
// next start), unmaps and closes it (releasing its lock); later writes
// are dropped.
func (l *Log) Close() error {
	live.Delete(l)
	if l.f == nil {
		return nil
	}
	l.writeHeader(true)
	l.io.Lock()
	defer l.io.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.mem != nil {
		unmap(l.mem)
		l.mem = nil
	}
	return l.f.Close()
}

// Lines describe the requests in flight in every open log, one a line,
// for the report of a ggml abort (engine.OnAbort).
func Lines() []string {
	var out []string
	live.Range(func(k, _ any) bool {
		l := k.(*Log)
		for _, e := range l.Entries() {
			out = append(out, e.String())
		}
		if n := l.overflow.Load(); n > 0 {
			out = append(out, strconv.FormatInt(n, 10)+" requests since the start were not recorded (over "+strconv.Itoa(MaxSlots)+" at once)")
		}
		return true
	})
	return out
}

// String is the entry on one line.
func (e Entry) String() string {
	s := "id=" + e.ID + " " + e.Route
	if e.Model != "" {
		s += " model=" + strconv.Quote(e.Model)
	}
	if e.Key != "" {
		s += " key=" + e.Key
	}
	return s + " phase=" + string(e.Phase) + " since=" + e.Start.Format(time.RFC3339Nano) + " body=" + strconv.FormatInt(e.Body, 10)
}

// write puts the entry in the slot's bytes and writes them (s.mu held).
func (s *Slot) write() {
	if s.log.f == nil {
		return
	}
	b := s.buf[:0]
	b = append(b, `{"id":`...)
	b = appendString(b, s.e.ID)
	b = append(b, `,"route":`...)
	b = appendString(b, s.e.Route)
	if s.e.Model != "" {
		b = append(b, `,"model":`...)
		b = appendString(b, s.e.Model)
	}
	if s.e.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, s.e.Key)
	}
	b = append(b, `,"phase":"`...)
	b = append(b, s.e.Phase...)
	b = append(b, `","start":"`...)
	b = s.e.Start.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","body":`...)
	b = strconv.AppendInt(b, s.e.Body, 10)
	b = append(b, '}')
	s.log.writeSlot(s.idx+1, pad(b))
}

// clear writes the slot blank (s.mu held).
func (s *Slot) clear() {
	if s.log.f != nil {
		s.log.writeSlot(s.idx+1, pad(s.buf[:0]))
	}
}

// pad fills b (whose array is slotSize long) with spaces and a newline.
func pad(b []byte) []byte {
	n := min(len(b), slotSize-1)
	b = b[:slotSize]
	copy(b[n:], blank[n:])
	return b
}

// blank is an empty slot.
var blank = func() (b [slotSize]byte) {
	for i := range b {
		b[i] = ' '
	}
	b[slotSize-1] = '\n'
	return b
}()

// writeSlot writes slot i: a copy into the mapping, or a pwrite, whose
// error (a full disk) loses only the report.
func (l *Log) writeSlot(i int, b []byte) {
	l.io.RLock()
	defer l.io.RUnlock()
	switch {
	case l.closed:
	case l.mem != nil:
		copy(l.mem[i*slotSize:], b)
	default:
		l.f.WriteAt(b, int64(i)*slotSize)
	}
}

// writeHeader writes the header slot.
func (l *Log) writeHeader(clean bool) {
	if l.f == nil {
		return
	}
	var buf [slotSize]byte
	b := append(buf[:0], `{"tadpole_inflight":1,"pid":`...)
	b = strconv.AppendInt(b, int64(l.pid), 10)
	b = append(b, `,"started":"`...)
	b = l.started.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","clean":`...)
	b = strconv.AppendBool(b, clean)
	b = append(b, `,"overflow":`...)
	b = strconv.AppendBool(b, l.overflow.Load() > 0)
	b = append(b, '}')
	l.mu.Lock() // headers are written in order
	l.writeSlot(0, pad(b))
	l.mu.Unlock()
}

// appendString appends s as a JSON string, cut at a character so that
// its escaped form takes at most fieldMax bytes.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	budget := fieldMax
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			if budget == 0 {
				break
			}
			b = append(b, c)
			budget--
			i++
			continue
		}
		var esc [6]byte
		e := esc[:0]
		size := 1
		switch {
		case c == '"' || c == '\\':
			e = append(e, '\\', c)
		case c < 0x20:
			e = append(e, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			e = utf8.AppendRune(e, r) // an invalid byte becomes U+FFFD
		}
		if len(e) > budget {
			break
		}
		budget -= len(e)
		b = append(b, e...)
		i += size
	}
	return append(b, '"')
}
