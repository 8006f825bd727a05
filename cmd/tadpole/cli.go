package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/tadpole-llm/tadpole/server/client"
)

// command is one client verb of the tadpole binary.
type command struct {
	name    string
	aliases []string
	args    string // the positional arguments, as usage shows them
	short   string // one line for the verb list
	long    string // more help, shown by `tadpole help VERB`
	// minArgs and maxArgs bound the positional arguments (maxArgs -1:
	// any number).
	minArgs, maxArgs int
	// ownSignals: the verb handles Ctrl-C itself (run), so it gets a
	// context that no signal cancels.
	ownSignals bool
	// complete says what the positional arguments are, for shell
	// completion: "model" (names of the server's models) or "".
	complete string
	// setup registers the verb's flags on fs and returns the function
	// that runs it with the positional arguments left after parsing.
	setup func(fs *pflag.FlagSet) func(ctx context.Context, args []string) error
}

// commands are the client verbs, in the order help lists them. serve
// (the server) is dispatched by main; it is listed in usage on its own.
var commands []*command

func init() {
	commands = []*command{
		runCmd, pullCmd, pushCmd, listCmd, psCmd, showCmd, createCmd, cpCmd, rmCmd, stopCmd,
		versionCmd, benchCmd, keysCmd, completionCmd, helpCmd,
	}
}

// lookup finds a verb by name or alias.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
		for _, a := range c.aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

// flags is a fresh flag set of the verb and the function that runs it.
func (c *command) flags() (*pflag.FlagSet, func(context.Context, []string) error) {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetInterspersed(true)
	run := c.setup(fs)
	fs.Usage = func() {}
	return fs, run
}

// usage is the verb's help text.
func (c *command) usage() string {
	fs, _ := c.flags()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  tadpole %s", capitalize(c.short), c.name)
	if fs.HasFlags() {
		b.WriteString(" [flags]")
	}
	if c.args != "" {
		b.WriteString(" " + c.args)
	}
	b.WriteString("\n")
	if len(c.aliases) > 0 {
		fmt.Fprintf(&b, "\nAliases:\n  %s\n", strings.Join(append([]string{c.name}, c.aliases...), ", "))
	}
	if c.long != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(c.long))
	}
	if fs.HasFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", fs.FlagUsages())
	}
	fmt.Fprintf(&b, "\nEnvironment:\n  %-14s address of the server (default %s; host:port or a URL)\n", client.HostEnv, client.DefaultHost)
	return b.String()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// exitUsage reports a misuse of a verb and exits with status 2.
func (c *command) exitUsage(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "tadpole %s: %s\n\n%s", c.name, fmt.Sprintf(format, args...), c.usage())
	os.Exit(2)
}

// main parses the verb's flags and arguments and runs it. Usage errors
// exit with status 2, an interrupt with 130; other errors are returned.
func (c *command) main(args []string) error {
	fs, run := c.flags()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Print(c.usage())
			return nil
		}
		c.exitUsage("%v", err)
	}
	rest := fs.Args()
	switch {
	case len(rest) < c.minArgs:
		c.exitUsage("needs %s", c.args)
	case c.maxArgs >= 0 && len(rest) > c.maxArgs:
		c.exitUsage("too many arguments: %q", rest[c.maxArgs:])
	}
	ctx := context.Background()
	if !c.ownSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	err := run(ctx, rest)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr)
		os.Exit(130)
	}
	return err
}

// newClient is the client of the server TADPOLE_HOST names.
func newClient() (*client.Client, error) {
	return client.FromEnv()
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// termWidth is the width of the terminal on f, or 0 when it is none.
func termWidth(f *os.File) int {
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return w
}
