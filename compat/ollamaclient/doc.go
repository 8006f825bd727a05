// Package ollamaclient proves that Ollama's official Go client
// (github.com/ollama/ollama/api) works unchanged against Tadpole: its
// tests start the real `tadpole serve` binary (TADPOLE_BIN, which `make
// test-compat` sets to the one it builds) on 127.0.0.1 with generated
// test models and drive every endpoint the client has that Tadpole
// serves.
//
// It is a Go module of its own so that the server's module never
// requires Ollama's: the server is tested with its own client
// (server/client), and this module alone checks the wire against
// Ollama's.
package ollamaclient
