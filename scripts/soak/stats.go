package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"
)

// stats collects the outcomes of every client.
type stats struct {
	mu         sync.Mutex
	ok         int
	cancelled  int
	deliberate int            // 429 and 503: the server refusing load on purpose
	errors     map[string]int // every other failure, by kind
	byKind     map[string]int // requests by request kind
	ttft       []time.Duration
}

func newStats() *stats {
	return &stats{errors: map[string]int{}, byKind: map[string]int{}}
}

func (s *stats) add(k string, o outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byKind[k]++
	if o.ttft > 0 {
		s.ttft = append(s.ttft, o.ttft)
	}
	switch {
	case o.status == http.StatusTooManyRequests || o.status == http.StatusServiceUnavailable:
		s.deliberate++
	case o.err != "":
		s.errors[k+": "+o.err]++
	case o.cancelled:
		s.cancelled++
	default:
		s.ok++
	}
}

// snapshot is the counters at one moment.
type snapshot struct {
	ok, cancelled, deliberate, errors int
	p50, p99                          time.Duration
}

func (s *stats) snapshot() snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := snapshot{ok: s.ok, cancelled: s.cancelled, deliberate: s.deliberate}
	for _, n := range s.errors {
		out.errors += n
	}
	t := slices.Clone(s.ttft)
	slices.Sort(t)
	out.p50, out.p99 = percentile(t, 50), percentile(t, 99)
	return out
}

// percentile of sorted durations (nearest rank); 0 when there are none.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

// line prints one progress line.
func line(w io.Writer, at time.Duration, s snapshot, m sample) {
	fmt.Fprintf(w, "[%6s] ok=%d cancelled=%d errors=%d deliberate_429_503=%d ttft_p50=%s ttft_p99=%s rss=%.1fMiB go_heap=%s go_held=%s c_heap=%s c_held=%s prompt_cache=%.1fMiB threads=%d fds=%d goroutines=%s loaded=%d slots_busy=%d\n",
		at.Truncate(time.Second), s.ok, s.cancelled, s.errors, s.deliberate, ms(s.p50), ms(s.p99),
		float64(m.rssKiB)/1024, mib(m.goHeapKiB), mib(m.goHeldKiB), mib(m.cHeapKiB), mib(m.cHeldKiB), float64(m.cacheKiB)/1024, m.threads, m.fds, unknown(m.goroutines), m.loaded, m.slotsBusy)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond)) }

// mib prints KiB as MiB, "n/a" when unknown (negative).
func mib(kib int64) string {
	if kib < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1fMiB", float64(kib)/1024)
}

func unknown(n int) string {
	if n < 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

// table prints the requests by kind and the errors by kind.
func (s *stats) table(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintln(w, "requests by kind:")
	for _, k := range sortedKeys(s.byKind) {
		fmt.Fprintf(w, "  %-28s %d\n", k, s.byKind[k])
	}
	fmt.Fprintln(w, "errors by kind:")
	if len(s.errors) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, k := range sortedKeys(s.errors) {
		fmt.Fprintf(w, "  %6d  %s\n", s.errors[k], k)
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
