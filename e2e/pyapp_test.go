package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/pyapp"
	"github.com/reapergw/reaper/internal/testwait"
)

// TestReaper_PythonApp_ChunkedPOSTAfterACrowdAndASleepReachesTheApp replays the
// first report of issue 10 with the report's app (internal/pyapp: Python's
// http.server, a thread per connection, a listen backlog of 5): 50 concurrent GETs
// wake it, it goes back to sleep after its grace period, then one POST with a 1 MiB
// chunked body wakes it again. The POST got 502 "the backend closed the connection
// or sent an invalid response": it rode a connection to the app opened during the
// crowd and kept idle across the sleep, dead without reaper knowing, and its body,
// streamed, could not be sent again.
func TestReaper_PythonApp_ChunkedPOSTAfterACrowdAndASleepReachesTheApp(t *testing.T) {
	python := pyapp.Require(t)
	dir := t.TempDir()
	addr := freeport.Addr(t)
	// A boot long enough for the 50 GETs to be held together, then released as a crowd.
	argv, err := pyapp.Command(python, dir, pyapp.App{Addr: addr, Name: "py", BootDelay: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(reaperConfig(app{id: "py", addr: addr, command: argv}), "grace_period: 60s", "grace_period: 1s", 1)
	p := startReaper(t, dir, cfg)
	sleeps := func() int {
		n := 0
		for _, l := range p.logs() {
			if l["msg"] == "app status changed" && l["app"] == "py" && l["to"] == "Down" {
				n++
			}
		}
		return n
	}
	testwait.For(t, 10*time.Second, "the app is Down", func() bool { return sleeps() == 1 })
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	send := func(method, id string, body io.Reader) (int, []byte, error) {
		req, err := http.NewRequest(method, p.url("/upload"), body)
		if err != nil {
			return 0, nil, err
		}
		req.Host = "py.test"
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-Request-Id", id)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}

	// 50 concurrent GETs wake it.
	begin := time.Now()
	seen := crowd(t, 50, func(i int) (int, error) {
		code, body, err := send("GET", fmt.Sprintf("get-%d", i), nil)
		var ans appAnswer
		if err != nil || code != 200 || json.Unmarshal(body, &ans) != nil || ans.PID == 0 {
			return 0, fmt.Errorf("GET: %d %.200s %v", code, body, err)
		}
		return ans.PID, nil
	})
	if len(seen) != 1 {
		t.Fatalf("the GETs were answered by %d processes (%v), want one", len(seen), seen)
	}
	var first int
	for pid := range seen {
		first = pid
	}
	t.Logf("%d GETs answered 200 by pid %d in %v; the app saw %s", seen[first], first, time.Since(begin).Round(time.Millisecond), appStats(t, addr))

	// It goes back to sleep.
	testwait.For(t, 15*time.Second, "the app to sleep again", func() bool { return sleeps() == 2 && !alive(first) })
	t.Logf("asleep again %v after the GETs began", time.Since(begin).Round(time.Millisecond))

	// One POST with a 1 MiB chunked body wakes it again.
	body := make([]byte, 1<<20)
	rand.Read(body)
	sum := sha256.Sum256(body)
	posted := time.Now()
	// Wrapped so that the client sends it chunked, with no Content-Length.
	code, answer, err := send("POST", "post", struct{ io.Reader }{bytes.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("POST: %d %s after %v", code, bytes.TrimSpace(answer), time.Since(posted).Round(time.Millisecond))
	var up struct {
		Bytes  int    `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	if code != 200 || json.Unmarshal(answer, &up) != nil {
		t.Errorf("POST after the sleep: %d %s, want the app's 200", code, bytes.TrimSpace(answer))
	} else if up.Bytes != len(body) || up.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the app read %d bytes (%s), want %d intact (%x)", up.Bytes, up.SHA256, len(body), sum)
	}

	if got := starts(p, "py"); got != 2 {
		t.Errorf("the app was started %d times, want 2 (the GETs' wake, the POST's)", got)
	}
	// Every line before the POST's access line has been read once it has.
	p.waitLog(func(l map[string]any) bool { return l["msg"] == "access" && l["client_request_id"] == "post" }, 10*time.Second)
	for _, l := range p.logs() {
		if l["msg"] == "backend failed" {
			t.Errorf("reaper logged a backend failure: %v", l)
		}
	}
}

// appStats asks the Python app at addr, directly, what it has seen.
func appStats(t *testing.T, addr string) string {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/_stats")
	if err != nil {
		return "(no stats: " + err.Error() + ")"
	}
	var st struct {
		Conns    int `json:"connections_peak"`
		Requests int `json:"requests"`
	}
	if body := readAll(t, resp); json.Unmarshal([]byte(body), &st) != nil {
		return "(no stats: " + body + ")"
	}
	return fmt.Sprintf("%d requests, at most %d connections at once", st.Requests, st.Conns)
}
