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
		"SHA-256 in hex, so the server never holds the key itself, then its scope when\n" +
		"it is not the default. Give the key to the client (Authorization: Bearer KEY)\n" +
		"and the sha256: line to the server.\n" +
		"`tadpole keys hash` reads keys from standard input, one a line, and prints\n" +
		"their sha256: lines.\n" +
		"Scopes: inference (the default) may generate, embed, list and show models and\n" +
		"run jobs; admin may also create, copy, delete, pull and push models and upload\n" +
		"blobs. A keys-file line or TADPOLE_API_KEYS entry is KEY or sha256:HEX, then\n" +
		"optionally a space and the scope: \"sha256:9f86… admin\".",
	minArgs: 1, maxArgs: 1,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		scope := fs.String("scope", string(auth.Inference), "the keys' scope: inference or admin")
		return func(_ context.Context, args []string) error {
			suffix := ""
			switch auth.Scope(*scope) {
			case auth.Inference:
			case auth.Admin:
				suffix = " " + *scope
			default:
				return fmt.Errorf("--scope: want %s or %s, not %q", auth.Inference, auth.Admin, *scope)
			}
			switch args[0] {
			case "new":
				key, err := auth.NewKey()
				if err != nil {
					return err
				}
				fmt.Println(key)
				fmt.Println(auth.Hash(key) + suffix)
				return nil
			case "hash":
				sc := bufio.NewScanner(os.Stdin)
				for sc.Scan() {
					if k := strings.TrimSpace(sc.Text()); k != "" {
						fmt.Println(auth.Hash(k) + suffix)
					}
				}
				return sc.Err()
			}
			return fmt.Errorf("unknown keys command %q (new or hash)", args[0])
		}
	},
}
