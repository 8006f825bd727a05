// Package testkit holds what every test package shares: the two tiers
// (Full) and waiting for a condition (Eventually).
//
// The full tier (`make test`, CI) runs every test: the real engine on
// real models, real servers, llama-server side by side, PostgreSQL and a
// browser. The short tier (`make test-short`, `go test -short ./...`) is
// the fast feedback loop: everything that runs without a server on the
// engine or a peer process (wire shapes on infertest's fake, parsers,
// templates, the kit, the layering, the engine's unit tests), skipping
// the tests that call Full.
package testkit

import "testing"

// Full skips t in the short tier (-short), saying why it belongs to the
// full one: call it first in a test, or in a helper every such test
// starts with (a server on the engine, a child process, a peer).
func Full(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("full tier only (-short): " + why)
	}
}
