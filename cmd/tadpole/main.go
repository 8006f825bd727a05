// Command tadpole is Tadpole's single binary: `tadpole serve` runs the
// server; the other verbs are clients of a running server.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, mainUsage())
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "--version", "-v":
		err = versionCmd.main(nil)
	case "--help", "-h":
		fmt.Print(mainUsage())
	default:
		cmd := lookup(os.Args[1])
		if cmd == nil {
			fmt.Fprintf(os.Stderr, "tadpole: unknown command %q\n\n%s", os.Args[1], mainUsage())
			os.Exit(2)
		}
		err = cmd.main(os.Args[2:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tadpole:", err)
		os.Exit(1)
	}
}
