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
	long: "Also prints the flags this binary's CPU backend was built with and\n" +
		"what llama.cpp detects on this machine.",
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
			fmt.Printf("cpu backend built with: %s\n", engine.BuildFlags)
			fmt.Printf("llama.cpp system info: %s\n", engine.SystemInfo())
			return nil
		}
	},
}
