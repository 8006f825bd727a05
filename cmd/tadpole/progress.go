package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// progress shows the status lines of pull, push and create: each status
// on a line of its own, and each blob's transfer as a bar with bytes,
// rate and time left on a terminal, or as plain lines (every tenth of
// the way, and at the end) when the output is a file or a pipe.
// It is safe for concurrent use.
type progress struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool

	status string // the last status line shown

	// The blob being transferred ("" for none), and the last one.
	digest    string
	lastBlob  string
	bar       *progressbar.ProgressBar // tty only
	start     time.Time
	startAt   int64 // bytes already there when it started (a resume)
	shownTens int   // plain lines: the last tenth of the way shown
}

// newProgress writes to f, with bars when f is a terminal.
func newProgress(f *os.File) *progress {
	return &progress{w: f, tty: isTerminal(f)}
}

// update shows one status line of the server.
func (p *progress) update(r ollamaapi.ProgressResponse) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	isBlob := r.Digest != "" && r.Total > 0
	switch {
	case isBlob && r.Digest == p.digest && r.Status == p.status:
		p.setBlob(r)
		return nil
	case isBlob && r.Digest != p.lastBlob:
		p.endBlob()
		p.startBlob(r)
		p.setBlob(r)
		return nil
	}
	// A status of its own, or a new status about the last blob
	// ("verifying sha256 digest").
	if r.Status == p.status && p.digest == "" {
		return nil
	}
	p.endBlob()
	p.status = r.Status
	fmt.Fprintln(p.w, r.Status)
	return nil
}

// done ends the bar of the last blob, if any.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endBlob()
}

func (p *progress) startBlob(r ollamaapi.ProgressResponse) {
	p.digest, p.lastBlob, p.status = r.Digest, r.Digest, r.Status
	p.start, p.startAt, p.shownTens = time.Now(), r.Completed, -1
	if !p.tty {
		return
	}
	w := p.w
	p.bar = progressbar.NewOptions64(r.Total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(r.Status),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		progressbar.OptionSetRenderBlankState(true),
	)
}

func (p *progress) setBlob(r ollamaapi.ProgressResponse) {
	if p.bar != nil {
		if r.Total != p.bar.GetMax64() {
			p.bar.ChangeMax64(r.Total)
		}
		_ = p.bar.Set64(min(r.Completed, r.Total))
		return
	}
	tens := int(min(r.Completed, r.Total) * 10 / r.Total)
	if tens <= p.shownTens {
		return
	}
	p.shownTens = tens
	fmt.Fprintln(p.w, p.plainLine(r))
}

// plainLine is one line of a transfer for a file or pipe:
// "pulling 1a2b3c4d5e6f  50% 1.2 MB/2.4 MB 3.1 MB/s 1s left".
func (p *progress) plainLine(r ollamaapi.ProgressResponse) string {
	done := min(r.Completed, r.Total)
	line := fmt.Sprintf("%s %3d%% %s/%s", r.Status, done*100/r.Total, humanBytes(done), humanBytes(r.Total))
	el := time.Since(p.start)
	moved := done - p.startAt
	if el <= 0 || moved <= 0 {
		return line
	}
	perSec := float64(moved) / el.Seconds()
	line += fmt.Sprintf(" %s/s", humanBytes(int64(perSec)))
	if left := r.Total - done; left > 0 {
		line += fmt.Sprintf(" %s left", time.Duration(float64(left)/perSec*float64(time.Second)).Round(time.Second))
	}
	return line
}

func (p *progress) endBlob() {
	if p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Exit()
	}
	p.bar, p.digest = nil, ""
}

// countingReader reports the bytes read through it to a progress.
type countingReader struct {
	r      io.Reader
	n      int64
	report func(n int64)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	c.report(c.n)
	return n, err
}

// spinner shows msg with a spinner and the time spent on a terminal, and
// nothing elsewhere, until stop is called.
func spinner(f *os.File, msg string) (stop func()) {
	if !isTerminal(f) {
		return func() {}
	}
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(msg),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	var once sync.Once
	return func() { once.Do(func() { _ = bar.Finish() }) }
}
