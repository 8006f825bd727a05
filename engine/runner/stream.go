package runner

import (
	"context"
	"io"
	"sync"
	"time"
)

// Stream is one request's events, handed from the decode loop to the
// request's reader. The loop never waits on a reader: it appends to the
// stream's queue and signals. The reader takes everything queued at once
// (Next), so a reader slower than the model — a slow client, a busy
// writer — gets several tokens per call and writes them together instead
// of holding the loop back. No goroutine stands between the two.
//
// A Stream has one reader. Nothing needs to drain it: when the request's
// context ends, the loop ends the generation at its next step and the
// unread events are garbage.
type Stream struct {
	mu     sync.Mutex
	queue  []Event
	closed bool // the final event is queued
	ended  bool // the final event was taken
	ready  chan struct{}
	notify chan struct{} // optional second wake-up, shared by several streams
	onDone func(Event)
}

func newStream(notify chan struct{}, onDone func(Event)) *Stream {
	return &Stream{ready: make(chan struct{}, 1), notify: notify, onDone: onDone}
}

// send queues an event; the final event (Done) closes the stream.
func (s *Stream) send(ev Event) {
	ev.queued = time.Now()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, ev)
	s.closed = ev.Done
	s.mu.Unlock()
	wake(s.ready)
	if s.notify != nil {
		wake(s.notify)
	}
	if ev.Done && s.onDone != nil {
		go s.onDone(ev)
	}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// TryNext appends the events queued so far to dst without waiting. After
// the final event has been taken it returns io.EOF.
func (s *Stream) TryNext(dst []Event) ([]Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return dst, io.EOF
	}
	if len(s.queue) == 0 {
		return dst, nil
	}
	now := time.Now()
	for _, ev := range s.queue {
		record(PhaseDeliver, now.Sub(ev.queued))
	}
	dst = append(dst, s.queue...)
	clear(s.queue)
	s.queue = s.queue[:0]
	s.ended = s.closed
	return dst, nil
}

// Next appends every queued event to dst, waiting for one if none is
// queued. It returns ctx's error if ctx ends first, and io.EOF once the
// final event has been taken.
func (s *Stream) Next(ctx context.Context, dst []Event) ([]Event, error) {
	n := len(dst)
	for {
		var err error
		if dst, err = s.TryNext(dst); err != nil || len(dst) > n {
			return dst, err
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
}

// Ready is signalled after events are queued (it may be signalled with
// none left by the time it is read: TryNext tells).
func (s *Stream) Ready() <-chan struct{} { return s.ready }

// Collect reads the stream to its final event and returns the events
// (for callers that want the whole answer).
func (s *Stream) Collect(ctx context.Context) ([]Event, error) {
	var out []Event
	for {
		var err error
		out, err = s.Next(ctx, out)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
