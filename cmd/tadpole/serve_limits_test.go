package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// Serve flags the engine cannot take are refused at start-up, naming the
// flag and its range (issue 19: --threads 100000 made ggml start that many
// threads per graph).
func TestServeLimits(t *testing.T) {
	for _, tc := range []struct {
		parallel, numCtx, maxCtx, threads int
		flag                              string
	}{
		{0, 0, 0, 0, "--parallel"},
		{257, 0, 0, 0, "--parallel"},
		{4, 8, 0, 0, "--context-length"},
		{4, 1 << 21, 0, 0, "--context-length"},
		{4, 0, 1 << 30, 0, "--max-ctx"},
		{4, 0, 0, 100000, "--threads"},
		{4, 0, 0, -1, "--threads"},
	} {
		err := checkServeLimits(tc.parallel, tc.numCtx, tc.maxCtx, tc.threads)
		if err == nil || !strings.Contains(err.Error(), tc.flag) || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	if err := checkServeLimits(4, 4096, 32768, 2); err != nil {
		t.Fatal(err)
	}
}

// SIGHUP without TLS (systemctl reload) is logged and ignored: the server
// goes on serving.
func TestServeSIGHUPWithoutTLS(t *testing.T) {
	models := t.TempDir()
	abs, _ := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err := os.Symlink(abs, filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--models", models, "--data-dir", filepath.Join(t.TempDir(), "data"), "--threads", "1")
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the SIGHUP log line", func() bool { return strings.Contains(readFile(d.logs), "nothing to reload") })
	resp, err := http.Get(d.url + "/")
	if err != nil {
		t.Fatalf("server gone after SIGHUP: %v", err)
	}
	resp.Body.Close()
	select {
	case <-d.exited:
		t.Fatal("the server exited on SIGHUP")
	default:
	}
}

func readFile(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}
