package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server"
)

// --allow-image-urls (TADPOLE_ALLOW_IMAGE_URLS) is off by default and
// reaches the server's config; a value of the variable that is not a
// boolean stops start-up.
func TestAllowImageURLsFlag(t *testing.T) {
	apply := func(args ...string) server.Config {
		t.Helper()
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f := addAPIFlags(fs)
		if err := fs.Parse(append(args, "--data-dir", filepath.Join(t.TempDir(), "data"))); err != nil {
			t.Fatal(err)
		}
		cfg := server.Config{ModelsDir: t.TempDir()}
		if err := f.apply(&cfg); err != nil {
			t.Fatal(err)
		}
		cfg.Jobs.Close()
		return cfg
	}
	if apply().AllowImageURLs {
		t.Error("on by default")
	}
	if !apply("--allow-image-urls").AllowImageURLs {
		t.Error("--allow-image-urls: off")
	}
	t.Setenv("TADPOLE_ALLOW_IMAGE_URLS", "true")
	if !apply().AllowImageURLs {
		t.Error("TADPOLE_ALLOW_IMAGE_URLS=true: off")
	}
	if apply("--allow-image-urls=false").AllowImageURLs {
		t.Error("--allow-image-urls=false over the variable: on")
	}
	t.Setenv("TADPOLE_ALLOW_IMAGE_URLS", "0")
	if apply().AllowImageURLs {
		t.Error("TADPOLE_ALLOW_IMAGE_URLS=0: on")
	}
	saved := envErrors
	t.Cleanup(func() { envErrors = saved })
	t.Setenv("TADPOLE_ALLOW_IMAGE_URLS", "maybe")
	if apply().AllowImageURLs {
		t.Error("TADPOLE_ALLOW_IMAGE_URLS=maybe: on")
	}
	if err := checkEnv(); err == nil || !strings.Contains(err.Error(), `TADPOLE_ALLOW_IMAGE_URLS="maybe": not a boolean`) {
		t.Errorf("TADPOLE_ALLOW_IMAGE_URLS=maybe: checkEnv %v", err)
	}
}
