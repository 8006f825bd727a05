package testkit

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// Eventually returns once the condition holds, and fails the test naming
// what it waited for when it never does.
func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, time.Minute, "the third call", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("called %d times, want 3", n)
	}
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(ft, 20*time.Millisecond, "never", func() bool { return false })
	}()
	<-done
	if ft.msg != "waited 20ms for never" {
		t.Errorf("failure %q", ft.msg)
	}
}

// fakeT records Fatalf and ends its goroutine as testing.T does.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
