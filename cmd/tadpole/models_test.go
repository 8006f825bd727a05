package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/registry/registrytest"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// tableRows splits a table into its header's fields and its rows (each
// row keyed by its first column).
func tableRows(t *testing.T, out string) (header []string, rows map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	rows = map[string]string{}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = l
		}
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing space in %q", l)
		}
	}
	return strings.Fields(lines[0]), rows
}

func TestList(t *testing.T) {
	ts := startServer(t)
	for _, verb := range []string{"list", "ls"} {
		r := ts.mustRun(t, verb)
		header, rows := tableRows(t, r.stdout)
		if strings.Join(header, " ") != "NAME ID SIZE MODIFIED" {
			t.Fatalf("header %q", header)
		}
		for name, file := range map[string]string{"bigram:latest": "bigram.gguf", "stories:latest": "stories.gguf"} {
			row, ok := rows[name]
			if !ok {
				t.Fatalf("no %s in\n%s", name, r.stdout)
			}
			fi, err := os.Stat(filepath.Join(ts.dir, file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(row, "    "+humanBytes(fi.Size())+"    ") || !strings.HasSuffix(row, " ago") {
				t.Errorf("row %q: want size %s and a time ago", row, humanBytes(fi.Size()))
			}
		}
	}
}

func TestPsAndStop(t *testing.T) {
	ts := startServer(t)
	r := ts.mustRun(t, "ps")
	if r.stdout != "NAME    ID    SIZE    PROCESSOR    CONTEXT    UNTIL\n" {
		t.Fatalf("nothing loaded: %q", r.stdout)
	}
	ts.mustRun(t, "run", "bigram", "Hi")
	r = ts.mustRun(t, "ps")
	header, rows := tableRows(t, r.stdout)
	if strings.Join(header, " ") != "NAME ID SIZE PROCESSOR CONTEXT UNTIL" || len(rows) != 1 {
		t.Fatalf("ps:\n%s", r.stdout)
	}
	for _, row := range rows {
		// Loaded with the server's keep_alive of a minute and 256 tokens
		// of context.
		if !regexp.MustCompile(`^bigram\S*\s.*\s+\d+(\.\d)? [KMG]B\s+100% CPU\s+256\s+(Less than a second|\d+ seconds|About a minute) from now$`).MatchString(row) {
			t.Errorf("row %q", row)
		}
	}

	r = ts.mustRun(t, "stop", "bigram")
	if r.stdout != "" || r.stderr != "" {
		t.Errorf("stop printed %s", r)
	}
	testkit.Eventually(t, 30*time.Second, "ps to list no model after stop", func() bool {
		r = ts.mustRun(t, "ps")
		return strings.Count(r.stdout, "\n") == 1
	})
	r = ts.run(t, "", "stop", "bigram")
	if r.code != 1 || !strings.Contains(r.stderr, `couldn't find model "bigram" to stop`) {
		t.Fatalf("stop of an unloaded model: %s", r)
	}
}

func TestShow(t *testing.T) {
	ts := startServer(t)
	r := ts.mustRun(t, "show", "bigram")
	for _, want := range []string{"  Model\n", "    architecture    ", "llama", "context length", "512"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in\n%s", want, r.stdout)
		}
	}
	if r := ts.mustRun(t, "show", "--template", "bigram"); !strings.Contains(r.stdout, "<|im_start|>") {
		t.Errorf("template:\n%s", r.stdout)
	}
	if r := ts.mustRun(t, "show", "--modelfile", "bigram"); !strings.Contains(r.stdout, "FROM ") {
		t.Errorf("modelfile:\n%s", r.stdout)
	}
	r = ts.run(t, "", "show", "--template", "--system", "bigram")
	if r.code != 1 || !strings.Contains(r.stderr, "only one of") {
		t.Errorf("two parts: %s", r)
	}
	r = ts.run(t, "", "show", "nosuch")
	if r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("missing model: %s", r)
	}
}

