package process

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
)

// As `make clean` did: the app runs on, its pid file is deleted with the data
// directory, and the next reaper starts on the same configuration.
func TestAdopt_AppWithoutPidFileIsAdoptedByItsMarker(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := demo(t, "kept", freeport.Addr(t))
	a, _ := newDriver(t, dataDir, cfg)
	ra := watch(t, a)
	start(t, a, "kept")
	ra.untilState(t, "kept", paas.StateShouldBeUp)
	pid, _ := procOf(a, "kept")
	_ = a.Close()
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}

	b, blog := newDriver(t, dataDir, cfg)
	expectDeployment(t, observe(t, b, "kept"), paas.StateShouldBeUp, paas.DeploymentOK, "DEPLOY")
	if got, _ := procOf(b, "kept"); got != pid {
		t.Fatalf("adopted pid = %d, want %d", got, pid)
	}
	if !strings.Contains(blog.String(), `msg="found the app running without its pid file, proven by its REAPER_APP marker" app=kept`) {
		t.Errorf("the log does not say how the app was found:\n%s", blog)
	}
	rec, err := readPidFile(pidPath(b.pidDir, "kept"))
	if err != nil || rec.PID != pid {
		t.Errorf("pid file written again: %+v, %v; want pid %d", rec, err, pid)
	}
	stop(t, b, "kept")
	if running(pid) {
		t.Fatal("the adopted app survived Stop")
	}
}

// The pid file is deleted under a running app while a driver that does not know the
// app runs: when a request starts the app, its port answers already, and the
// program that holds it is the app itself, so it is adopted, Up, not an Error.
func TestStart_PortHeldByTheAppStartedEarlierIsAdopted(t *testing.T) {
	dataDir := t.TempDir()
	cfg := demo(t, "hello", freeport.Addr(t))
	b, _ := newDriver(t, dataDir, cfg) // before the app runs: nothing to adopt
	rb := watch(t, b)

	a, _ := newDriver(t, dataDir, cfg)
	ra := watch(t, a)
	start(t, a, "hello")
	ra.untilState(t, "hello", paas.StateShouldBeUp)
	pid, _ := procOf(a, "hello")
	_ = a.Close()
	if err := os.Remove(pidPath(b.pidDir, "hello")); err != nil {
		t.Fatal(err)
	}

	start(t, b, "hello")
	expectDeployment(t, observe(t, b, "hello"), paas.StateShouldBeUp, paas.DeploymentOK, "DEPLOY")
	if got, _ := procOf(b, "hello"); got != pid {
		t.Fatalf("adopted pid = %d, want %d", got, pid)
	}
	if n := countProcs(t, markerOf(cfg)); n != 1 {
		t.Errorf("%d processes of the app run, want 1", n)
	}
	if _, err := os.Stat(pidPath(b.pidDir, "hello")); err != nil {
		t.Errorf("the pid file was not written again: %v", err)
	}
	stop(t, b, "hello")
	expectDeployment(t, rb.untilState(t, "hello", paas.StateShouldBeDown), paas.StateShouldBeDown, paas.DeploymentOK, "UNDEPLOY")
	if running(pid) {
		t.Fatal("the adopted app survived Stop")
	}
}

// A program on the app's port that is not provably the app reaper started is never
// adopted, even when it looks like it: the Start fails, its cause names the port,
// the pid and why.
func TestStart_LookalikeOnThePortIsNotAdopted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		marker func(d *Driver) string
		flags  []string
		why    string
	}{
		{"the marker of another data directory", func(*Driver) string { return markerValue(dataDirKey(t.TempDir()), "hello") },
			nil, "it does not carry REAPER_APP for this data directory and app"},
		{"the marker of another app", func(d *Driver) string { return markerValue(d.key, "other") },
			nil, "it does not carry REAPER_APP for this data directory and app"},
		{"the right marker, another command", func(d *Driver) string { return markerValue(d.key, "hello") },
			[]string{"--boot-delay", "1ms"}, "it runs another command than the configured one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeport.Addr(t)
			cfg := demo(t, "hello", addr)
			d, _ := newDriver(t, "", cfg)
			pid := startForeign(t, append(cfg.Command, tc.flags...), MarkerEnv+"="+tc.marker(d), addr)

			err := d.Start(context.Background(), paas.App{ID: "hello"})
			if !errors.Is(err, paas.ErrStartFailed) {
				t.Fatalf("Start: %v, want paas.ErrStartFailed", err)
			}
			obs := observe(t, d, "hello")
			expectDeployment(t, obs, paas.StateShouldBeDown, paas.DeploymentFail, "DEPLOY")
			port := addr[strings.LastIndexByte(addr, ':')+1:]
			want := "another program holds its port (port " + port + ": pid " + strconv.Itoa(pid) + ", demoapp; not the app reaper started: " + tc.why + ")"
			if !strings.HasSuffix(obs.Deployment.Cause, want) {
				t.Errorf("cause = %q, want …%s", obs.Deployment.Cause, want)
			}
			if !running(pid) {
				t.Error("the program on the port was stopped")
			}
		})
	}
}

// startForeign starts command in a process group of its own, as reaper would but
// not by a driver, with env, and waits until it listens on addr; it is killed when
// the test ends.
func startForeign(t *testing.T, command []string, env, addr string) int {
	t.Helper()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = []string{env}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	testwait.For(t, waitLong, "the program to listen on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	return cmd.Process.Pid
}

func TestDataDirKey_NamesTheAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("data", 0o700); err != nil {
		t.Fatal(err)
	}
	if a, b := dataDirKey("./data"), dataDirKey(filepath.Join(dir, "data")+"/"); a != b || len(a) != 16 {
		t.Errorf("keys of one directory differ: %q, %q", a, b)
	}
	if dataDirKey("./data") == dataDirKey("./data2") {
		t.Error("two directories have the same key")
	}
}

func TestListeningOn_ReadsTheProcTable(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0BB9 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:0BB9 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0BBA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 100 0 0 10 0
`
	f := filepath.Join(t.TempDir(), "tcp")
	if err := os.WriteFile(f, []byte(table), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		port  int
		inode string
		uid   int
	}{{3001, "111", 1000}, {3002, "333", 0}, {3003, "", -1}} {
		inodes, uid := map[string]bool{}, -1
		listeningOn(f, tc.port, inodes, &uid)
		if len(inodes) != min(len(tc.inode), 1) || (tc.inode != "" && !inodes[tc.inode]) || uid != tc.uid {
			t.Errorf("port %d: inodes %v, uid %d; want %q (listening only), uid %d", tc.port, inodes, uid, tc.inode, tc.uid)
		}
	}
}

func TestReadyPort(t *testing.T) {
	for _, tc := range []struct {
		tcp, http string
		want      int
	}{
		{"127.0.0.1:3001", "", 3001},
		{"[::1]:8080", "", 8080},
		{"", "http://127.0.0.1:3002/healthz", 3002},
		{"", "http://localhost/healthz", 80},
		{"", "https://localhost/", 443},
		{"no-port", "", 0},
	} {
		s := spec{ready: ReadyConfig{TCP: tc.tcp, HTTP: tc.http}}
		if got, ok := s.readyPort(); got != tc.want || ok != (tc.want != 0) {
			t.Errorf("readyPort(%q, %q) = %d, %v; want %d", tc.tcp, tc.http, got, ok, tc.want)
		}
	}
}
