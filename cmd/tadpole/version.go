package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/engine"
)

var versionCmd = &command{
	name: "version", short: "print the client's and the server's versions",
	long: "Also prints the llama.cpp release and commit the engine was built from\n" +
		"and where its sources came from, the flags its CPU backend was built\n" +
		"with and what llama.cpp detects on this machine.",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		return func(ctx context.Context, _ []string) error {
			fmt.Printf("client version: %s\n", engine.Version)
			c, err := newClient()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if v, err := c.Version(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "Warning: %v\n", err)
			} else {
				fmt.Printf("server version: %s (%s)\n", v, c.Host())
			}
			fmt.Printf("llama.cpp: %s (commit %s, from %s)\n", engine.LlamaRelease(), engine.LlamaCommit, engine.LlamaOrigin)
			fmt.Printf("cpu backend built with: %s\n", engine.BuildFlags)
			fmt.Printf("llama.cpp system info: %s\n", engine.SystemInfo())
			return nil
		}
	},
}
