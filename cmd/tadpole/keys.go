package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server/auth"
)

var keysCmd = &command{
	name: "keys", args: "new | hash", short: "make API keys for the server",
	long: "`tadpole keys new` prints a new random key, then the line that stands for it\n" +
		"in a keys file (--api-keys-file) or TADPOLE_API_KEYS: \"sha256:\" and the key's\n" +
		"SHA-256 in hex, so the server never holds the key itself. Give the key to the\n" +
		"client (Authorization: Bearer KEY) and the sha256: line to the server.\n" +
		"`tadpole keys hash` reads keys from standard input, one a line, and prints\n" +
		"their sha256: lines.",
	minArgs: 1, maxArgs: 1,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		return func(_ context.Context, args []string) error {
			switch args[0] {
			case "new":
				key, err := auth.NewKey()
				if err != nil {
					return err
				}
				fmt.Println(key)
				fmt.Println(auth.Hash(key))
				return nil
			case "hash":
				sc := bufio.NewScanner(os.Stdin)
				for sc.Scan() {
					if k := strings.TrimSpace(sc.Text()); k != "" {
						fmt.Println(auth.Hash(k))
					}
				}
				return sc.Err()
			}
			return fmt.Errorf("unknown keys command %q (new or hash)", args[0])
		}
	},
}
