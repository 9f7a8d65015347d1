package main

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// child is the demoapp binary running as a real process.
type child struct {
	cmd  *exec.Cmd
	log  *logWatch // stderr
	done chan struct{}
	err  error // from Wait, set before done closes
}

func startChild(t *testing.T, bin string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), log: newLogWatch(), done: make(chan struct{})}
	c.cmd.Stderr = c.log
	c.cmd.Stdout = c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill() // fails harmlessly if it has exited
		<-c.done
	})
	return c
}

// wait waits for the process to exit and returns its state.
func (c *child) wait(t *testing.T) *os.ProcessState {
	t.Helper()
	select {
	case <-c.done:
		return c.cmd.ProcessState
	case <-time.After(waitTimeout):
		t.Fatalf("process still running after %s; log:\n%s", waitTimeout, c.log.String())
		return nil
	}
}

func (c *child) addr(t *testing.T) string {
	t.Helper()
	return c.log.waitFor(t, listeningRe, c.done)[1]
}

// vmRSS reads the resident set size of pid from /proc, in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status (%v)", pid, s.Err())
	return 0
}

// TestBinary builds demoapp once and checks what only a real process shows: exit
// statuses, signals and resident memory.
func TestBinary(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the binary:", err)
	}
	bin := filepath.Join(t.TempDir(), "demoapp")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	t.Run("SIGTERMStopsGracefullyWithStatus0", func(t *testing.T) {
		t.Parallel()
		c := startChild(t, bin, "--listen", "127.0.0.1:0", "--name", "term")
		var info rootInfo
		getJSON(t, "http://"+c.addr(t)+"/", &info)
		if info.PID != c.cmd.Process.Pid || info.Name != "term" {
			t.Errorf("/ = %+v, want pid %d", info, c.cmd.Process.Pid)
		}
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if st := c.wait(t); st.ExitCode() != 0 {
			t.Errorf("exit %v, want 0; log:\n%s", st, c.log.String())
		}
		if !strings.Contains(c.log.String(), "shutting down") || !strings.HasSuffix(c.log.String(), " stopped\n") {
			t.Errorf("log:\n%s", c.log.String())
		}
	})

	t.Run("IgnoreSigtermNeedsSIGKILL", func(t *testing.T) {
		t.Parallel()
		c := startChild(t, bin, "--listen", "127.0.0.1:0", "--ignore-sigterm")
		addr := c.addr(t)
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// The log line proves the signal arrived; the process must still serve after it.
		c.log.waitFor(t, regexp.MustCompile(`ignoring SIGTERM`), c.done)
		if resp, body := do(t, newRequest(t, http.MethodGet, "http://"+addr+"/healthz", nil)); resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Errorf("/healthz after SIGTERM = %d %q", resp.StatusCode, body)
		}
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		st := c.wait(t)
		ws, ok := st.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("exit %v, want killed by SIGKILL", st)
		}
		if strings.Contains(c.log.String(), "shutting down") {
			t.Errorf("shut down on SIGTERM:\n%s", c.log.String())
		}
	})

	t.Run("MemoryIsResident", func(t *testing.T) {
		t.Parallel()
		const size = 64 << 20
		c := startChild(t, bin, "--listen", "127.0.0.1:0", "--memory", "64MiB")
		c.addr(t) // the memory is touched before the port opens
		if rss := vmRSS(t, c.cmd.Process.Pid); rss < size {
			t.Errorf("VmRSS %d bytes, want at least %d", rss, size)
		}
	})

	t.Run("FailAfterExitsWithStatus3", func(t *testing.T) {
		t.Parallel()
		c := startChild(t, bin, "--listen", "127.0.0.1:0", "--fail-after", "100ms")
		if st := c.wait(t); st.ExitCode() != 3 {
			t.Errorf("exit %v, want 3; log:\n%s", st, c.log.String())
		}
	})

	t.Run("BadFlagExitsWithStatus2", func(t *testing.T) {
		t.Parallel()
		c := startChild(t, bin, "--memory", "lots")
		if st := c.wait(t); st.ExitCode() != 2 {
			t.Errorf("exit %v, want 2; log:\n%s", st, c.log.String())
		}
		var exitErr *exec.ExitError
		if !errors.As(c.err, &exitErr) || !strings.Contains(c.log.String(), `size "lots"`) {
			t.Errorf("wait %v; log:\n%s", c.err, c.log.String())
		}
	})
}
