package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
)

// listenerFile opens a listening socket as a service manager does, and returns
// its address and the file to hand over (the test keeps it open, as systemd does).
func listenerFile(t *testing.T) (string, *os.File) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // f is a duplicate: the socket stays open
	t.Cleanup(func() { f.Close() })
	return ln.Addr().String(), f
}

// traffic sends GETs to host through addr from several clients until stopped, and
// counts the answers and the failures.
type traffic struct {
	ok, failed atomic.Int64
	slowest    atomic.Int64 // nanoseconds
	pids       sync.Map     // app pid → true
	mu         sync.Mutex
	errs       []string
	stop       chan struct{}
	stopOnce   sync.Once
	wg         sync.WaitGroup
}

func sendTraffic(addr, host string, clients int) *traffic {
	tr := &traffic{stop: make(chan struct{})}
	for range clients {
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
		tr.wg.Go(func() {
			defer client.CloseIdleConnections()
			for {
				select {
				case <-tr.stop:
					return
				default:
				}
				tr.one(client, addr, host)
			}
		})
	}
	return tr
}

func (tr *traffic) one(client *http.Client, addr, host string) {
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.Host = host
	req.Header.Set("Accept", "application/json")
	began := time.Now()
	resp, err := client.Do(req)
	took := int64(time.Since(began))
	for cur := tr.slowest.Load(); took > cur && !tr.slowest.CompareAndSwap(cur, took); cur = tr.slowest.Load() {
	}
	if err == nil {
		var a appAnswer
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &a) == nil {
			tr.ok.Add(1)
			tr.pids.Store(a.PID, true)
			return
		}
		err = fmt.Errorf("status %d: %.100s", resp.StatusCode, body)
	}
	tr.failed.Add(1)
	tr.mu.Lock()
	if len(tr.errs) < 10 {
		tr.errs = append(tr.errs, err.Error())
	}
	tr.mu.Unlock()
}

func (tr *traffic) end() {
	tr.stopOnce.Do(func() { close(tr.stop) })
	tr.wg.Wait()
}

// With its sockets held by a service manager, reaper is restarted (as for an
// upgrade) under steady traffic to an awake app: not one request fails, and the app
// is adopted, not restarted.
func TestUpgrade_SocketActivationDropsNoRequest(t *testing.T) {
	a := app{id: "web", addr: freeport.Addr(t)}
	cfg := reaperConfig(a)
	dir := t.TempDir()
	addr, sock := listenerFile(t)
	p := startReaperOn(t, dir, cfg, "gateway", sock)
	if p.gateway != addr {
		t.Fatalf("reaper serves on %s, want the handed-over socket %s", p.gateway, addr)
	}
	if code, _, _ := getApp(t, p, "web.test"); code != 200 {
		t.Fatalf("first request: %d", code)
	}

	tr := sendTraffic(addr, "web.test", 4)
	defer tr.end()
	testwait.For(t, 20*time.Second, "answers before the restart", func() bool { return tr.ok.Load() >= 200 })
	p.signal(syscall.SIGTERM)
	if c := p.wait(15 * time.Second); c != 0 {
		t.Fatalf("exit %d", c)
	}
	before := tr.ok.Load()
	startReaperOn(t, dir, cfg, "gateway", sock)
	testwait.For(t, 20*time.Second, "answers after the restart", func() bool { return tr.ok.Load() >= before+200 })
	tr.end()

	if n := tr.failed.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed across the restart, e.g. %q", n, n+tr.ok.Load(), tr.errs)
	}
	pids := 0
	tr.pids.Range(func(any, any) bool { pids++; return true })
	if pids != 1 {
		t.Errorf("answers came from %d app processes, want 1 (the app adopted, not restarted)", pids)
	}
	t.Logf("%d requests answered across the restart, none failed; the slowest took %v (it waited for the new reaper)",
		tr.ok.Load(), time.Duration(tr.slowest.Load()))
}
