package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tadpole-llm/tadpole/scripts/internal/serve"
)

// server is the tadpole serve process under load.
type server struct {
	*serve.Process
	url string // Process.URL
	dbg string // its --debug-addr (Go's pprof), for goroutine dumps
}

// startServer lays out a temporary models directory with the demo model
// ("stories") and the generated bigram chat model ("bigram"), and starts
// bin serve on a free loopback port with its own data directory. extra
// are further serve flags.
func startServer(bin, dir string, extra []string) (*server, error) {
	models, err := serve.Models(dir)
	if err != nil {
		return nil, err
	}
	port, err := serve.FreePort()
	if err != nil {
		return nil, err
	}
	dport, err := serve.FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--models", models, "--data-dir", filepath.Join(dir, "data"), "--log-level", "warn",
		"--debug-addr", "127.0.0.1:" + dport}, extra...)
	p, err := serve.Start(bin, port, "", filepath.Join(dir, "server.log"), args)
	if err != nil {
		return nil, err
	}
	return &server{Process: p, url: p.URL, dbg: "http://127.0.0.1:" + dport}, nil
}

// sample is the server's process state at one moment.
type sample struct {
	rssKiB     int64
	goHeapKiB  int64 // Go heap in use (go_memstats_heap_inuse_bytes); -1: unknown
	goHeldKiB  int64 // what the Go runtime holds from the OS (go_memstats_sys_bytes less heap released)
	cHeapKiB   int64 // C's malloc, allocated and not freed (tadpole_native_heap_bytes{state="in_use"}); -1: unknown
	cHeldKiB   int64 // C's malloc, taken from the system (tadpole_native_heap_bytes{state="held"}); -1: unknown
	cacheKiB   int64 // the prompt cache's RAM tier (tadpole_prompt_cache_bytes{tier="ram"}): budgeted, outside Go's heap
	threads    int
	fds        int
	goroutines int // -1: /metrics has no go_goroutines
	slotsBusy  int // -1: unknown
	loaded     int // model instances (/api/ps)
}

// measure reads /proc/PID/status (VmRSS, Threads), counts /proc/PID/fd,
// and asks the server for its slots (/api/ps) and goroutines (/metrics).
func (s *server) measure() sample {
	pid := s.Cmd.Process.Pid
	out := sample{goroutines: -1, slotsBusy: -1, goHeapKiB: -1, goHeldKiB: -1, cHeapKiB: -1, cHeldKiB: -1}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			f := strings.Fields(v)
			if len(f) == 0 {
				continue
			}
			n, _ := strconv.ParseInt(f[0], 10, 64)
			switch k {
			case "VmRSS":
				out.rssKiB = n
			case "Threads":
				out.threads = int(n)
			}
		}
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		out.fds = len(ents)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if st, body, err := get(ctx, s.url+"/api/ps"); err == nil && st == http.StatusOK {
		var ps struct {
			Models []struct {
				Tadpole *struct {
					SlotsBusy int `json:"slots_busy"`
				} `json:"tadpole"`
			} `json:"models"`
		}
		if json.Unmarshal(body, &ps) == nil {
			out.loaded = len(ps.Models)
			out.slotsBusy = 0
			for _, m := range ps.Models {
				if m.Tadpole != nil {
					out.slotsBusy += m.Tadpole.SlotsBusy
				}
			}
		}
	}
	if st, body, err := get(ctx, s.url+"/metrics"); err == nil && st == http.StatusOK {
		var sys, released float64
		sc := bufio.NewScanner(strings.NewReader(string(body)))
		for sc.Scan() {
			name, v, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				continue
			}
			switch name {
			case `tadpole_prompt_cache_bytes{tier="ram"}`:
				out.cacheKiB = int64(f) / 1024
			case `tadpole_native_heap_bytes{state="in_use"}`:
				out.cHeapKiB = int64(f) / 1024
			case `tadpole_native_heap_bytes{state="held"}`:
				out.cHeldKiB = int64(f) / 1024
			case "go_goroutines":
				out.goroutines = int(f)
			case "go_memstats_heap_inuse_bytes":
				out.goHeapKiB = int64(f) / 1024
			case "go_memstats_sys_bytes":
				sys = f
			case "go_memstats_heap_released_bytes":
				released = f
			}
		}
		if sys > 0 {
			out.goHeldKiB = int64(sys-released) / 1024
		}
	}
	return out
}

// get is a GET on a client of its own (no connection kept).
func get(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// goroutines is the server's goroutine profile in text (pprof debug=1:
// each distinct stack with its count), or why it is not.
// collect has the server's Go runtime collect its garbage now (the heap
// profile's gc=1 runs runtime.GC), so that the next measure sees the
// live heap.
func (s *server) collect() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	get(ctx, s.dbg+"/debug/pprof/heap?gc=1")
}

func (s *server) goroutines() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, body, err := get(ctx, s.dbg+"/debug/pprof/goroutine?debug=1")
	if err != nil || st != http.StatusOK {
		return fmt.Sprintf("(no goroutine profile: status %d, %v)", st, err)
	}
	return string(body)
}

// newStacks lists the goroutine stacks of after (a debug=1 profile) that
// are more numerous than in before: what the load left behind.
func newStacks(before, after string) string {
	count := func(p string) map[string]int {
		m := map[string]int{}
		for _, rec := range strings.Split(p, "\n\n") {
			n, stack, ok := strings.Cut(rec, " @ ")
			if !ok {
				continue
			}
			// The first record starts with the profile's header line
			// ("goroutine profile: total N"): the count is on the last line.
			if i := strings.LastIndexByte(n, '\n'); i >= 0 {
				n = n[i+1:]
			}
			var c int
			fmt.Sscanf(strings.TrimSpace(n), "%d", &c)
			_, frames, _ := strings.Cut(stack, "\n")
			m[frames] += c
		}
		return m
	}
	b, a := count(before), count(after)
	var out strings.Builder
	for frames, c := range a {
		if c > b[frames] {
			fmt.Fprintf(&out, "%d more of:\n%s\n\n", c-b[frames], frames)
		}
	}
	return out.String()
}
