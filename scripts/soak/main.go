// Command soak is a bounded, self-stopping load test of tadpole serve on
// loopback (make soak):
//
//	go run ./scripts/soak -bin bin/tadpole -duration 10m -clients 64
//
// It starts the binary on a free loopback port with a temporary models
// directory (the demo model "stories" and the generated bigram chat model
// "bigram") and data directory, warms it up with one request of every
// kind, then runs the clients for the duration. Each client loops over a
// weighted mix of every dialect (Ollama generate/chat/embed, OpenAI
// chat/completions/embeddings, Open WebUI chat, streamed and not; Anura
// jobs submitted and polled, Anura SSE chat) on both models, with small
// num_predict, keep_alive 0 on one request in 20 (models unload and load
// again) and one stream in 8 cancelled after a few chunks; -hostile
// (default 1%) of the requests are attacks (hostile.go), each of which
// must get its expected answer.
//
// Every -report it prints the requests ok, cancelled, failed and refused
// on purpose (429/503), p50/p99 time to first token, and the server's
// RSS (VmRSS), threads, open descriptors (/proc/PID), goroutines (when
// /metrics exports go_goroutines) and busy slots (/api/ps). After the
// clients stop and the server drains it prints the same and a verdict:
// PASS needs 0 unexpected errors; RSS flat: the median of the last third
// of the samples after the warm-up within 10% of the median of the first
// third, for the whole RSS and for the part the Go runtime does not hold,
// and live memory after the drain (Go's heap in use and what neither Go
// nor the prompt cache holds) within 10% of its first median; 0 busy slots;
// no more descriptors or goroutines than after the warm-up (the
// goroutines left behind are printed from the server's --debug-addr). It
// exits 1 on FAIL.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	bin := flag.String("bin", "bin/tadpole", "the tadpole binary to serve with")
	duration := flag.Duration("duration", 10*time.Minute, "how long the clients run")
	clients := flag.Int("clients", 64, "concurrent clients")
	report := flag.Duration("report", 30*time.Second, "how often to print progress")
	warmup := flag.Duration("warmup", 0, "load time before the RSS baseline is taken (0: a fifth of -duration, at most 1m)")
	seed := flag.Uint64("seed", 1, "seed of the clients' choices")
	// Anura jobs are 2 of the mix's 36 weights: with 64 clients about 3
	// are waiting at any time, each as long as an interactive request
	// (plus the 2 s jobs give way). The server's default of 2 job
	// workers would queue them past a client's 2-minute wait; the soak
	// looks for leaks and errors, not for the operator's job sizing.
	serveFlags := flag.String("serve-flags", "--parallel 4 --context-length 512 --job-workers 8", "further flags of tadpole serve")
	keep := flag.Bool("keep", false, "keep the temporary directory (models, data, server.log)")
	flag.Float64Var(&hostileRate, "hostile", hostileRate, "share of requests that are attacks (template bombs, forged turn markers, a huge enum), each answered as it must be")
	flag.Parse()
	if *warmup == 0 {
		*warmup = min(*duration/5, time.Minute)
	}
	dir, err := os.MkdirTemp("", "tadpole-soak-")
	if err != nil {
		fail(err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	srv, err := startServer(*bin, dir, strings.Fields(*serveFlags))
	if err != nil {
		fail(err)
	}
	defer srv.Stop()
	fmt.Printf("soak: %s serve on %s, %d clients for %s, warm-up %s, seed %d (dir %s)\n", *bin, srv.url, *clients, *duration, *warmup, *seed, dir)
	ok := run(srv, *duration, *warmup, *report, *clients, *seed)
	srv.Stop()
	if !ok {
		fmt.Printf("server log (tail):\n%s\n", srv.Tail(3000))
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "soak:", err)
	os.Exit(1)
}

// run loads the server and prints the verdict; it reports whether the
// soak passed.
func run(srv *server, duration, warmup, report time.Duration, n int, seed uint64) bool {
	tr := &http.Transport{MaxIdleConns: n * 2, MaxIdleConnsPerHost: n * 2, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: tr}
	st := newStats()

	// Warm-up: every kind once on a quiet server, then the idle baseline.
	wc := &client{base: srv.url, http: hc, rnd: rand.New(rand.NewPCG(seed, 0))}
	for _, k := range kinds {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		st.add(k.name, k.run(wc, ctx))
		cancel()
	}
	idle := settle(srv, tr)
	idleStacks := srv.goroutines()
	fmt.Printf("after warm-up requests (idle): rss=%.1fMiB threads=%d fds=%d goroutines=%s loaded=%d\n",
		float64(idle.rssKiB)/1024, idle.threads, idle.fds, unknown(idle.goroutines), idle.loaded)

	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for i := range n {
		c := &client{base: srv.url, http: hc, rnd: rand.New(rand.NewPCG(seed, uint64(i+1)))}
		wg.Go(func() {
			for time.Now().Before(deadline) {
				k := pick(c.rnd)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				st.add(k.name, k.run(c, ctx))
				cancel()
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// Sample every 5 s, print every report.
	// RSS after the warm-up: every 5 s sample, for the trend. The
	// garbage collector's sawtooth moves RSS by tens of MiB within a
	// minute (a refused template bomb alone leaves up to 16 MiB of
	// garbage), so a few samples against a few others say little: the
	// verdict compares the median of the first third of the samples with
	// the median of the last third, for the whole RSS and for the part the
	// Go runtime does not hold (llama.cpp's and the C libraries' memory,
	// where a leak would not show in Go's figures).
	var rssMax int64
	var after []sample
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	lastPrint := time.Now()
	died := false
loop:
	for {
		select {
		case <-done:
			break loop
		case <-tick.C:
		}
		if !srv.Running() {
			died = true
			fmt.Printf("the server died: %v\n", srv.Err())
			break
		}
		m := srv.measure()
		at := time.Since(start)
		if at >= warmup {
			after = append(after, m)
			rssMax = max(rssMax, m.rssKiB)
		}
		if time.Since(lastPrint) >= report {
			line(os.Stdout, at, st.snapshot(), m)
			lastPrint = time.Now()
		}
	}
	<-done
	elapsed := time.Since(start)
	if !srv.Running() {
		died = true
	}

	// Drain: the clients have stopped; wait for the slots to empty.
	var final sample
	if !died {
		final = settle(srv, tr)
		rssMax = max(rssMax, final.rssKiB)
	}
	third := len(after) / 3
	rss := func(m sample) int64 { return m.rssKiB }
	// The native part leaves out the prompt cache's RAM tier too: it is
	// meant to fill up to its budget (--cache-ram) as conversations leave
	// the slots, and is reported apart.
	native := func(m sample) int64 { return m.rssKiB - max(m.goHeldKiB, 0) - m.cacheKiB }
	cache := func(m sample) int64 { return m.cacheKiB }
	// live is what a leak would grow: Go's heap in use and the memory
	// neither Go nor the prompt cache holds; RSS less the prompt cache
	// where Go's figures are unknown.
	live := func(m sample) int64 {
		if m.goHeapKiB < 0 {
			return m.rssKiB - m.cacheKiB
		}
		return native(m) + m.goHeapKiB
	}
	cHeap := func(m sample) int64 { return m.cHeapKiB }
	cHeld := func(m sample) int64 { return m.cHeldKiB }
	first, last := after[:third], after[len(after)-third:]
	rssBase, rssEnd := median(first, rss), median(last, rss)
	natBase, natEnd := median(first, native), median(last, native)
	heapBase, heapEnd := median(first, cHeap), median(last, cHeap)
	heldBase, heldEnd := median(first, cHeld), median(last, cHeld)
	snap := st.snapshot()
	fmt.Println("---- end of load ----")
	line(os.Stdout, elapsed, snap, final)
	st.table(os.Stdout)
	total := snap.ok + snap.cancelled + snap.errors + snap.deliberate
	fmt.Printf("requests: %d in %s (%.1f/s); ttft p50 %s p99 %s\n", total, elapsed.Truncate(time.Second),
		float64(total)/elapsed.Seconds(), ms(snap.p50), ms(snap.p99))
	fmt.Printf("RSS under load, median of the first and the last third of %d samples after the warm-up: %.1f → %.1fMiB (not held by Go nor the prompt cache: %.1f → %.1fMiB; the prompt cache's RAM tier: %.1f → %.1fMiB), max %.1fMiB\n",
		len(after), float64(rssBase)/1024, float64(rssEnd)/1024, float64(natBase)/1024, float64(natEnd)/1024,
		float64(median(first, cache))/1024, float64(median(last, cache))/1024, float64(rssMax)/1024)
	fmt.Printf("C's malloc (llama.cpp, ggml, C libraries), same medians: in use %s → %s, held %s → %s\n",
		mib(heapBase), mib(heapEnd), mib(heldBase), mib(heldEnd))
	fmt.Printf("after drain: rss=%.1fMiB threads=%d (idle baseline %d) fds=%d (idle baseline %d) goroutines=%s (idle baseline %s) slots_busy=%d loaded=%d\n",
		float64(final.rssKiB)/1024, final.threads, idle.threads,
		final.fds, idle.fds, unknown(final.goroutines), unknown(idle.goroutines), final.slotsBusy, final.loaded)

	var why []string
	if died {
		why = append(why, "the server died")
	}
	if snap.errors > 0 {
		why = append(why, fmt.Sprintf("%d unexpected errors", snap.errors))
	}
	if third < 3 {
		why = append(why, fmt.Sprintf("%d RSS samples after the warm-up, too few for a trend (duration too short?)", len(after)))
	} else if cacheGrowth := median(last, cache) - median(first, cache); float64(rssEnd-cacheGrowth) > 1.10*float64(rssBase) {
		why = append(why, fmt.Sprintf("RSS grew %.0f%% under load beyond the prompt cache's growth (median of the last third of the samples against the first)", 100*(float64(rssEnd-cacheGrowth)/float64(rssBase)-1)))
	} else if heapBase > 0 && float64(heapEnd) > 1.10*float64(heapBase) {
		// A native leak: memory llama.cpp or a C library allocated and
		// never freed.
		why = append(why, fmt.Sprintf("C's malloc has %.0f%% more in use under load (median of the last third against the first)", 100*(float64(heapEnd)/float64(heapBase)-1)))
	} else if heldBase > 0 && float64(heldEnd) > 1.10*float64(heldBase) {
		// Fragmentation: freed memory malloc cannot give back.
		why = append(why, fmt.Sprintf("C's malloc holds %.0f%% more from the system under load (median of the last third against the first)", 100*(float64(heldEnd)/float64(heldBase)-1)))
	} else if heapBase <= 0 && float64(natEnd) > 1.10*float64(natBase) {
		// Without malloc's figures (not glibc), the resident memory Go
		// does not hold stands in for them. With them it is only
		// reported: it also grows as KV caches and compute buffers that
		// malloc handed out whole are written page by page (longer
		// conversations reach pages no earlier one did), which is bounded
		// by what malloc holds.
		why = append(why, fmt.Sprintf("memory not held by Go grew %.0f%% under load (median of the last third against the first)", 100*(float64(natEnd)/float64(natBase)-1)))
	} else if base, end := median(first, live), live(final); !died && float64(end) > 1.10*float64(base) {
		// One sample against a median: RSS itself would swing with the
		// Go heap's sawtooth (what Go holds moved by 50 MiB between
		// samples of one run), so the drain is judged by live memory
		// after a garbage collection (settle): Go's heap in use and what
		// neither Go nor the prompt cache holds (llama.cpp, C libraries,
		// stacks), against its median under load.
		why = append(why, fmt.Sprintf("live memory after the drain (Go's heap in use and the memory neither Go nor the prompt cache holds) is %.0f%% above the post-warm-up median (%.1f → %.1f MiB; RSS %.1f → %.1f MiB)",
			100*(float64(end)/float64(base)-1), float64(base)/1024, float64(end)/1024, float64(rssBase)/1024, float64(final.rssKiB)/1024))
	}
	if final.slotsBusy != 0 {
		why = append(why, fmt.Sprintf("%d slots busy after the drain", final.slotsBusy))
	}
	if !died && final.fds > idle.fds {
		why = append(why, fmt.Sprintf("%d descriptors open after the drain, %d after the warm-up", final.fds, idle.fds))
	}
	// The server's side of the clients' closed connections, and of the
	// soak's own requests for figures, may take a moment to end.
	for i := 0; i < 10 && !died && idle.goroutines >= 0 && final.goroutines > idle.goroutines; i++ {
		time.Sleep(time.Second)
		final.goroutines = srv.measure().goroutines
	}
	if idle.goroutines >= 0 && final.goroutines > idle.goroutines {
		why = append(why, fmt.Sprintf("%d goroutines after the drain, %d after the warm-up", final.goroutines, idle.goroutines))
		fmt.Printf("goroutines the load left behind:\n%s", newStacks(idleStacks, srv.goroutines()))
	}
	if len(why) == 0 {
		fmt.Printf("SOAK PASS: %d clients, %s, %d requests, 0 unexpected errors, %d deliberate 429/503, RSS within 10%%, 0 busy slots, descriptors back to baseline\n",
			n, elapsed.Truncate(time.Second), total, snap.deliberate)
		return true
	}
	fmt.Printf("SOAK FAIL: %s\n", strings.Join(why, "; "))
	return false
}

// settle closes the clients' idle connections, waits (up to 30 s) until no
// slot is busy, and measures the idle server.
func settle(srv *server, tr *http.Transport) sample {
	tr.CloseIdleConnections()
	var m sample
	for range 30 {
		time.Sleep(time.Second)
		if m = srv.measure(); m.slotsBusy == 0 {
			break
		}
	}
	time.Sleep(time.Second) // the server notices the closed connections
	srv.collect()
	return srv.measure()
}

// pick chooses a request kind by weight.
func pick(r *rand.Rand) kind {
	if r.Float64() < hostileRate {
		return hostile[r.IntN(len(hostile))]
	}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	n := r.IntN(total)
	for _, k := range kinds {
		if n -= k.weight; n < 0 {
			return k
		}
	}
	return kinds[0]
}

// median is the median of f over the samples (0 for none).
func median(v []sample, f func(sample) int64) int64 {
	if len(v) == 0 {
		return 0
	}
	x := make([]int64, len(v))
	for i, m := range v {
		x[i] = f(m)
	}
	slices.Sort(x)
	return x[len(x)/2]
}
