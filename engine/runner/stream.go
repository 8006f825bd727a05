package runner

import "sync"

// stream hands a request's events from the decode loop to its consumer.
// The loop never blocks on a slow client: events queue without bound and
// one goroutine per request forwards them to the consumer's channel.
type stream struct {
	mu     sync.Mutex
	queue  []Event
	wake   chan struct{}
	closed bool
	out    chan Event
	gone   <-chan struct{} // the consumer went away (request context done)
}

func newStream(gone <-chan struct{}) *stream {
	s := &stream{wake: make(chan struct{}, 1), out: make(chan Event, 8), gone: gone}
	go s.forward()
	return s
}

// send queues an event; the final event (Done) closes the stream.
func (s *stream) send(ev Event) {
	s.mu.Lock()
	if !s.closed {
		s.queue = append(s.queue, ev)
		s.closed = ev.Done
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) forward() {
	defer close(s.out)
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		closed := s.closed
		s.mu.Unlock()
		for _, ev := range q {
			select {
			case s.out <- ev:
			case <-s.gone:
				// Nobody reads any more; the loop sees the same
				// cancellation and frees the slot.
				if !closed {
					s.drainUntilClosed()
				}
				return
			}
		}
		if closed {
			return
		}
		<-s.wake
	}
}

// drainUntilClosed discards events until the loop closes the stream, so
// the forwarding goroutine never outlives its request.
func (s *stream) drainUntilClosed() {
	for {
		s.mu.Lock()
		s.queue = nil
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return
		}
		<-s.wake
	}
}
