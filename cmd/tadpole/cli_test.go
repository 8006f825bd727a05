package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
)

func TestHelpAndUsage(t *testing.T) {
	env := binEnv()
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // substrings
		stderr string
	}{
		{[]string{"help"}, 0, "  rm, delete  remove models\n", ""},
		{[]string{"--help"}, 0, "  completion  print a shell completion script\n", ""},
		{[]string{"help", "run"}, 0, "tadpole run [flags] MODEL [PROMPT...]", ""},
		{[]string{"run", "--help"}, 0, "--parameter stringArray", ""},
		{[]string{"create", "-h"}, 0, "-f, --file string", ""},
		{[]string{"help", "serve"}, 0, "", "Usage: tadpole serve [flags]"},
		{[]string{}, 2, "", "Verbs:"},
		{[]string{"bogus"}, 2, "", `unknown command "bogus"`},
		{[]string{"cp", "one"}, 2, "", "tadpole cp: needs SOURCE DESTINATION"},
		{[]string{"stop", "a", "b"}, 2, "", `too many arguments: ["b"]`},
		{[]string{"list", "--bogus"}, 2, "", "unknown flag: --bogus"},
		{[]string{"completion", "tcsh"}, 1, "", `no completion for "tcsh"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runBin(t, env, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("want exit %d, %q on stdout and %q on stderr: %s", tc.code, tc.stdout, tc.stderr, r)
			}
		})
	}
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestNoServer(t *testing.T) {
	addr := closedPort(t)
	env := binEnv("TADPOLE_HOST=" + addr)
	want := "could not connect to a running Tadpole server at http://" + addr + "; start one with `tadpole serve`\n"
	for _, args := range [][]string{{"list"}, {"ps"}, {"run", "bigram", "Hi"}, {"pull", "x"}, {"show", "x"}} {
		r := runBin(t, env, "", args...)
		if r.code != 1 || r.stderr != "tadpole: "+want {
			t.Errorf("%v: %s", args, r)
		}
	}
	// version still prints the client's.
	r := runBin(t, env, "", "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "client version: ") || r.stderr != "Warning: "+want {
		t.Errorf("version: %s", r)
	}
	r = runBin(t, binEnv("TADPOLE_HOST=ftp://x"), "", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "TADPOLE_HOST: invalid host") {
		t.Errorf("bad TADPOLE_HOST: %s", r)
	}
}

func TestVersion(t *testing.T) {
	ts := startServer(t)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := ts.mustRun(t, args...)
		if !regexp.MustCompile(`(?m)^client version: \S+\nserver version: \S+ \(http://` + regexp.QuoteMeta(ts.host) + `\)\nllama\.cpp: ` + regexp.QuoteMeta(engine.LlamaRelease()) + ` \(commit \S+, from .+\)\ncpu backend built with: `).MatchString(r.stdout) {
			t.Errorf("%v:\n%s", args, r.stdout)
		}
	}
	// TADPOLE_HOST as a URL works too.
	r := runBin(t, binEnv("TADPOLE_HOST=http://"+ts.host+"/"), "", "version")
	if r.code != 0 || !strings.Contains(r.stdout, "server version: ") {
		t.Errorf("URL host: %s", r)
	}
}

func TestBench(t *testing.T) {
	ts := startServer(t)
	r := ts.mustRun(t, "bench", "bigram", "-c", "2", "-n", "4", "--num-predict", "8")
	for _, re := range []string{
		`(?m)^model bigram loaded in \S+$`,
		`(?m)^requests:\s+4 \(2 at a time\), 0 failed$`,
		`(?m)^tokens generated:\s+\d+ \(\d+\.\d per request\)$`,
		`(?m)^aggregate rate:\s+\d+\.\d\d tokens/s$`,
		`(?m)^mean stream rate:\s+\d+\.\d\d tokens/s$`,
		`(?m)^time to first token: \S+ mean, \S+ max$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("no %s in\n%s", re, r.stdout)
		}
	}
	if r := ts.run(t, "", "bench", "nosuch"); r.code != 1 {
		t.Errorf("bench of a missing model: %s", r)
	}
}

// TestCompletion loads the bash and fish scripts into their shells and
// asks them to complete as a person pressing Tab would; zsh's script is
// checked for syntax. A shell that is not installed is skipped.
func TestCompletion(t *testing.T) {
	ts := startServer(t)
	// The scripts call `tadpole`: put the binary on PATH.
	env := append(ts.env(), "PATH="+filepath.Dir(tadpole(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	cases := []struct {
		line string // the command line; its last word is completed
		want string
	}{
		{"tadpole ru", "run"},
		{"tadpole li", "list"},
		{"tadpole run --verb", "--verbose"},
		{"tadpole create --fi", "--file"},
		{"tadpole serve --mod", "--models"},
		{"tadpole completion f", "fish"},
		{"tadpole help cr", "create"},
		{"tadpole run big", "bigram:latest"},
		{"tadpole rm sto", "stories:latest"},
	}
	shells := map[string]func(script, line string) []string{
		"bash": func(script, line string) []string {
			words := strings.Fields(line)
			return []string{"-c", fmt.Sprintf("%s\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_tadpole\necho \"${COMPREPLY[*]}\"\n",
				script, strings.Join(words, " "), len(words)-1)}
		},
		"fish": func(script, line string) []string {
			return []string{"-c", script + "\nfor c in (complete -C '" + line + "'); echo $c | string split -f1 \\t; end | string join ' '; true\n"}
		},
		"zsh": nil,
	}
	for shell, argv := range shells {
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("no %s: its script is not checked", shell)
			continue
		}
		script := ts.mustRun(t, "completion", shell).stdout
		f := filepath.Join(t.TempDir(), "completion."+shell)
		if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(path, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
		if argv == nil {
			continue
		}
		for _, tc := range cases {
			t.Run(shell+" "+tc.line, func(t *testing.T) {
				cmd := exec.Command(path, argv(script, tc.line)...)
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != tc.want {
					t.Fatalf("completed to %q (%v), want %q", out, err, tc.want)
				}
			})
		}
	}
}
