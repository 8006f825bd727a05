package jobs

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/tadpole-llm/tadpole/server/jobs/pgtest"
)

// pg is the package's PostgreSQL server, started by the first test that
// needs it and stopped by TestMain.
var pg struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.srv != nil {
		pg.srv.Close()
	}
	os.Exit(code)
}

// pgServer is the shared server; without PostgreSQL's binaries the test
// skips, or fails under TADPOLE_REQUIRE_PG=1.
func pgServer(t *testing.T) *pgtest.Server {
	t.Helper()
	testkit.Full(t, "PostgreSQL")
	pg.once.Do(func() { pg.srv, pg.err = pgtest.New() })
	if errors.Is(pg.err, pgtest.ErrNoBinaries) && os.Getenv("TADPOLE_REQUIRE_PG") != "1" {
		t.Skip(pg.err)
	}
	if pg.err != nil {
		t.Fatal(pg.err)
	}
	return pg.srv
}

// pgConfig is a Config of a new, empty PostgreSQL database.
func pgConfig(t *testing.T) Config {
	return Config{URL: pgServer(t).NewDB(t)}
}

// each runs a store test against both backends: SQLite in a temporary
// directory, PostgreSQL in a new database.
func each(t *testing.T, f func(t *testing.T, cfg Config)) {
	t.Run("sqlite", func(t *testing.T) { f(t, Config{Dir: t.TempDir()}) })
	t.Run("postgres", func(t *testing.T) { f(t, pgConfig(t)) })
}