// TestCreateCopyRemove creates a model from a Modelfile whose FROM is a
// local GGUF file (uploaded as a blob), then copies and removes it.
func TestCreateCopyRemove(t *testing.T) {
	ts := startServer(t)
	dir := t.TempDir()
	if err := testmodels.WriteBigram(filepath.Join(dir, "weights.gguf")); err != nil {
		t.Fatal(err)
	}
	modelfile := filepath.Join(dir, "Modelfile")
	write := func(text string) {
		if err := os.WriteFile(modelfile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# a test model\nFROM ./weights.gguf\nPARAMETER temperature 0\nSYSTEM \"\"\"You are a test.\nFROM here on, be brief.\"\"\"\n")

	r := ts.mustRun(t, "create", "mine", "-f", modelfile)
	for _, want := range []string{"hashing weights.gguf", "copying weights.gguf", "success\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no %q in\n%s", want, r.stderr)
		}
	}
	// The same file again: the server has the blob, nothing is uploaded.
	r = ts.mustRun(t, "create", "mine2", "-f", modelfile)
	if !strings.Contains(r.stderr, "using existing blob") || strings.Contains(r.stderr, "copying") {
		t.Errorf("second create:\n%s", r.stderr)
	}
	if r := ts.mustRun(t, "show", "--system", "mine"); r.stdout != "You are a test.\nFROM here on, be brief.\n" {
		t.Errorf("system %q", r.stdout)
	}
	if r := ts.mustRun(t, "show", "--parameters", "mine"); !strings.Contains(r.stdout, "temperature") {
		t.Errorf("parameters %q", r.stdout)
	}
	if r := ts.mustRun(t, "run", "mine", "Hi"); r.stdout != testmodels.BigramAnswer+"\n\n" {
		t.Errorf("run mine: %s", r)
	}

	// FROM a model of the server.
	write("FROM bigram\nSYSTEM Be kind.\n")
	ts.mustRun(t, "create", "kind", "-f", modelfile)
	if r := ts.mustRun(t, "show", "--system", "kind"); r.stdout != "Be kind.\n" {
		t.Errorf("system of kind: %q", r.stdout)
	}

	r = ts.mustRun(t, "cp", "mine", "copy1")
	if r.stdout != "copied 'mine' to 'copy1'\n" {
		t.Errorf("cp: %s", r)
	}
	if r := ts.mustRun(t, "run", "copy1", "Hi"); r.stdout != testmodels.BigramAnswer+"\n\n" {
		t.Errorf("run copy1: %s", r)
	}
	_, rows := tableRows(t, ts.mustRun(t, "list").stdout)
	for _, name := range []string{"mine:latest", "mine2:latest", "kind:latest", "copy1:latest"} {
		if _, ok := rows[name]; !ok {
			t.Errorf("list lacks %s: %v", name, rows)
		}
	}

	r = ts.mustRun(t, "rm", "copy1", "mine", "mine2", "kind")
	if r.stdout != "deleted 'copy1'\ndeleted 'mine'\ndeleted 'mine2'\ndeleted 'kind'\n" {
		t.Errorf("rm: %s", r)
	}
	_, rows = tableRows(t, ts.mustRun(t, "list").stdout)
	if len(rows) != 3 {
		t.Errorf("after rm: %v", rows)
	}
	if r := ts.run(t, "", "rm", "mine"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("rm again: %s", r)
	}

	// A FROM path that names no file is the client's error.
	write("FROM ./missing.gguf\n")
	if r := ts.run(t, "", "create", "bad", "-f", modelfile); r.code != 1 || !strings.Contains(r.stderr, "FROM ./missing.gguf") {
		t.Errorf("missing file: %s", r)
	}
}

// TestPullPush pulls a model from a local registry, runs it, and pushes a
// copy back.
func TestPullPush(t *testing.T) {
	ts := startServer(t)
	reg := registrytest.New()
	defer reg.Close()
	gguf, err := os.ReadFile(filepath.Join(ts.dir, "bigram.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	reg.PublishModel("library/tiny", "latest", gguf, "")
	digest := digestOf(gguf)
	name := reg.Host() + "/library/tiny:latest"

	r := ts.mustRun(t, "pull", "--insecure", name)
	// Not a terminal: plain lines (the server reports a blob's bytes at
	// most ten times a second, so a small one may show only its end).
	short, size := digest[7:19], humanBytes(int64(len(gguf)))
	for _, want := range []string{"pulling manifest\n", "\npulling " + short + " 100% " + size + "/" + size, "\nverifying sha256 digest\n", "\nwriting manifest\nsuccess\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no %q in\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(ts.mustRun(t, "list").stdout, "tiny") {
		t.Errorf("list lacks the pulled model")
	}
	if r := ts.mustRun(t, "run", name, "Hi"); r.stdout != testmodels.BigramAnswer+"\n\n" {
		t.Errorf("run the pulled model: %s", r)
	}
	if r := ts.run(t, "", "pull", "--insecure", reg.Host()+"/library/nosuch"); r.code != 1 || !strings.HasPrefix(r.stderr, "pulling manifest\ntadpole: ") {
		t.Errorf("pull of a missing model: %s", r)
	}

	// On a terminal: a bar per blob.
	reg.PublishModel("library/tiny", "v2", gguf, "")
	cmd := exec.Command(tadpole(t), "pull", "--insecure", reg.Host()+"/library/tiny:v2")
	cmd.Env = ts.env()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	screen := &syncBuffer{}
	go io.Copy(screen, f)
	if err := wait(t, cmd); err != nil {
		t.Fatalf("pull on a terminal: %v\n%s", err, screen)
	}
	waitFor(t, screen, func(s string) bool { return strings.Contains(s, "success") }, "success")
	bar := regexp.MustCompile(`pulling ` + short + ` 100% \|█+\| \(` + regexp.QuoteMeta(strings.TrimSuffix(size, " MB")) + `/` + regexp.QuoteMeta(size) + `, `)
	if !bar.MatchString(screen.String()) {
		t.Errorf("no progress bar in %q", screen)
	}

	// run pulls a model the server lacks.
	reg.PublishModel("library/auto", "latest", gguf, "")
	r = ts.mustRun(t, "run", "--insecure", reg.Host()+"/library/auto", "Hi")
	if r.stdout != testmodels.BigramAnswer+"\n\n" || !strings.Contains(r.stderr, "pulling manifest\n") || !strings.HasSuffix(r.stderr, "success\n") {
		t.Errorf("run of a model to pull: %s", r)
	}

	pushed := reg.Host() + "/test/pushed:v1"
	ts.mustRun(t, "cp", "bigram", pushed)
	r = ts.mustRun(t, "push", "--insecure", pushed)
	if !strings.Contains(r.stderr, "success\n") {
		t.Errorf("push:\n%s", r.stderr)
	}
	reg.Mu.Lock()
	defer reg.Mu.Unlock()
	if reg.Manifests["test/pushed:v1"] == nil || reg.Blobs[digest] == nil {
		t.Errorf("the registry lacks the pushed model")
	}
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
