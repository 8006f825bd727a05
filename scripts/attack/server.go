package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tadpole-llm/tadpole/scripts/internal/serve"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// The two API keys the server is started with: attacks come with the
// inference key (what any user has), model management with the admin key.
const (
	inferenceKey = "tp-attack-inference"
	adminKey     = "tp-attack-admin"
)

// server is the tadpole serve process under attack.
type server struct {
	*serve.Process
	url     string // Process.URL
	dir     string // the temporary directory: models, data, cwd, server.log
	data    string // --data-dir
	cwd     string // the process's working directory (must not leak)
	log     string // Process.Log
	noClear bool   // /proc/PID/clear_refs refused: peak RSS by sampling
}

// startServer writes the models into dir/models (stories: the demo
// model; bigram: the generated ChatML chat model; vision: the generated
// vision model with its projector), and starts bin serve on a free
// loopback port with API keys, image URLs allowed, and extra flags.
func startServer(bin, dir string, extra []string) (*server, error) {
	s := &server{dir: dir, data: filepath.Join(dir, "data"), cwd: filepath.Join(dir, "server-cwd")}
	if err := os.MkdirAll(s.cwd, 0o755); err != nil {
		return nil, err
	}
	models, err := serve.Models(dir)
	if err != nil {
		return nil, err
	}
	if err := testmodels.WriteVision(filepath.Join(models, "vision.gguf"), filepath.Join(models, "vision.mmproj.gguf")); err != nil {
		return nil, fmt.Errorf("write the vision model: %w", err)
	}
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte(inferenceKey+" inference\n"+adminKey+" admin\n"), 0o600); err != nil {
		return nil, err
	}
	port, err := serve.FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--models", models, "--data-dir", s.data, "--api-keys-file", keys, "--allow-image-urls"}, extra...)
	p, err := serve.Start(bin, port, s.cwd, filepath.Join(dir, "server.log"), args)
	if err != nil {
		return nil, err
	}
	s.Process, s.url, s.log = p, p.URL, p.Log
	return s, nil
}

// logSize is the length of the server's log now: logSince(n) is what
// came after.
func (s *server) logSize() int64 {
	st, err := os.Stat(s.log)
	if err != nil {
		return 0
	}
	return st.Size()
}

func (s *server) logSince(n int64) string {
	b, _ := os.ReadFile(s.log)
	if int64(len(b)) < n {
		return ""
	}
	return string(b[n:])
}

// status reads fields of /proc/PID/status, in KiB.
func (s *server) status(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == field {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return -1
}

// peak measures the server's peak RSS over a span: it resets the
// kernel's high-water mark (clear_refs 5) and reads VmHWM at the end, and
// samples VmRSS every 50 ms as well (the figure when clear_refs is not
// permitted).
type peak struct {
	s    *server
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	max  int64
}

func (s *server) startPeak() *peak {
	p := &peak{s: s, stop: make(chan struct{})}
	if !s.noClear {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.Cmd.Process.Pid), []byte("5"), 0); err != nil {
			fmt.Fprintf(os.Stderr, "attack: clear_refs not permitted (%v): peak RSS sampled every 50 ms\n", err)
			s.noClear = true
		}
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if v := s.status("VmRSS"); v > 0 {
				p.mu.Lock()
				p.max = max(p.max, v)
				p.mu.Unlock()
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// end stops the sampling and returns the peak in KiB.
func (p *peak) end() int64 {
	close(p.stop)
	p.wg.Wait()
	if !p.s.noClear {
		if hwm := p.s.status("VmHWM"); hwm > 0 {
			return max(hwm, p.max)
		}
	}
	return p.max
}

// dirSize is the bytes of the files in dir whose names start with
// prefix.
func dirSize(dir, prefix string) int64 {
	ents, _ := os.ReadDir(dir)
	var n int64
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
				n += fi.Size()
			}
		}
	}
	return n
}
