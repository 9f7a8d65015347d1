package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/pgtest"
	"github.com/reapergw/reaper/internal/redistest"
	"github.com/reapergw/reaper/internal/testwait"
)

// tcpConfig is a node with one process app (command, ready probe) behind one TCP
// route; route holds the route's extra keys, as YAML flow items.
func tcpConfig(command []string, ready, target, route string) string {
	quoted := make([]string, len(command))
	for i, a := range command {
		quoted[i] = strconv.Quote(a)
	}
	return fmt.Sprintf(`
node:
  id: e2e
  listen: 127.0.0.1:0
  admin_listen: 127.0.0.1:0
  data_dir: %%DIR%%/data
  shutdown_timeout: 5s
reaper:
  job_interval: 1s
  fast_interval: 200ms
paas:
  driver: process
  apps:
    - id: db
      command: [%s]
      stop_signal: SIGINT
      ready: %s
tcp_routes:
  - {id: db-tcp, listen: "127.0.0.1:0", app_id: db, target: %q, fail_timeout: 60s%s}
`, strings.Join(quoted, ", "), ready, target, route)
}

// tcpAddr is where the TCP route listens, from reaper's log.
func (p *reaperProc) tcpAddr(id string) string {
	for _, l := range p.logs() {
		if l["msg"] == "tcp route listening" && l["route"] == id {
			return l["addr"].(string)
		}
	}
	p.t.Fatalf("no tcp route %s in the log:\n%s", id, p.logText())
	return ""
}

// tcpLines are the access log lines of the TCP route's connections.
func tcpLines(p *reaperProc) []map[string]any {
	var out []map[string]any
	for _, l := range p.logs() {
		if l["msg"] == "tcp connection" {
			out = append(out, l)
		}
	}
	return out
}

// waitStatus waits until db changed to the status `to` for the nth time.
func waitStatus(p *reaperProc, to string, nth int, limit time.Duration) {
	p.t.Helper()
	testwait.For(p.t, limit, fmt.Sprintf("db %s for the %d time", to, nth), func() bool {
		n := 0
		for _, l := range p.logs() {
			if l["msg"] == "app status changed" && l["app"] == "db" && l["to"] == to {
				n++
			}
		}
		return n >= nth
	})
}

// wantStarts waits for the job's log of the want-th start of db (written just
// after the status that released the connections), then checks there was no
// other.
func wantStarts(t *testing.T, p *reaperProc, want int) {
	t.Helper()
	testwait.For(t, 10*time.Second, "the start logged", func() bool { return starts(p, "db") >= want })
	if n := starts(p, "db"); n != want {
		t.Errorf("starts = %d, want %d", n, want)
	}
}

func pgExec(ctx context.Context, addr, sql string) ([]*pgconn.Result, error) {
	conn, err := pgconn.Connect(ctx, pgtest.URL(addr))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	return conn.Exec(ctx, sql).ReadAll()
}

