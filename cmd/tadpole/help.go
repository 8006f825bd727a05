package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server/client"
)

// mainUsage is what `tadpole help` prints: every verb in one line.
func mainUsage() string {
	var b strings.Builder
	b.WriteString("Tadpole: a self-hosted LLM inference server (llama.cpp in-process).\n\n")
	b.WriteString("Usage:\n  tadpole VERB [flags] [arguments]\n\nVerbs:\n")
	fmt.Fprintf(&b, "  %-11s %s\n", "serve", "start the server (tadpole serve --help)")
	for _, c := range commands {
		name := c.name
		if len(c.aliases) > 0 {
			name += ", " + strings.Join(c.aliases, ", ")
		}
		fmt.Fprintf(&b, "  %-11s %s\n", name, c.short)
	}
	b.WriteString("\nRun `tadpole help VERB` (or `tadpole VERB --help`) for a verb's flags.\n")
	fmt.Fprintf(&b, "\nEnvironment:\n  %-14s address of the server (default %s; host:port or a URL)\n", client.HostEnv, client.DefaultHost)
	return b.String()
}

var helpCmd = &command{
	name: "help", args: "[VERB]", short: "show help for tadpole or one of its verbs",
	maxArgs: 1,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		return func(_ context.Context, args []string) error {
			if len(args) == 0 {
				fmt.Print(mainUsage())
				return nil
			}
			if args[0] == "serve" {
				return serve([]string{"--help"})
			}
			c := lookup(args[0])
			if c == nil {
				return fmt.Errorf("unknown command %q", args[0])
			}
			fmt.Print(c.usage())
			return nil
		}
	},
}
