// Package pgtest runs a real PostgreSQL server for tests: a cluster made by initdb
// in a temporary directory, a postgres on a free loopback port, stopped in
// t.Cleanup. Debian's postgresql package puts its programs under
// /usr/lib/postgresql/<version>/bin.
//
// Postgres refuses to run as root: when the tests run as root, initdb and
// postgres run as the postgres user (setpriv), in a directory that user owns.
//
// When PostgreSQL is not installed, Start skips the test, or fails it when the
// environment sets REAPER_REQUIRE_POSTGRES=1 (as CI does).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reapergw/reaper/internal/freeport"
)

// RequireEnv names the environment variable that turns a missing PostgreSQL from
// a skip into a failure.
const RequireEnv = "REAPER_REQUIRE_POSTGRES"

// BinEnv names the environment variable that gives the directory of initdb and
// postgres; without it the newest /usr/lib/postgresql/*/bin is used.
const BinEnv = "REAPER_POSTGRES_BIN"

// RunAs is the user postgres runs as when the tests run as root.
const RunAs = "postgres"

// ReadyTimeout bounds a start (until the server accepts a query).
var ReadyTimeout = 30 * time.Second

// Cluster is a data directory made by initdb, owned by the user postgres runs as.
type Cluster struct {
	t    testing.TB
	bin  string
	root string // the temporary directory: data/ and the log
	Data string // the data directory (postgres -D)
	asPG bool   // run as RunAs (the tests run as root)
}

// Init makes a new cluster with trust authentication for the user postgres on
// loopback, or skips the test (fails it with REAPER_REQUIRE_POSTGRES=1) when
// PostgreSQL is not installed. The directory is removed in t.Cleanup. conf lines
// are appended to postgresql.conf.
func Init(t testing.TB, conf ...string) *Cluster {
	t.Helper()
	bin, err := findBin(os.Getenv)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("pgtest: %v, and %s=1", err, RequireEnv)
		}
		t.Skipf("pgtest: %v: install it (apt-get install postgresql) or set %s; set %s=1 to fail instead of skipping", err, BinEnv, RequireEnv)
	}
	c := &Cluster{t: t, bin: bin, asPG: os.Geteuid() == 0}
	// Not t.TempDir: its parent is private to root, and postgres must reach its
	// data directory.
	c.root, err = os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(c.root) })
	if c.asPG {
		u, err := user.Lookup(RunAs)
		if err != nil {
			t.Fatalf("pgtest: running as root, postgres must run as %s: %v", RunAs, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	c.Data = filepath.Join(c.root, "data")
	out, err := c.cmd("initdb", "-D", c.Data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions").CombinedOutput()
	if err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	// Fast and quiet for tests: no fsync (a clean stop still writes every page
	// out), no unix socket (its directory would be shared between tests).
	lines := append([]string{"fsync = off", "full_page_writes = off", "shared_buffers = 16MB",
		"unix_socket_directories = ''", "listen_addresses = '127.0.0.1'", "max_connections = 50"}, conf...)
	c.appendConf(lines...)
	return c
}

// appendConf appends lines to postgresql.conf.
func (c *Cluster) appendConf(lines ...string) {
	f, err := os.OpenFile(filepath.Join(c.Data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n" + strings.Join(lines, "\n") + "\n"); err != nil {
		c.t.Fatal(err)
	}
}

// Standby makes the cluster start as a standby without hot standby: a server
// that accepts connections and answers every one with 57P03 (the database
// system is not accepting connections), for as long as it runs.
func (c *Cluster) Standby() {
	c.appendConf("hot_standby = off")
	f, err := os.Create(filepath.Join(c.Data, "standby.signal"))
	if err != nil {
		c.t.Fatal(err)
	}
	_ = f.Close()
	c.chownAll()
}

// chownAll gives the files the tests wrote in the cluster to the user postgres runs as.
func (c *Cluster) chownAll() {
	if !c.asPG {
		return
	}
	u, _ := user.Lookup(RunAs)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	_ = filepath.Walk(c.Data, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			_ = os.Lchown(p, uid, gid)
		}
		return err
	})
}

// Command is the command line that runs the cluster's postgres on port, in the
// foreground, as the user it must run as: for a process-driver app. SIGINT stops
// it at once (fast shutdown), SIGTERM once its clients leave.
func (c *Cluster) Command(port int) []string {
	args := []string{filepath.Join(c.bin, "postgres"), "-D", c.Data, "-p", strconv.Itoa(port)}
	if c.asPG {
		args = append([]string{"setpriv", "--reuid", RunAs, "--regid", RunAs, "--clear-groups", "--pdeathsig", "KILL"}, args...)
	}
	return args
}

func (c *Cluster) cmd(prog string, args ...string) *exec.Cmd {
	argv := append([]string{filepath.Join(c.bin, prog)}, args...)
	if c.asPG {
		argv = append([]string{"setpriv", "--reuid", RunAs, "--regid", RunAs, "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.root
	return cmd
}

// findBin locates the directory of initdb and postgres.
func findBin(getenv func(string) string) (string, error) {
	if d := getenv(BinEnv); d != "" {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err != nil {
			return "", fmt.Errorf("postgres not found in %s (%s): %w", d, BinEnv, err)
		}
		return d, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(found) == 0 {
		return "", errors.New("postgres not found under /usr/lib/postgresql/*/bin")
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) < version(found[j]) })
	return filepath.Dir(found[len(found)-1]), nil
}

func version(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(bin))))
	return n
}

// FreePort returns a free loopback port.
func FreePort(t testing.TB) int {
	t.Helper()
	addr, err := freeport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	return port
}

// URL is a connection string for the user postgres at addr (trust: no password).
func URL(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable&connect_timeout=10"
}

// AwaitQuery polls until a query runs at addr, ReadyTimeout at most.
func AwaitQuery(ctx context.Context, addr string) error {
	deadline := time.Now().Add(ReadyTimeout)
	var last error
	for time.Now().Before(deadline) {
		conn, err := pgconn.Connect(ctx, URL(addr))
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1").ReadAll()
			_ = conn.Close(ctx)
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("pgtest: no query ran at %s within %s: %w", addr, ReadyTimeout, last)
}

// Promote ends the standby mode of a cluster made with Standby and running:
// it takes connections from then on (pg_ctl promote).
func (c *Cluster) Promote() {
	c.t.Helper()
	out, err := c.cmd("pg_ctl", "promote", "-D", c.Data, "-w", "-t", "60").CombinedOutput()
	if err != nil {
		c.t.Fatalf("pgtest: pg_ctl promote: %v\n%s", err, out)
	}
}
