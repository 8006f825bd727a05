package flight

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Report is what a process that died left in the file: who it was and
// the requests it was serving.
type Report struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Found is when the next process read the file (the death came
	// before).
	Found time.Time `json:"found"`
	// Overflow: more requests than MaxSlots were in flight at some
	// moment, so some may be missing.
	Overflow bool    `json:"overflow,omitempty"`
	Requests []Entry `json:"requests"`
	// File is where the report was kept (crash-<time>.json).
	File string `json:"-"`
}

// header is the file's first slot.
type header struct {
	Version  int       `json:"tadpole_inflight"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	Clean    bool      `json:"clean"`
	Overflow bool      `json:"overflow"`
}

// Open opens the in-flight file in dir (creating dir), reporting first
// what a previous process that did not shut down cleanly left there:
// its requests are logged as an error and kept in dir/crash-<time>.json
// (the returned Report; nil after a clean shutdown or a first start).
// The log is always usable: if the file cannot be opened, or another
// process holds it, it keeps the list in memory only and the error says
// why.
func Open(dir string) (*Log, *Report, error) {
	l := Memory()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return l, nil, fmt.Errorf("in-flight file: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return l, nil, fmt.Errorf("in-flight file: %w", err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return l, nil, fmt.Errorf("in-flight file %s: %w: requests in flight are kept in memory only", path, err)
	}
	rep, rerr := read(f)
	if rep != nil {
		rep.File, err = save(dir, rep)
		logReport(rep, err)
	}
	// A fresh file of zeros (sparse), every slot empty.
	const size = (MaxSlots + 1) * slotSize
	if err := f.Truncate(0); err == nil {
		err = f.Truncate(size)
	}
	if err != nil {
		f.Close()
		return l, rep, fmt.Errorf("in-flight file: %w", err)
	}
	l.f = f
	l.mem, _ = mapFile(f, size) // nil: pwrite
	l.writeHeader(false)
	if rerr != nil {
		return l, rep, fmt.Errorf("in-flight file %s left by the previous process: %w", path, rerr)
	}
	return l, rep, nil
}

// read parses the previous process's file: nil if it shut down cleanly
// (or there was none).
func read(f *os.File) (*Report, error) {
	// The file is at most MaxSlots+1 slots; anything longer is not ours.
	data, err := io.ReadAll(io.LimitReader(f, (MaxSlots+1)*slotSize))
	if err != nil || len(data) == 0 {
		return nil, err
	}
	var h header
	if len(data) < slotSize || json.Unmarshal(bytes.TrimRight(data[:slotSize], " \n\x00"), &h) != nil || h.Version != 1 {
		return nil, errors.New("not an in-flight file (ignored)")
	}
	if h.Clean {
		return nil, nil
	}
	rep := &Report{PID: h.PID, Started: h.Started, Found: time.Now().UTC(), Overflow: h.Overflow, Requests: []Entry{}}
	var bad int
	for off := slotSize; off+slotSize <= len(data); off += slotSize {
		raw := bytes.TrimRight(data[off:off+slotSize], " \n\x00")
		if len(raw) == 0 {
			continue
		}
		var e Entry
		if json.Unmarshal(raw, &e) != nil {
			bad++ // torn by a write the death interrupted
			continue
		}
		rep.Requests = append(rep.Requests, e)
	}
	if bad > 0 {
		return rep, fmt.Errorf("%d slots could not be read", bad)
	}
	return rep, nil
}

// save keeps the report as dir/crash-<time>.json.
func save(dir string, rep *Report) (string, error) {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, "crash-"+rep.Found.Format("20060102T150405.000Z")+".json")
	if err := os.WriteFile(name, append(b, '\n'), 0o600); err != nil {
		return "", err
	}
	return name, nil
}

// logReport logs the previous process's death: the requests it was
// serving, one line, so that log search finds them together.
func logReport(rep *Report, saveErr error) {
	lines := make([]string, len(rep.Requests))
	for i, e := range rep.Requests {
		lines[i] = e.String()
	}
	args := []any{"pid", rep.PID, "started", rep.Started.Format(time.RFC3339), "requests_in_flight", len(rep.Requests)}
	if rep.Overflow {
		args = append(args, "some_not_recorded", true)
	}
	if saveErr != nil {
		args = append(args, "report_error", saveErr.Error())
	} else {
		args = append(args, "report", rep.File)
	}
	if len(rep.Requests) == 0 {
		slog.Warn("the previous process did not shut down cleanly; no request was in flight", args...)
		return
	}
	args = append(args, "in_flight", strings.Join(lines, "; "))
	slog.Error("FATAL: the previous process died with these requests in flight", args...)
}
