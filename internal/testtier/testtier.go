// Package testtier splits the tests into two tiers. The full tier
// (`make test`, CI) runs every test: the real engine on real models,
// real servers, llama-server side by side, PostgreSQL and a browser. The
// short tier (`make test-short`, `go test -short ./...`) is the fast
// feedback loop of about a minute: everything that runs without loading
// a model or starting a peer process (wire shapes on infertest's fake,
// parsers, templates, the kit, the layering), skipping the tests that
// call Full.
package testtier

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
