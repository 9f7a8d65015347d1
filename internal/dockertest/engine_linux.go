package dockertest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Engine is a Docker engine of the test's own: a second dockerd, beside the
// machine's, that the test may stop and start again (a real engine restart).
//
// It runs in network and mount namespaces of its own (unshare), so that it
// cannot touch the machine's networking: a dockerd started with --bridge none
// in the host's namespace deletes the host's docker0 bridge, which the
// machine's engine needs. Its containers therefore have no network reachable
// from the test (use --network none). It keeps everything under one directory:
// data-root (vfs storage: no overlay or FUSE needed), exec-root (where it
// starts its own containerd, since --containerd is not given), its socket, pid
// file and log. Cleanup removes its containers, stops it, kills what it left,
// unmounts and removes the directory, even when the test failed.
type Engine struct {
	// Host is the engine's address for reaper's paas.docker.hosts[].host.
	Host string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the running dockerd exits
}

// engineWait bounds a start (an engine ready to answer) and a stop of dockerd.
const engineWait = 60 * time.Second

// StartEngine starts a second engine for the test and waits until it answers.
// It skips the test when one cannot be started here (no dockerd or unshare,
// not root, dockerd failing), unless REAPER_REQUIRE_DOCKER=1, which makes that
// a failure.
func StartEngine(t testing.TB) *Engine {
	t.Helper()
	Require(t)
	unavailable := func(why string) {
		t.Helper()
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("dockertest: a second Docker engine cannot be started: %s, and %s=1", why, RequireEnv)
		}
		t.Skipf("dockertest: a second Docker engine cannot be started: %s (set %s=1 to fail instead of skipping)", why, RequireEnv)
	}
	for _, bin := range []string{"dockerd", "unshare"} {
		if _, err := exec.LookPath(bin); err != nil {
			unavailable(bin + " is not installed")
		}
	}
	if os.Geteuid() != 0 {
		unavailable("dockerd needs root, and the test runs as uid " + strconv.Itoa(os.Geteuid()))
	}
	// Short: the socket's path must fit in a sockaddr_un (108 bytes).
	dir, err := os.MkdirTemp("", "rtd")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Host: "unix://" + filepath.Join(dir, "docker.sock"), dir: dir}
	t.Cleanup(func() { e.cleanup(t) })
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.start(); err != nil {
		unavailable(err.Error())
	}
	return e
}

// start starts dockerd on the engine's directory and waits until it answers.
func (e *Engine) start() error {
	logf, err := os.OpenFile(filepath.Join(e.dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("unshare", "--net", "--mount", "--propagation", "private", "dockerd",
		"--host", e.Host, "--data-root", filepath.Join(e.dir, "data"), "--exec-root", filepath.Join(e.dir, "exec"),
		"--pidfile", filepath.Join(e.dir, "docker.pid"), "--config-file", filepath.Join(e.dir, "daemon.json"),
		"--bridge", "none", "--iptables=false", "--ip6tables=false", "--storage-driver", "vfs")
	cmd.Stdout, cmd.Stderr = logf, logf
	// If the test process dies without its cleanup, dockerd is told to stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting dockerd: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	e.cmd, e.done = cmd, done
	deadline := time.Now().Add(engineWait)
	for {
		if _, err := e.TryDocker("version", "--format", "{{.Server.Version}}"); err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("dockerd exited at once (%v); its log ends:\n%s", cmd.ProcessState, e.logTail())
		case <-time.After(100 * time.Millisecond): // a poll with a deadline
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd did not answer within %s; its log ends:\n%s", engineWait, e.logTail())
		}
	}
}

// stop sends SIGTERM to dockerd and waits for it to exit (it stops its
// containers and its containerd first); SIGKILL after engineWait.
func (e *Engine) stop() error {
	if e.cmd == nil {
		return nil
	}
	defer func() { e.cmd = nil }()
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
		return nil
	case <-time.After(engineWait):
		_ = e.cmd.Process.Kill()
		<-e.done
		return fmt.Errorf("dockerd did not exit within %s of SIGTERM: killed", engineWait)
	}
}

// Restart stops the engine (SIGTERM, and waits for its exit) and starts it
// again on the same directories, as a machine's engine restarts: containers
// whose restart policy says so come back. It returns once the engine answers.
func (e *Engine) Restart(t testing.TB) {
	t.Helper()
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
	if err := e.start(); err != nil {
		t.Fatal(err)
	}
}

// Docker runs the docker CLI against this engine; it fails the test on an error.
func (e *Engine) Docker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := e.TryDocker(args...)
	if err != nil {
		t.Fatalf("docker -H %s %s: %v", e.Host, strings.Join(args, " "), err)
	}
	return out
}

// TryDocker runs the docker CLI against this engine.
func (e *Engine) TryDocker(args ...string) (string, error) {
	return TryDocker(append([]string{"-H", e.Host}, args...)...)
}

// Load copies an image of the machine's engine (BuildImage's) into this one.
func (e *Engine) Load(t testing.TB, image string) {
	t.Helper()
	save := exec.Command("docker", "save", image)
	load := exec.Command("docker", "-H", e.Host, "load", "-q")
	pipe, err := save.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	load.Stdin = pipe
	var saveErr, loadOut bytes.Buffer
	save.Stderr, load.Stdout, load.Stderr = &saveErr, &loadOut, &loadOut
	if err := save.Start(); err != nil {
		t.Fatal(err)
	}
	lerr := load.Run()
	serr := save.Wait()
	if serr != nil || lerr != nil {
		t.Fatalf("docker save %s | docker -H %s load: %v %s / %v %s", image, e.Host, serr, saveErr.String(), lerr, loadOut.String())
	}
}

// ContainerEvents returns the actions (start, die, stop, …) of the
// container's events from since until now, oldest first. The engine keeps its
// events in memory: those from before a restart are gone.
func (e *Engine) ContainerEvents(t testing.TB, name string, since time.Time) []string {
	t.Helper()
	out := e.Docker(t, "events", "--since", strconv.FormatInt(since.Unix(), 10), "--until", strconv.FormatInt(time.Now().Unix()+1, 10),
		"--filter", "container="+name, "--filter", "type=container", "--format", "{{.Action}}")
	return strings.Fields(out)
}

func (e *Engine) logTail() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// cleanup removes the engine's containers, stops it, kills any process it left
// (found by its directory in their command line: none but ours has it),
// unmounts what it left mounted and removes its directory.
func (e *Engine) cleanup(t testing.TB) {
	if e.cmd != nil {
		if t.Failed() {
			t.Logf("the second engine's log ends:\n%s", e.logTail())
		}
		if ids, err := e.TryDocker("ps", "-aq"); err == nil && ids != "" {
			_, _ = e.TryDocker(append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
		}
	}
	if err := e.stop(); err != nil {
		t.Error(err)
	}
	for _, pid := range processesUnder(e.dir) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	for _, m := range mountsUnder(e.dir) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", m, err)
		}
	}
	if err := os.RemoveAll(e.dir); err != nil {
		t.Errorf("removing the second engine's directory: %v", err)
	}
}

// processesUnder lists the processes whose command line names dir.
func processesUnder(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte(dir+"/")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder lists this namespace's mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			out = append(out, fields[4])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
