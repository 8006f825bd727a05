package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {999, "999 B"}, {1000, "1 KB"}, {1500, "1.5 KB"}, {1_234_567, "1.2 MB"},
		{12_345_678, "12 MB"}, {4_700_000_000, "4.7 GB"}, {27_000_000_000, "27 GB"}, {2e12, "2 TB"},
	} {
		if got := humanBytes(tc.n); got != tc.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestHumanTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "Never"},
		{now.Add(-300 * time.Millisecond), "Less than a second ago"},
		{now.Add(-time.Second), "1 second ago"},
		{now.Add(-42 * time.Second), "42 seconds ago"},
		{now.Add(-90 * time.Second), "About a minute ago"},
		{now.Add(-2 * time.Minute), "2 minutes ago"},
		{now.Add(-70 * time.Minute), "About an hour ago"},
		{now.Add(-5 * time.Hour), "5 hours ago"},
		{now.Add(-72 * time.Hour), "3 days ago"},
		{now.Add(-21 * 24 * time.Hour), "3 weeks ago"},
		{now.Add(-90 * 24 * time.Hour), "3 months ago"},
		{now.Add(-3 * 365 * 24 * time.Hour), "3 years ago"},
		{now.Add(4*time.Minute + 59*time.Second), "4 minutes from now"},
		{time.Date(2318, 1, 1, 0, 0, 0, 0, time.UTC), "Forever"},
	} {
		if got := humanTime(tc.t, now, "Never"); got != tc.want {
			t.Errorf("humanTime(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestTables(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	err := writeList(&b, []ollamaapi.ListModel{
		{Name: "llama3.2:latest", Digest: "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72", Size: 2_019_393_189, ModifiedAt: now.Add(-2 * time.Minute)},
		{Name: "stories:latest", Digest: "sha256:0123456789abcdef", Size: 1_185_376, ModifiedAt: now.Add(-3 * 24 * time.Hour)},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME               ID              SIZE      MODIFIED\n" +
		"llama3.2:latest    a80c4f17acd5    2.0 GB    2 minutes ago\n" +
		"stories:latest     0123456789ab    1.2 MB    3 days ago\n"
	if b.String() != want {
		t.Errorf("list:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	err = writePs(&b, []ollamaapi.ProcessModel{
		{Name: "big:latest", Digest: "sha256:fedcba9876543210", Size: 48_000_000_000, SizeVRAM: 24_000_000_000, ContextLength: 8192, ExpiresAt: now.Add(4*time.Minute + 30*time.Second)},
		{Name: "gpu:latest", Size: 5_400_000_000, SizeVRAM: 5_400_000_000, ContextLength: 4096, ExpiresAt: time.Date(2318, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Name: "stories:latest", Size: 6_300_000, ContextLength: 256, ExpiresAt: now.Add(-time.Second),
			Tadpole: &ollamaapi.ProcessExtras{Processor: "100% CPU"}},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	want = "" +
		"NAME              ID              SIZE      PROCESSOR          CONTEXT    UNTIL\n" +
		"big:latest        fedcba987654    48 GB     50%/50% CPU/GPU    8192       4 minutes from now\n" +
		"gpu:latest                        5.4 GB    100% GPU           4096       Forever\n" +
		"stories:latest                    6.3 MB    100% CPU           256        Stopping...\n"
	if b.String() != want {
		t.Errorf("ps:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWordWrap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		width  int
		pieces []string
		want   string
	}{
		{"fits", 20, []string{"Hello", " from", " Tadpole."}, "Hello from Tadpole."},
		{"wraps at a space", 10, []string{"Hello", " from", " Tadpole."}, "Hello from\nTadpole."},
		{"word split across pieces", 8, []string{"He", "llo wo", "rld again"}, "Hello\nworld\nagain"},
		{"newline resets the line", 10, []string{"one two\nthree four five"}, "one two\nthree four\nfive"},
		{"long word stays whole", 4, []string{"a verylongword b"}, "a\nverylongword\nb"},
		{"double space kept", 20, []string{"a  b"}, "a  b"},
		{"trailing space flushed", 20, []string{"end "}, "end "},
		{"no width: as is", 0, []string{"Hello", " from", " Tadpole."}, "Hello from Tadpole."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			w := &wordWrapper{w: &b, width: tc.width}
			for _, p := range tc.pieces {
				w.WriteString(p)
			}
			w.Flush()
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestProgressPlainLines(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b}
	for _, r := range []ollamaapi.ProgressResponse{
		{Status: "pulling manifest"},
		{Status: "pulling manifest"}, // repeated: shown once
		{Status: "pulling 0123456789ab", Digest: "sha256:0123456789ab", Total: 1000},
		{Status: "pulling 0123456789ab", Digest: "sha256:0123456789ab", Total: 1000, Completed: 50},
		{Status: "pulling 0123456789ab", Digest: "sha256:0123456789ab", Total: 1000, Completed: 120},
		{Status: "pulling 0123456789ab", Digest: "sha256:0123456789ab", Total: 1000, Completed: 1000},
		{Status: "verifying sha256 digest", Digest: "sha256:0123456789ab", Total: 1000, Completed: 1000},
		{Status: "pulling ffffffffffff", Digest: "sha256:ffffffffffff", Total: 10, Completed: 10},
		{Status: "writing manifest"},
		{Status: "success"},
	} {
		p.update(r)
	}
	p.done()
	var got []string
	rate := regexp.MustCompile(` [\d.]+ [KMGT]?B/s( \S+ left)?$`)
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		// Drop the rate and time left, which depend on the clock.
		got = append(got, rate.ReplaceAllString(l, ""))
	}
	want := []string{
		"pulling manifest",
		"pulling 0123456789ab   0% 0 B/1 KB",
		"pulling 0123456789ab  12% 120 B/1 KB",
		"pulling 0123456789ab 100% 1 KB/1 KB",
		"verifying sha256 digest",
		"pulling ffffffffffff 100% 10 B/10 B",
		"writing manifest",
		"success",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLocalFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"model.gguf", "adapter.bin", "llama3"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "weights"), 0o755)
	abs := func(f string) string { return filepath.Join(dir, f) }
	for _, tc := range []struct {
		name, text string
		want       []fileRef
		err        string
	}{
		{"relative", "FROM ./model.gguf\n", []fileRef{{0, "FROM", abs("model.gguf")}}, ""},
		{"absolute, lower case, tab", "from\t" + abs("model.gguf"), []fileRef{{0, "from", abs("model.gguf")}}, ""},
		{"quoted", `FROM "model.gguf"`, []fileRef{{0, "FROM", abs("model.gguf")}}, ""},
		{"adapter", "FROM llama3.2\nADAPTER ./adapter.bin", []fileRef{{1, "ADAPTER", abs("adapter.bin")}}, ""},
		{"a file named like a model", "FROM llama3", []fileRef{{0, "FROM", abs("llama3")}}, ""},
		{"model names", "FROM llama3.2:1b\nFROM hf.co/x/y:Q4_0\nFROM @sha256:abc", nil, ""},
		{"inside a multi-line string", "FROM llama3.2\nSYSTEM \"\"\"\nFROM ./model.gguf\n\"\"\"\n", nil, ""},
		{"comment", "# FROM ./model.gguf\nFROM llama3.2", nil, ""},
		{"missing file", "FROM ./nope.gguf", nil, "FROM ./nope.gguf"},
		{"missing .gguf", "FROM nope.gguf", nil, "FROM nope.gguf"},
		{"directory", "FROM ./weights", nil, "a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := localFiles(tc.text, dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestSetParameter(t *testing.T) {
	opts := map[string]any{}
	for _, tc := range []struct {
		name   string
		values []string
		err    string
	}{
		{"temperature", []string{"0.2"}, ""},
		{"num_ctx", []string{"4096"}, ""},
		{"use_mmap", []string{"false"}, ""},
		{"stop", []string{`"###"`, "<|im_end|>"}, ""},
		{"stop", []string{"User:"}, ""},
		{"colour", []string{"red"}, `unknown parameter "colour"`},
		{"seed", nil, "needs a value"},
		{"num_ctx", []string{"lots"}, "not an integer"},
		{"top_k", []string{"99999999999"}, "out of range"},
		{"temperature", []string{"NaN"}, "not a number"},
	} {
		err := setParameter(opts, tc.name, tc.values)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s %v: err %v, want %q", tc.name, tc.values, err, tc.err)
		}
	}
	want := map[string]any{"temperature": 0.2, "num_ctx": 4096, "use_mmap": false,
		"stop": []string{"###", "<|im_end|>", "User:"}}
	if !reflect.DeepEqual(opts, want) {
		t.Errorf("options %#v, want %#v", opts, want)
	}
}

func TestServeRefusesBadEnvironment(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"TADPOLE_POLL", "500", "TADPOLE_POLL"},
		{"TADPOLE_POLL", "fast", "TADPOLE_POLL"},
		{"TADPOLE_MAX_STREAMS", "many", "not an integer"},
		{"TADPOLE_WRITE_TIMEOUT", "soon", "not a duration"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			envErrors = nil
			t.Cleanup(func() { envErrors = nil })
			t.Setenv(tc.name, tc.value)
			_, err := parseServeFlags(nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
		})
	}
	envErrors = nil
	if _, err := parseServeFlags(nil); err != nil {
		t.Fatalf("clean environment: %v", err)
	}
}
