package main

import (
	"bufio"
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
	"syscall"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// Part T's Postgres: a cluster made by Debian's initdb in the bench's directory,
// run by reaper's process driver as the postgres user when the bench runs as root
// (Postgres refuses root). Its log lines start with the time as Unix seconds with
// milliseconds (log_line_prefix %n), so that the bench reads when it started to
// accept connections.

// errNoPostgres skips part T: it is not a failure of the bench.
var errNoPostgres = errors.New("bench: PostgreSQL is not installed (apt-get install postgresql: /usr/lib/postgresql/*/bin)")

// pgCluster is a data directory made by initdb.
type pgCluster struct {
	bin, data, log string
	asPG           bool
}

// newPGCluster runs initdb under dir.
func newPGCluster(dir string) (*pgCluster, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(found) == 0 {
		return nil, errNoPostgres
	}
	sort.Strings(found)
	c := &pgCluster{bin: filepath.Dir(found[len(found)-1]), data: filepath.Join(dir, "data"), log: filepath.Join(dir, "postgres.log"),
		asPG: os.Geteuid() == 0}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	if c.asPG {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("bench: running as root, Postgres must run as the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// Its parents must let it through: the bench's temporary directory is
		// private to root. Those below the system's temporary directory only:
		// that one is world-writable and sticky, and must stay so for every
		// other user of the machine.
		for d := dir; strings.HasPrefix(d, os.TempDir()+string(filepath.Separator)); d = filepath.Dir(d) {
			_ = os.Chmod(d, 0o755)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	argv := c.as(filepath.Join(c.bin, "initdb"), "-D", c.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench: initdb: %w\n%s", err, out)
	}
	conf := "\nfsync = off\nunix_socket_directories = ''\nlisten_addresses = '127.0.0.1'\nlog_line_prefix = '%n '\n"
	f, err := os.OpenFile(filepath.Join(c.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	_, err = f.WriteString(conf)
	return c, err
}

// as is argv run as the postgres user when the bench runs as root.
func (c *pgCluster) as(argv ...string) []string {
	if !c.asPG {
		return argv
	}
	return append([]string{"setpriv", "--reuid", "postgres", "--regid", "postgres", "--clear-groups"}, argv...)
}

// command runs the cluster's postgres on port, in the foreground.
func (c *pgCluster) command(port string) []string {
	return c.as(filepath.Join(c.bin, "postgres"), "-D", c.data, "-p", port)
}

// readyTimes are the times Postgres logged that it accepts connections, in order.
func (c *pgCluster) readyTimes() ([]time.Time, error) { return readyTimesIn(c.log) }

// readyTimesIn reads the times a Postgres log file says it accepted connections.
func readyTimesIn(path string) ([]time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []time.Time
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "database system is ready to accept connections") {
			continue
		}
		stamp, _, _ := strings.Cut(line, " ")
		secs, err := strconv.ParseFloat(stamp, 64)
		if err != nil {
			return nil, fmt.Errorf("bench: postgres log line without its time (log_line_prefix): %q", line)
		}
		out = append(out, time.UnixMilli(int64(secs*1000+0.5)))
	}
	return out, sc.Err()
}

// coldFloor is the floor of a cold Postgres's first answer, reaper left out: the
// bench starts the cluster itself on port, a client connects every 2 ms (the
// readiness probe's fast schedule) until Postgres takes it, and runs SELECT 1;
// the time from Postgres's "ready to accept connections" to that answer is what
// any client pays on a cold start, whoever wakes the server (the first backend
// after a start rebuilds the catalog caches). Then it stops Postgres (SIGINT, as
// reaper does). It runs before reaper starts, on the cluster reaper then owns.
func (c *pgCluster) coldFloor(ctx context.Context, e *env, addr string, rounds int) ([]time.Duration, error) {
	_, port, _ := net.SplitHostPort(addr)
	logPath := filepath.Join(filepath.Dir(c.log), "floor.log")
	var out []time.Duration
	for i := range rounds {
		p, err := clusterenv.StartProcess(e.clean, "postgres (cold floor)", c.command(port), nil, logPath)
		if err != nil {
			return nil, err
		}
		answered, err := pollQuery(ctx, addr)
		_ = p.Signal(syscall.SIGINT)
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			p.Stop()
		}
		if err != nil {
			return nil, fmt.Errorf("bench: T: a cold Postgres, directly: %w", err)
		}
		ready, err := readyTimesIn(logPath)
		if err != nil || len(ready) < i+1 {
			return nil, fmt.Errorf("bench: T: Postgres's ready time %d not in %s: %v", i+1, logPath, err)
		}
		out = append(out, answered.Sub(ready[i]))
	}
	return out, nil
}

// pollQuery runs query on addr every 2 ms until it works (the port closed,
// Postgres starting up), for tcpAnswerDeadline at most.
func pollQuery(ctx context.Context, addr string) (time.Time, error) {
	deadline := time.Now().Add(tcpAnswerDeadline)
	for {
		answered, err := query(ctx, addr)
		if err == nil {
			return answered, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Millisecond):
		}
	}
}
