package redistest

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStart_AnswersAndStopsInCleanup(t *testing.T) {
	var addr string
	t.Run("server", func(t *testing.T) {
		s := Start(t, Options{})
		addr = s.Addr()
		if !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Fatalf("Addr = %q, want a loopback address", addr)
		}
		if got, err := s.Do("PING"); err != nil || got != "PONG" {
			t.Fatalf("PING = %q, %v", got, err)
		}
		if _, err := s.Do("SET", "k", "v"); err != nil {
			t.Fatalf("SET: %v", err)
		}
		if got, err := s.Do("GET", "k"); err != nil || got != "v" {
			t.Fatalf("GET = %q, %v", got, err)
		}
	})
	// The subtest's cleanup has stopped the server.
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after the test ended", addr)
	}
}

func TestRestart_SamePortDataLostWithoutPersist(t *testing.T) {
	s := Start(t, Options{})
	addr := s.Addr()
	mustDo(t, s, "SET", "k", "v")
	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("Addr after Restart = %s, want %s", s.Addr(), addr)
	}
	if got := mustDo(t, s, "EXISTS", "k"); got != "0" {
		t.Fatalf("EXISTS k after a restart without persistence = %s, want 0", got)
	}
}

func TestRestart_PersistKeepsData(t *testing.T) {
	s := Start(t, Options{Persist: true})
	mustDo(t, s, "SET", "a", "1")
	s.Stop()
	if _, err := s.Do("PING"); err == nil {
		t.Fatal("PING answered by a stopped server")
	}
	s.Restart()
	if got := mustDo(t, s, "GET", "a"); got != "1" {
		t.Fatalf("GET a after Stop and Restart = %q, want 1", got)
	}
	// A crash loses nothing acknowledged either (fsync on every write).
	mustDo(t, s, "SET", "b", "2")
	s.Kill()
	s.Restart()
	if got := mustDo(t, s, "GET", "b"); got != "2" {
		t.Fatalf("GET b after Kill and Restart = %q, want 2", got)
	}
}

func TestPassword_Required(t *testing.T) {
	const pw = `pa ss"w\ord`
	s := Start(t, Options{Password: pw})
	if got := mustDo(t, s, "PING"); got != "PONG" {
		t.Fatalf("PING with the password = %q", got)
	}
	_, err := command(s.dialer(), s.Addr(), "", time.Second, "PING")
	if !errors.Is(err, ErrReply) || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("PING without the password = %v, want a NOAUTH error", err)
	}
	// The password stays out of the process's command line.
	if runtime.GOOS == "linux" {
		s.mu.Lock()
		pid := s.proc.cmd.Process.Pid
		s.mu.Unlock()
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			t.Fatalf("read cmdline: %v", err)
		}
		if strings.Contains(string(cmdline), "pa ss") {
			t.Fatalf("the password is on the command line: %q", cmdline)
		}
	}
}

func TestPause_HangsUntilResume(t *testing.T) {
	s := Start(t, Options{})
	s.Pause()
	start := time.Now()
	_, err := command(s.dialer(), s.Addr(), "", 200*time.Millisecond, "PING")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("PING to a paused server = %v after %v, want a timeout", err, time.Since(start))
	}
	s.Resume()
	if got := mustDo(t, s, "PING"); got != "PONG" {
		t.Fatalf("PING after Resume = %q", got)
	}
	s.Pause() // the cleanup must kill a paused server
}

func TestTLS_Only(t *testing.T) {
	s := Start(t, Options{TLS: true, Persist: true})
	if got := mustDo(t, s, "SET", "k", "v"); got != "OK" {
		t.Fatalf("SET over TLS = %q", got)
	}
	// The plain protocol gets no answer: the port speaks TLS only.
	plain := func(addr string, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout("tcp", addr, timeout)
	}
	if got, err := command(plain, s.Addr(), "", 500*time.Millisecond, "PING"); err == nil {
		t.Fatalf("PING in plain text answered %q", got)
	}
	s.Restart()
	if got := mustDo(t, s, "GET", "k"); got != "v" {
		t.Fatalf("GET over TLS after Restart = %q", got)
	}
	if (&Server{}).TLSConfig() != nil {
		t.Fatal("TLSConfig of a plain server is not nil")
	}
}

// fakeTB records a Skipf or Fatalf and ends the goroutine, as testing.T does.
type fakeTB struct {
	testing.TB
	mu      sync.Mutex
	skipped string
	failed  string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.mu.Lock()
	f.skipped = format
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = format
	f.mu.Unlock()
	runtime.Goexit()
}

func TestStart_MissingBinary(t *testing.T) {
	t.Setenv("REAPER_REDIS_SERVER", filepath.Join(t.TempDir(), "no-such-redis-server"))
	for _, require := range []string{"", "1"} {
		t.Setenv(RequireEnv, require)
		f := &fakeTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Start(f, Options{})
		}()
		<-done
		if require == "1" && f.failed == "" {
			t.Errorf("with %s=1, a missing redis-server must fail the test", RequireEnv)
		}
		if require == "" && !strings.Contains(f.skipped, "apt-get install redis-server") {
			t.Errorf("a missing redis-server must skip with an install hint; skipped %q, failed %q", f.skipped, f.failed)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:   `"plain"`,
		`a"b\c`:   `"a\"b\\c"`,
		"new\nln": `"new\x0aln"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func mustDo(t *testing.T, s *Server, args ...string) string {
	t.Helper()
	got, err := s.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return got
}
