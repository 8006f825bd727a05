package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

var cpCmd = &command{
	name: "cp", args: "SOURCE DESTINATION", short: "copy a model under a new name",
	long:    "The copy shares the source's blobs: it costs no disk space.",
	minArgs: 2, maxArgs: 2, complete: "model",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		return func(ctx context.Context, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			if err := c.Copy(ctx, &ollamaapi.CopyRequest{Source: args[0], Destination: args[1]}); err != nil {
				return err
			}
			fmt.Printf("copied '%s' to '%s'\n", args[0], args[1])
			return nil
		}
	},
}

var rmCmd = &command{
	name: "rm", aliases: []string{"delete"}, args: "MODEL...", short: "remove models",
	long:    "A loaded model is unloaded first. Blobs no other model uses are deleted.",
	minArgs: 1, maxArgs: -1, complete: "model",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		return func(ctx context.Context, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			for _, name := range args {
				if loaded, _ := isLoaded(ctx, c, name); loaded {
					_ = unload(ctx, c, name)
				}
				if err := c.Delete(ctx, &ollamaapi.DeleteRequest{Model: name}); err != nil {
					return err
				}
				fmt.Printf("deleted '%s'\n", name)
			}
			return nil
		}
	},
}

var stopCmd = &command{
	name: "stop", args: "MODEL", short: "unload a model from memory",
	long:    "Waits for the model's running requests, then frees its memory.",
	minArgs: 1, maxArgs: 1, complete: "model",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		return func(ctx context.Context, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			loaded, err := isLoaded(ctx, c, args[0])
			if err != nil {
				return err
			}
			if !loaded {
				return fmt.Errorf("couldn't find model %q to stop", args[0])
			}
			return unload(ctx, c, args[0])
		}
	},
}

// unload asks the server to unload a model: a generate request without a
// prompt and with keep_alive 0.
func unload(ctx context.Context, c *client.Client, model string) error {
	req := &ollamaapi.GenerateRequest{Model: model, KeepAlive: &ollamaapi.Duration{}}
	return c.Generate(ctx, req, func(ollamaapi.GenerateResponse) error { return nil })
}

// isLoaded reports whether /api/ps lists the model.
func isLoaded(ctx context.Context, c *client.Client, model string) (bool, error) {
	ps, err := c.Ps(ctx)
	if err != nil {
		return false, err
	}
	for _, m := range ps.Models {
		if sameModel(m.Name, model) || sameModel(m.Model, model) {
			return true, nil
		}
	}
	return false, nil
}

// sameModel compares names the way the server resolves them: a name
// without a tag is NAME:latest.
func sameModel(a, b string) bool {
	full := func(s string) string {
		if i := strings.LastIndex(s, ":"); i < 0 || strings.Contains(s[i:], "/") {
			return s + ":latest"
		}
		return s
	}
	return a != "" && full(a) == full(b)
}
