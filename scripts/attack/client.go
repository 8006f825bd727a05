package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// hc keeps no idle connection beyond the attacks' own: every test of the
// server's connection handling uses raw sockets instead.
var hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Second}}

// result is one HTTP exchange.
type result struct {
	status int // 0: no answer (err says why)
	body   []byte
	took   time.Duration
	err    error
}

// call sends body (nil, []byte, string, or a value to marshal) with the
// key as a bearer token.
func call(ctx context.Context, method, url, key string, body any) result {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return result{err: err}
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return result{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return result{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, body: b, took: time.Since(start), err: err}
}

// post is an inference-key POST of a JSON body to the server.
func (s *server) post(ctx context.Context, path string, body any) result {
	return call(ctx, "POST", s.url+path, inferenceKey, body)
}

// field reads a number from a JSON answer by a dotted path.
func field(b []byte, path string) float64 {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return -1
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return -1
		}
		v = m[k]
	}
	f, ok := v.(float64)
	if !ok {
		return -1
	}
	return f
}

// str reads a string from a JSON answer by a dotted path.
func str(b []byte, path string) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// staller is the other client: it streams long greedy generations from
// one model, one after another, and keeps the longest gap between two
// NDJSON lines (across requests too: the gap from the last line of one
// to the first of the next includes its queueing and prefill).
type staller struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	last   time.Time
	gap    time.Duration
	lines  int
	errs   []string
}

// startStaller starts the other client on model and waits for its first
// line (up to a minute: the model may load).
func (s *server) startStaller(model string) *staller {
	ctx, cancel := context.WithCancel(context.Background())
	st := &staller{cancel: cancel, done: make(chan struct{})}
	first := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(st.done)
		for ctx.Err() == nil {
			body := fmt.Sprintf(`{"model":%q,"prompt":"Once upon a time","options":{"temperature":0,"num_predict":100000}}`, model)
			req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/api/generate", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+inferenceKey)
			resp, err := hc.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					st.fail(err.Error())
					time.Sleep(100 * time.Millisecond)
				}
				continue
			}
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				st.fail(fmt.Sprintf("%d %.200s", resp.StatusCode, b))
				time.Sleep(100 * time.Millisecond)
				continue
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				now := time.Now()
				st.mu.Lock()
				if !st.last.IsZero() {
					st.gap = max(st.gap, now.Sub(st.last))
				}
				st.last = now
				st.lines++
				st.mu.Unlock()
				once.Do(func() { close(first) })
				if strings.Contains(sc.Text(), `"error"`) {
					st.fail(sc.Text())
				}
			}
			if err := sc.Err(); err != nil && ctx.Err() == nil {
				st.fail(err.Error())
			}
			resp.Body.Close()
		}
	}()
	select {
	case <-first:
	case <-time.After(time.Minute):
		st.fail("no first line within a minute")
	}
	// The measure starts now, not at the model's load.
	st.mu.Lock()
	st.gap, st.last = 0, time.Now()
	st.mu.Unlock()
	return st
}

func (st *staller) fail(msg string) {
	st.mu.Lock()
	st.errs = append(st.errs, msg)
	st.mu.Unlock()
}

// end stops the client and returns its longest gap (counting the time
// since its last line) and its errors.
func (st *staller) end() (time.Duration, []string) {
	st.mu.Lock()
	gap := max(st.gap, time.Since(st.last))
	st.mu.Unlock()
	st.cancel()
	<-st.done
	return gap, st.errs
}
