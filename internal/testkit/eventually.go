package testkit

import (
	"testing"
	"time"
)

// Eventually waits until ok holds, calling it at once and then every
// few milliseconds (backing off to 100 ms), and fails t naming what it
// waited for if within passes first. ok runs on the test's goroutine; it
// may call t.Fatal itself.
func Eventually(t testing.TB, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}
