// Command attack replays the findings of issue 40 ("Hardening, round
// two") against a real tadpole serve on loopback and prints the issue's
// closing table (make attack):
//
//	go run ./scripts/attack -bin bin/tadpole [-quick] [-keep]
//
// It writes its models into a temporary directory (the demo model
// "stories", the generated ChatML model "bigram", the generated vision
// model "vision" with its projector), starts the binary on a free
// 127.0.0.1 port with a temporary --models and --data-dir, API keys (the
// attacks use an inference-scope key, management an admin key) and
// --allow-image-urls, and sends each finding's request as the issue
// describes it, scaled to a small machine. While each attack runs,
// another client streams a long greedy /api/generate from the same model
// and the tool keeps its longest gap between two NDJSON lines; the
// server's peak RSS during the attack is its VmHWM after a reset
// (/proc/PID/clear_refs), or the highest VmRSS sampled every 50 ms.
//
// Each row's verdict is PASS when every answer is the expected one (a 4xx
// for the attacks, a 2xx for what must keep working) and the server still
// answers /api/version. The tool ends with an overall PASS/FAIL line and
// exits 1 on FAIL. No request leaves the loopback interface: the image
// URLs of the address-class row name non-public addresses that the
// server must refuse before it connects.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// attack is one row of the table.
type attack struct {
	finding string
	request string
	model   string                  // the other client's model ("": no other client)
	setup   func(s *server) error   // before the measure, if any
	run     func(s *server) outcome // the attack, measured
}

// outcome is how an attack went.
type outcome struct {
	statuses []int
	extra    string // a further word for the status column
	note     string // printed under the table
	fail     string // why the answers are not the expected ones ("": they are)
}

// row is an attack's measured line.
type row struct {
	a     attack
	o     outcome
	took  time.Duration
	rss   int64 // KiB
	stall time.Duration
	alive bool
	other []string // the other client's errors
	log   []string // the server's telling log lines when the row failed
}

var (
	quick    bool
	maxStall time.Duration
	maxRSS   int64 // KiB
)

func main() {
	bin := flag.String("bin", "bin/tadpole", "the tadpole binary to attack")
	flag.BoolVar(&quick, "quick", false, "smaller sizes (CI): fewer concurrent requests and turns, a smaller stored image")
	keep := flag.Bool("keep", false, "keep the temporary directory (models, data, server.log)")
	flag.DurationVar(&maxStall, "max-stall", 10*time.Second, "a longer gap in the other client's stream fails the row")
	rssMiB := flag.Int64("max-rss", 2048, "a higher peak RSS of the server, in MiB, fails the row")
	only := flag.String("only", "", "run only the rows whose finding contains this text")
	serveFlags := flag.String("serve-flags", "--parallel 2 --context-length 512 --read-timeout 5s --min-body-rate 100 --idle-timeout 10s --log-level info",
		"further flags of tadpole serve (shorter timeouts than the defaults keep the slow-body and idle rows short)")
	flag.Parse()
	maxRSS = *rssMiB * 1024

	dir, err := os.MkdirTemp("", "tadpole-attack-")
	if err != nil {
		fail(err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	start := time.Now()
	s, err := startServer(*bin, dir, strings.Fields(*serveFlags))
	if err != nil {
		fail(err)
	}
	defer s.Stop()
	fmt.Printf("attack: %s serve on %s %s (dir %s)\n", *bin, s.url, *serveFlags, dir)

	var rows []row
	for _, a := range attacks() {
		if *only != "" && !strings.Contains(a.finding, *only) {
			continue
		}
		r := measure(s, a)
		rows = append(rows, r)
		fmt.Printf("  %-28s %-12s %6s  rss %s  stall %s  %s\n", a.finding, statusText(r.o), secs(r.took), mib(r.rss), ms(r.stall), verdict(r))
		if !r.alive {
			break
		}
	}
	s.Stop()
	ok := table(os.Stdout, rows)
	fmt.Printf("\n%d rows in %s\n", len(rows), time.Since(start).Truncate(time.Second))
	if !ok {
		fmt.Printf("the temporary directory is kept: %s (server.log)\n", dir)
		fmt.Println("ATTACK FAIL")
		os.Exit(1)
	}
	fmt.Println("ATTACK PASS")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "attack:", err)
	os.Exit(1)
}

// measure runs one attack with the other client streaming beside it.
func measure(s *server, a attack) row {
	r := row{a: a}
	if a.setup != nil {
		if err := a.setup(s); err != nil {
			r.o = outcome{fail: "setup: " + err.Error()}
			r.alive = s.Alive()
			return r
		}
	}
	var st *staller
	if a.model != "" {
		st = s.startStaller(a.model)
	}
	logAt := s.logSize()
	p := s.startPeak()
	t0 := time.Now()
	r.o = a.run(s)
	r.took = time.Since(t0)
	r.rss = p.end()
	if st != nil {
		r.stall, r.other = st.end()
	}
	r.alive = s.Alive()
	if r.o.fail != "" || len(r.other) > 0 {
		r.log = telling(s.logSince(logAt), 12)
	}
	if !r.alive { // Go's fatal errors and panics span many lines
		r.log = strings.Split(tail(s.logSince(logAt), 4000), "\n")
	}
	return r
}

// telling picks the log lines that say what went wrong: 5xx requests,
// errors, warnings (not llama.cpp's loader chatter), panics and fatal
// errors; at most n.
func telling(log string, n int) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "src=llama.cpp") {
			continue
		}
		if strings.Contains(l, " status=5") || strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") ||
			strings.Contains(l, "panic") || strings.Contains(l, "fatal error") {
			out = append(out, l)
		}
	}
	return out[max(0, len(out)-n):]
}

