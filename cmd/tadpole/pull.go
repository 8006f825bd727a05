package main

import (
	"context"
	"os"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

var pullCmd = &command{
	name: "pull", args: "MODEL", short: "download a model from a registry",
	long: "The server downloads the model (registry.ollama.ai by default; also\n" +
		"hf.co/USER/REPO:QUANT or HOST/NAMESPACE/MODEL:TAG) into its store.\n" +
		"An interrupted pull resumes where it stopped.",
	minArgs: 1, maxArgs: 1, complete: "model",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		insecure := fs.Bool("insecure", false, "use plain HTTP to reach the registry (a local registry)")
		return func(ctx context.Context, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			return pull(ctx, c, args[0], *insecure)
		}
	},
}

var pushCmd = &command{
	name: "push", args: "MODEL", short: "upload a model to a registry",
	long:    "The model's name says where it goes: HOST/NAMESPACE/MODEL:TAG.",
	minArgs: 1, maxArgs: 1, complete: "model",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		insecure := fs.Bool("insecure", false, "use plain HTTP to reach the registry (a local registry)")
		return func(ctx context.Context, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			p := newProgress(os.Stderr)
			defer p.done()
			return c.Push(ctx, &ollamaapi.PullRequest{Model: args[0], Insecure: *insecure}, p.update)
		}
	},
}

// pull has the server pull a model, showing its progress on stderr.
func pull(ctx context.Context, c *client.Client, model string, insecure bool) error {
	p := newProgress(os.Stderr)
	defer p.done()
	return c.Pull(ctx, &ollamaapi.PullRequest{Model: model, Insecure: insecure}, p.update)
}
