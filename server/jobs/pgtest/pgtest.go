// Package pgtest runs a real, throw-away PostgreSQL server for tests:
// initdb into a temporary directory, postgres on a free loopback port
// with its socket in that directory, stopped (and the directory removed)
// at the end. It uses the server binaries of the system's postgresql
// package (PATH, then /usr/lib/postgresql/*/bin). Without them a test
// skips, or fails when TADPOLE_REQUIRE_PG=1 (CI installs them). The short
// tier (-short, internal/testkit) skips every test that starts one.
//
// initdb and postgres refuse to run as root; as root, the server runs as
// the unprivileged user "nobody" (through runuser), which owns the
// directory.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/jackc/pgx/v5"
)

// Server is one PostgreSQL server.
type Server struct {
	Dir  string // the temporary directory: data, socket, log
	Port int
	bin  string // the directory of initdb, pg_ctl, postgres
	as   *user.User
	dbs  atomic.Int64
}

// Bin finds the directory of the PostgreSQL server binaries ("" if
// none).
func Bin() string {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Dir(real)
			}
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d
		}
	}
	return ""
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start starts a server for t, stopped at t's end; see the package doc
// for when it skips.
func Start(t testing.TB) *Server {
	t.Helper()
	testkit.Full(t, "PostgreSQL")
	s, err := New()
	if err != nil {
		if err == ErrNoBinaries && os.Getenv("TADPOLE_REQUIRE_PG") != "1" {
			t.Skip("PostgreSQL server binaries not found (install postgresql; TADPOLE_REQUIRE_PG=1 makes this a failure)")
		}
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// ErrNoBinaries: the PostgreSQL server binaries are not installed.
var ErrNoBinaries = fmt.Errorf("PostgreSQL server binaries (initdb, pg_ctl) not found in PATH or /usr/lib/postgresql/*/bin")

// New initializes and starts a server; Close stops it.
func New() (*Server, error) {
	bin := Bin()
	if bin == "" {
		return nil, ErrNoBinaries
	}
	dir, err := os.MkdirTemp("", "tadpole-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		if s.as, err = user.Lookup("nobody"); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, PostgreSQL needs an unprivileged user: %w", err)
		}
		uid, _ := strconv.Atoi(s.as.Uid)
		gid, _ := strconv.Atoi(s.as.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", "tadpole", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.Port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if err := s.Restart(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) data() string { return filepath.Join(s.Dir, "data") }

// run runs one of the server binaries, as the unprivileged user when
// this process is root.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.as != nil {
		cmd = exec.Command("runuser", append([]string{"-u", s.as.Username, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.Dir
	// pg_ctl leaves postgres running: its own session, so that a test's
	// process group signals do not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd.CombinedOutput()
}

// Restart starts the server (again, after Stop) on the same port and
// data, and waits until it accepts connections.
func (s *Server) Restart() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200", s.Port, s.Dir)
	if out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.Dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return nil
}

// Stop stops the server at once (fast shutdown: clients are
// disconnected), keeping its data for Restart.
func (s *Server) Stop() error {
	if out, err := s.run("pg_ctl", "-D", s.data(), "-w", "-m", "fast", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	s.run("pg_ctl", "-D", s.data(), "-w", "-m", "immediate", "stop")
	os.RemoveAll(s.Dir)
}

// URL is the connection URL of database db.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://tadpole@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// NewDB creates an empty database and returns its URL.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d", s.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return s.URL(name)
}

// Exec runs SQL statements in database url.
func Exec(t testing.TB, url, sql string, args ...any) {
	t.Helper()
	withConn(t, url, func(ctx context.Context, conn *pgx.Conn) {
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", strings.TrimSpace(sql), err)
		}
	})
}

// Query runs one query in database url and returns its rows as strings.
func Query(t testing.TB, url, q string, args ...any) [][]string {
	t.Helper()
	var out [][]string
	withConn(t, url, func(ctx context.Context, conn *pgx.Conn) {
		rows, err := conn.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			row := make([]string, len(vals))
			for i, v := range vals {
				row[i] = fmt.Sprint(v)
			}
			out = append(out, row)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	})
	return out
}

// withConn runs f on a connection to url (30 s at most).
func withConn(t testing.TB, url string, f func(context.Context, *pgx.Conn)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	f(ctx, conn)
}