func verdict(r row) string {
	if r.alive && r.o.fail == "" && len(r.other) == 0 && r.stall <= maxStall && r.rss <= maxRSS {
		return "PASS"
	}
	return "FAIL"
}

// statusText is the statuses, counted: "400×8", "200, 400".
func statusText(o outcome) string {
	var keys []int
	n := map[int]int{}
	for _, s := range o.statuses {
		if n[s] == 0 {
			keys = append(keys, s)
		}
		n[s]++
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		w := fmt.Sprint(k)
		if k == 0 {
			w = "none"
		}
		if n[k] > 1 {
			w += fmt.Sprintf("×%d", n[k])
		}
		parts = append(parts, w)
	}
	out := strings.Join(parts, ", ")
	if o.extra != "" {
		out = strings.TrimSpace(out + " " + o.extra)
	}
	return out
}

// table prints the markdown table and the notes; it reports whether
// every row passed.
func table(w *os.File, rows []row) bool {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| # | finding | request | status(es) | time | peak RSS | other client's longest stall | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	ok := true
	var notes []string
	for i, r := range rows {
		v := verdict(r)
		if v != "PASS" {
			ok = false
		}
		stall := "—"
		if r.a.model != "" {
			stall = ms(r.stall) + " (" + r.a.model + ")"
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", i+1, r.a.finding, r.a.request, statusText(r.o), secs(r.took), mib(r.rss), stall, v)
		var n []string
		if r.o.note != "" {
			n = append(n, r.o.note)
		}
		if r.o.fail != "" {
			n = append(n, "FAIL: "+r.o.fail)
		}
		if !r.alive {
			n = append(n, "FAIL: the server no longer answers /api/version")
		}
		if r.stall > maxStall {
			n = append(n, fmt.Sprintf("FAIL: the other client stalled %s (-max-stall %s)", r.stall, maxStall))
		}
		if r.rss > maxRSS {
			n = append(n, fmt.Sprintf("FAIL: peak RSS %s (-max-rss %s)", mib(r.rss), mib(maxRSS)))
		}
		if len(r.other) > 0 {
			n = append(n, fmt.Sprintf("FAIL: the other client got %d errors, first: %.300s", len(r.other), r.other[0]))
		}
		if len(r.log) > 0 {
			n = append(n, "server log:\n    "+strings.Join(r.log, "\n    "))
		}
		if len(n) > 0 {
			notes = append(notes, fmt.Sprintf("%d. %s", i+1, strings.Join(n, "\n   ")))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
	return ok && len(rows) > 0
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func secs(d time.Duration) string {
	if d < time.Second {
		return ms(d)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
func mib(kib int64) string      { return fmt.Sprintf("%.0f MiB", float64(kib)/1024) }

// within gives f a context of its own with a deadline.
func within(d time.Duration, f func(ctx context.Context) result) result {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return f(ctx)
}
