// Package client is the Go client of Tadpole's Ollama-compatible API: the
// `tadpole` command's verbs other than serve use it to talk to a running
// server, and the server's tests use it to drive a real one. It sends and
// receives exactly the types of package ollamaapi, so the client and the server
// cannot drift apart on the wire. (That Ollama's own Go client works
// against Tadpole is compat/ollamaclient's to prove.)
//
// The package only speaks HTTP: it must not import the engine, the
// scheduler or the model store, so a client build never needs cgo.
package client
