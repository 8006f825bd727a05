package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/engine/runner"
)

// The prompt cache's and the drafting's flags: worst values are refused
// naming the flag; 0 turns each off; auto sizes the RAM tier.
func TestDecodeFlags(t *testing.T) {
	parse := func(args ...string) *decodeFlags {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f := addDecodeFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, bad := range [][]string{{"--draft-max", "-1"}, {"--draft-max", "65"}, {"--draft-max", "2147483647"}} {
		if _, err := parse(bad...).draft(); err == nil || !strings.Contains(err.Error(), "--draft-max") {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if n, err := parse("--draft-max", "0").draft(); err != nil || n >= 0 {
		t.Errorf("--draft-max 0: %d %v, want off (negative)", n, err)
	}
	if n, err := parse().draft(); err != nil || n != runner.DefaultDraftMax {
		t.Errorf("default: %d %v", n, err)
	}
	for _, bad := range [][]string{{"--cache-ram", "-5"}, {"--cache-ram", "lots"}, {"--cache-disk", "1e999"}, {"--cache-disk", "-1GiB"}} {
		if _, err := parse(bad...).open(t.TempDir()); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if pc, err := parse("--cache-ram", "0", "--cache-disk", "0").open(t.TempDir()); err != nil || pc != nil {
		t.Errorf("both 0: %v %v, want no cache", pc, err)
	}
	for _, bad := range []string{"stories", "stories=stories", "=draft", "stories=", "a b=c"} {
		if _, err := parse("--draft", bad).draftModels(); err == nil || !strings.Contains(err.Error(), "--draft") {
			t.Errorf("--draft %q: %v", bad, err)
		}
	}
	if m, err := parse("--draft", "stories=tiny,big:7b=small").draftModels(); err != nil || m["stories:latest"] != "tiny:latest" || m["big:7b"] != "small:latest" {
		t.Errorf("--draft: %v %v", m, err)
	}
	pc, err := parse("--cache-disk", "0").open(t.TempDir())
	if err != nil || pc == nil {
		t.Fatalf("auto RAM: %v %v", pc, err)
	}
}
