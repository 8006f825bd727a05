package flight

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// die ends l as a death would: the file is left as it is, not marked
// clean (the lock goes with the descriptor, as it does with a process).
func die(l *Log) {
	live.Delete(l)
	l.io.Lock()
	l.closed = true
	unmap(l.mem) // the mapping holds the file, and its lock, open
	l.f.Close()
	l.io.Unlock()
}

// The requests a process was serving when it died are reported by the
// next Open, with their phase, model and key, and kept in a crash file;
// a request that ended is not among them.
func TestReportAfterDeath(t *testing.T) {
	dir := t.TempDir()
	l, rep, err := Open(dir)
	if err != nil || rep != nil {
		t.Fatalf("first open: %v, %+v", err, rep)
	}
	a := l.Begin("req-a", "POST /api/generate", 2200)
	a.SetKey("key1")
	a.Mark(Queued, "stories:latest")
	a.Mark(Rendering, "")
	b := l.Begin("req-b", "GET /api/tags", -1)
	job := l.Begin("job-c", "job ollama", 80)
	job.Mark(Decode, "stories")
	b.End()
	if got := len(l.Entries()); got != 2 {
		t.Fatalf("in flight: %d, want 2", got)
	}
	die(l)

	l, rep, err = Open(dir)
	if err != nil || rep == nil {
		t.Fatalf("open after the death: %v, %+v", err, rep)
	}
	defer l.Close()
	if rep.PID != os.Getpid() || len(rep.Requests) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	got := map[string]Entry{}
	for _, e := range rep.Requests {
		got[e.ID] = e
	}
	if e := got["req-a"]; e.Route != "POST /api/generate" || e.Model != "stories:latest" || e.Key != "key1" || e.Phase != Rendering || e.Body != 2200 || e.Start.IsZero() {
		t.Errorf("req-a: %+v", e)
	}
	if e := got["job-c"]; e.Route != "job ollama" || e.Phase != Decode || e.Model != "stories" {
		t.Errorf("job-c: %+v", e)
	}
	// The crash file holds the same report.
	files, _ := filepath.Glob(filepath.Join(dir, "crash-*.json"))
	if len(files) != 1 || rep.File != files[0] {
		t.Fatalf("crash files %v, report says %q", files, rep.File)
	}
	var saved Report
	if b, err := os.ReadFile(files[0]); err != nil || json.Unmarshal(b, &saved) != nil || len(saved.Requests) != 2 || saved.PID != rep.PID {
		t.Fatalf("crash file: %v %+v", err, saved)
	}
	// The new process starts a fresh list: a clean stop leaves no report.
	if n := len(l.Entries()); n != 0 {
		t.Fatalf("fresh list has %d", n)
	}
	l.Begin("req-d", "POST /api/chat", 1).Mark(Prefill, "m")
	l.Close()
	l, rep, err = Open(dir)
	if err != nil || rep != nil {
		t.Fatalf("open after a clean stop: %v, %+v", err, rep)
	}
	l.Close()
}

// A second server on the same data directory keeps its list in memory
// rather than write the first one's file.
func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	a, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "in use") || b == nil || b.f != nil {
		t.Fatalf("second open: %v", err)
	}
	b.Begin("x", "GET /", 0)
	if len(b.Entries()) != 1 {
		t.Fatal("the memory list lost the request")
	}
	b.Close()
}

// Strings a client chose (a model name, a path) are escaped and cut to
// fit a slot, so every slot stays one valid JSON object.
func TestHostileStrings(t *testing.T) {
	dir := t.TempDir()
	l, _, _ := Open(dir)
	model := "\"},{\"id\":\"forged\"\n\x00\xff" + strings.Repeat("é", 500)
	s := l.Begin(strings.Repeat("i", 1000), "POST /"+strings.Repeat("\\", 300), 1)
	s.Mark(Decode, model)
	die(l)
	l, rep, err := Open(dir)
	if err != nil || rep == nil || len(rep.Requests) != 1 {
		t.Fatalf("%v %+v", err, rep)
	}
	defer l.Close()
	e := rep.Requests[0]
	if !strings.HasPrefix(model, strings.ReplaceAll(e.Model, "\uFFFD", "\xff")) || len(e.Model) < 20 || !strings.HasPrefix(e.ID, "iiii") || e.Phase != Decode {
		t.Fatalf("entry: %+v", e)
	}
}

// More requests at once than the file has slots are counted, not named,
// and the report says some are missing.
func TestOverflow(t *testing.T) {
	dir := t.TempDir()
	l, _, _ := Open(dir)
	for i := range MaxSlots + 3 {
		if s := l.Begin("r", "GET /", 0); (s == nil) != (i >= MaxSlots) {
			t.Fatalf("request %d: slot %v", i, s)
		}
	}
	if l.overflow.Load() != 3 {
		t.Fatalf("overflow %d", l.overflow.Load())
	}
	die(l)
	l, rep, _ := Open(dir)
	defer l.Close()
	if rep == nil || !rep.Overflow || len(rep.Requests) != MaxSlots {
		t.Fatalf("report: overflow %v, %d requests", rep != nil && rep.Overflow, len(rep.Requests))
	}
}

// The cost of recording one request: begin, key, four phases, end (six
// slot writes), into the mapped file and, for comparison, with pwrite
// (the fallback where there is no mmap).
func BenchmarkRequest(b *testing.B) {
	for _, mapped := range []bool{true, false} {
		name := "mmap"
		if !mapped {
			name = "pwrite"
		}
		b.Run(name, func(b *testing.B) {
			l, _, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			if !mapped {
				unmap(l.mem)
				l.mem = nil
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					s := l.Begin("0123456789abcdef0123456789abcdef", "POST /api/generate", 2200)
					s.SetKey("key-1")
					s.Mark(Queued, "stories:latest")
					s.Mark(Rendering, "")
					s.Mark(Prefill, "")
					s.Mark(Decode, "")
					s.End()
				}
			})
		})
	}
}