func TestTCP_ASleepingPostgresWakesOnAConnectionAndKeepsItsData(t *testing.T) {
	cl := pgtest.Init(t)
	port := pgtest.FreePort(t)
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dir := t.TempDir()
	p := startReaper(t, dir, tcpConfig(cl.Command(port), fmt.Sprintf("{postgres: %q}", target), target, ", grace_period: 2s, connection_idle_timeout: 1s"))
	route := p.tcpAddr("db-tcp")
	waitStatus(p, "Down", 1, 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The first connection waits while Postgres starts, then runs its queries:
	// its startup packet, sent before Postgres ran, reached it intact.
	if _, err := pgExec(ctx, route, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before the sleep')"); err != nil {
		t.Fatalf("through the route: %v\n%s", err, p.logText())
	}
	wantStarts(t, p, 1)
	waitStatus(p, "Down", 2, 30*time.Second) // quiet for the grace period: asleep

	// Twenty clients at once: one start, every one answered.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			res, err := pgExec(ctx, route, "SELECT v FROM kept")
			switch {
			case err != nil:
				errs <- err
			case len(res) != 1 || len(res[0].Rows) != 1 || string(res[0].Rows[0][0]) != "before the sleep":
				errs <- fmt.Errorf("rows after the wake: %v", res)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	wantStarts(t, p, 2) // one per wake
	testwait.For(t, 10*time.Second, "an access log line per connection", func() bool { return len(tcpLines(p)) >= 21 })
	for _, l := range tcpLines(p) {
		if l["ended"] != "closed" || l["bytes_in"].(float64) == 0 || l["bytes_out"].(float64) == 0 || l["client"] == "" {
			t.Errorf("access log line: %v", l)
		}
	}

	// A pool's quiet connection: reaped after connection_idle_timeout, so that
	// Postgres sleeps although the client never closed it.
	pooled, err := pgconn.Connect(ctx, pgtest.URL(route))
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close(ctx)
	if _, err := pooled.Exec(ctx, "SELECT 1").ReadAll(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the quiet connection reaped", func() bool { return endedCount(p, "idle") == 1 })
	waitStatus(p, "Down", 3, 30*time.Second)
	if _, err := pooled.Exec(ctx, "SELECT 1").ReadAll(); err == nil {
		t.Error("a query on the reaped connection worked")
	}

	// Garbage, and nothing: Postgres refuses the one, the other closes at once;
	// neither harms the next client.
	for _, send := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("\x00\xff", 100), ""} {
		c, err := net.DialTimeout("tcp", route, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if send != "" {
			_, _ = c.Write([]byte(send))
		}
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				break // Postgres (or reaper) closed it
			}
		}
		_ = c.Close()
	}
	if res, err := pgExec(ctx, route, "SELECT v FROM kept"); err != nil || len(res) != 1 || len(res[0].Rows) != 1 {
		t.Fatalf("after the bad clients: %v, %v", res, err)
	}
}

// endedCount counts the connections the access log says ended so.
func endedCount(p *reaperProc, how string) int {
	n := 0
	for _, l := range tcpLines(p) {
		if l["ended"] == how {
			n++
		}
	}
	return n
}

func TestTCP_ARedisSubscriberKeepsRedisAwakeUntilItLeaves(t *testing.T) {
	redisPath := redistest.Path
	port, err := freeport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(redisPath); err != nil {
		if os.Getenv(redistest.RequireEnv) == "1" {
			t.Fatalf("%v, and %s=1", err, redistest.RequireEnv)
		}
		t.Skip(err)
	}
	_, portText, _ := net.SplitHostPort(port)
	dir := t.TempDir()
	command := []string{redisPath, "--port", portText, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}
	p := startReaper(t, dir, tcpConfig(command, fmt.Sprintf("{redis: %q}", port), port, ", grace_period: 1s, mode: keep_connections"))
	route := p.tcpAddr("db-tcp")
	waitStatus(p, "Down", 1, 20*time.Second)

	sub, err := net.DialTimeout("tcp", route, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := sub.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nnews\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = sub.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 256)
	n, err := sub.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "subscribe") {
		t.Fatalf("SUBSCRIBE answered %q, %v", buf[:n], err)
	}
	waitStatus(p, "Up", 1, 10*time.Second)
	// A quiet subscriber, for five grace periods: Redis stays awake.
	time.Sleep(5 * time.Second) // the duration under test, not a wait for a condition
	for _, l := range p.logs() {
		if l["msg"] == "app status changed" && l["to"] == "WaitingForShutdown" {
			t.Fatalf("Redis put to sleep under a subscriber: %v", l)
		}
	}
	// A message published now reaches the subscriber through the route.
	if _, err := pgtestRedis(port, "PUBLISH", "news", "hello"); err != nil {
		t.Fatal(err)
	}
	n, err = sub.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "hello") {
		t.Fatalf("the subscriber got %q, %v", buf[:n], err)
	}
	_ = sub.Close()
	waitStatus(p, "Down", 2, 20*time.Second)
}

// pgtestRedis sends one command to Redis at addr, directly.
func pgtestRedis(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 128)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

func TestTCP_APostgresStillStartingIsNotHandedTheConnection(t *testing.T) {
	// A standby without hot standby answers every connection with 57P03 until
	// it is promoted: a Postgres that takes as long to start as the test wants.
	cl := pgtest.Init(t)
	cl.Standby()
	port := pgtest.FreePort(t)
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p := startReaper(t, t.TempDir(), tcpConfig(cl.Command(port), fmt.Sprintf("{postgres: %q}", target), target, ""))
	route := p.tcpAddr("db-tcp")
	waitStatus(p, "Down", 1, 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	answered := make(chan error, 1)
	go func() {
		_, err := pgExec(ctx, route, "SELECT 1")
		answered <- err
	}()
	waitStatus(p, "WaitingForUp", 1, 10*time.Second)
	testwait.For(t, 30*time.Second, "postgres answering 57P03", func() bool {
		_, err := pgExec(ctx, target, "SELECT 1")
		return err != nil && strings.Contains(err.Error(), "57P03")
	})
	// Twenty probe intervals of Postgres answering 57P03: a tcp probe calls it
	// ready at the first (checked: the client then gets the 57P03 error here).
	time.Sleep(500 * time.Millisecond) // the duration under test, not a wait for a condition
	select {
	case err := <-answered:
		t.Fatalf("the held client was answered while Postgres was starting: %v", err)
	default:
	}
	cl.Promote()
	if err := <-answered; err != nil {
		t.Fatalf("the held client, once Postgres was ready: %v", err)
	}
}
