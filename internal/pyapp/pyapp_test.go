package pyapp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// start runs the app on a free port and waits until it accepts connections; it
// is killed in t.Cleanup.
func start(t *testing.T, a App) (addr string, cmd *exec.Cmd) {
	t.Helper()
	a.Addr = freeport.Addr(t)
	cmd = run(t, a)
	waitListening(t, a.Addr)
	return a.Addr, cmd
}

// run starts the app as Command says; it is killed in t.Cleanup.
func run(t *testing.T, a App) *exec.Cmd {
	t.Helper()
	argv, err := Command(Require(t), t.TempDir(), a)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	testwait.For(t, 10*time.Second, "the app to listen on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// dial opens a connection to addr, closed in t.Cleanup, that gives up after 10 s.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn
}

func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s %v", resp.StatusCode, b, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
}

type upload struct {
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

func TestApp_AnswersGETAndPOSTOnOneKeepAliveConnection(t *testing.T) {
	addr, cmd := start(t, App{Name: "py"})
	dials := 0 // one request at a time: no lock needed
	var d net.Dialer
	tr := &http.Transport{MaxConnsPerHost: 1, DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials++
		return d.DialContext(ctx, network, a)
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Name        string `json:"name"`
		PID         int    `json:"pid"`
		ListeningAt string `json:"listening_at"`
	}
	decode(t, resp, &info)
	if info.Name != "py" || info.PID != cmd.Process.Pid || info.ListeningAt == "" {
		t.Errorf("GET / = %+v, want name py, pid %d", info, cmd.Process.Pid)
	}

	body := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16)
	sum := sha256.Sum256(body)
	for _, chunked := range []bool{false, true} {
		var r io.Reader = bytes.NewReader(body)
		if chunked {
			r = struct{ io.Reader }{r} // no length known: net/http sends it chunked
		}
		resp, err := c.Post("http://"+addr+"/upload", "application/octet-stream", r)
		if err != nil {
			t.Fatal(err)
		}
		var up upload
		decode(t, resp, &up)
		if up.Bytes != len(body) || up.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("chunked %v: the app read %d bytes (%s), want %d", chunked, up.Bytes, up.SHA256, len(body))
		}
	}
	if dials != 1 {
		t.Errorf("%d connections for three requests, want one (keep-alive)", dials)
	}

	resp, err = c.Get("http://" + addr + "/_stats")
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]int
	decode(t, resp, &st)
	if st["connections_peak"] != 1 || st["requests_peak"] != 1 || st["requests"] != 3 {
		t.Errorf("stats %v, want one connection, one request at a time, three answered before", st)
	}
}

// TestApp_ReadsChunkExtensionsAndTrailers sends what a Go client does not: chunk
// extensions, a trailer, then a second request on the same connection, which must
// start right after the body.
func TestApp_ReadsChunkExtensionsAndTrailers(t *testing.T) {
	addr, _ := start(t, App{})
	conn := dial(t, addr)
	fmt.Fprint(conn, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n"+
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	var up upload
	decode(t, resp, &up)
	sum := sha256.Sum256([]byte("hello world"))
	if up.Bytes != 11 || up.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the app read %+v, want 11 bytes of hello world", up)
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the next request: %d", resp.StatusCode)
	}
}

func TestApp_RefusesABrokenChunkedBody(t *testing.T) {
	addr, _ := start(t, App{})
	conn := dial(t, addr)
	fmt.Fprint(conn, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || !resp.Close {
		t.Errorf("%d, close %v; want 400 and the connection closed", resp.StatusCode, resp.Close)
	}
}

func TestApp_OpensItsPortAfterTheBootDelay(t *testing.T) {
	a := App{Addr: freeport.Addr(t), BootDelay: 1500 * time.Millisecond}
	begin := time.Now()
	run(t, a)
	waitListening(t, a.Addr)
	if waited := time.Since(begin); waited < time.Second {
		t.Errorf("the port opened %v after the start, before the boot delay", waited)
	}
}

func TestCommand_WritesTheScriptAndNamesItsFlags(t *testing.T) {
	dir := t.TempDir()
	argv, err := Command("/usr/bin/python3", dir, App{Addr: "127.0.0.1:3001", Name: "py", BootDelay: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/usr/bin/python3", "-I", filepath.Join(dir, "pyapp.py"), "--listen", "127.0.0.1:3001", "--name", "py", "--boot-delay", "1.5"}
	if !slices.Equal(argv, want) {
		t.Errorf("command line %q, want %q", argv, want)
	}
	if b, err := os.ReadFile(want[2]); err != nil || !bytes.Equal(b, script) {
		t.Errorf("the script was not written whole: %v", err)
	}
}

// TestBacklog_IsTheScripts keeps the Go constant and the script's in step.
func TestBacklog_IsTheScripts(t *testing.T) {
	if want := fmt.Sprintf("\nBACKLOG = %d\n", Backlog); !strings.Contains(string(script), want) {
		t.Errorf("app.py does not say %q", strings.TrimSpace(want))
	}
}
