// Command tadpole is Tadpole's single binary: `tadpole serve` runs the
// server; the other verbs are clients of a running server.
package main

import (
	"fmt"
	"os"
)

const usage = `Tadpole: a self-hosted LLM inference server (llama.cpp in-process).

Usage:
  tadpole serve [flags]   start the server (tadpole serve --help)
  tadpole version         print the version and how the engine was built

Environment:
  TADPOLE_HOST            address of the server (default 127.0.0.1:11434)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "version", "--version", "-v":
		printVersion()
	case "help", "--help", "-h":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "tadpole: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tadpole:", err)
		os.Exit(1)
	}
}
