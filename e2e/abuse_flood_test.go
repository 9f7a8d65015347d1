package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A flood beyond max_held for an app that never wakes: the route holds 100
// requests; 400 more, sent at once, each get the documented 503 "too many
// requests are waiting" at once, while the 100 stay held; the app is started once.
func abuseFlood(t *testing.T, table *abuseTable) {
	const maxHeld, over = 100, 400
	e := startAbuse(t, "")
	m := measure(t, e.p, "flood beyond max_held", maxHeld+over)
	request := func(i int) string {
		return fmt.Sprintf("GET /f/%d HTTP/1.1\r\nHost: flood.test\r\nAccept: application/json\r\nX-Request-Id: flood-%d\r\n\r\n", i, i)
	}
	held := make([]net.Conn, maxHeld)
	for i := range held {
		held[i] = dialRaw(t, e.p.gateway)
		if _, err := held[i].Write([]byte(request(i))); err != nil {
			t.Fatal(err)
		}
	}
	e.waitHeld(t, "flood", maxHeld)

	type result struct {
		i      int
		status int
		header http.Header
		body   string
		took   time.Duration
		err    error
	}
	results := make(chan result, over)
	for i := maxHeld; i < maxHeld+over; i++ {
		c := dialRaw(t, e.p.gateway)
		go func() {
			defer c.Close()
			start := time.Now()
			if _, err := c.Write([]byte(request(i))); err != nil {
				results <- result{i: i, err: err}
				return
			}
			resp, body, err := rawResponse(c, bufio.NewReader(c), 20*time.Second)
			r := result{i: i, body: body, took: time.Since(start), err: err}
			if resp != nil {
				r.status, r.header = resp.StatusCode, resp.Header
			}
			results <- r
		}()
	}
	var slowest time.Duration
	bad := 0
	for range over {
		r := <-results
		slowest = max(slowest, r.took)
		var ans struct {
			Error     string `json:"error"`
			Status    string `json:"status"`
			RequestID string `json:"request_id"`
		}
		ok := r.err == nil && r.status == http.StatusServiceUnavailable && json.Unmarshal([]byte(r.body), &ans) == nil &&
			ans.Error == "too many requests are waiting for the application, retry later" &&
			ans.RequestID == r.header.Get("X-Request-Id") && ans.RequestID != fmt.Sprintf("flood-%d", r.i) && r.header.Get("Retry-After") == "30" &&
			r.header.Get("CleverCloud-Reaper-Status") == ans.Status && (ans.Status == "Down" || ans.Status == "WaitingForUp")
		if !ok {
			if bad < 5 {
				t.Errorf("request %d beyond max_held: %d %v %q %v", r.i, r.status, r.header, r.body, r.err)
			}
			bad++
		}
	}
	t.Logf("%d requests beyond max_held answered in %v at most", over, slowest.Round(time.Millisecond))
	if slowest > 5*time.Second {
		t.Errorf("a request beyond max_held waited %v for its 503: it should get it at once", slowest)
	}
	if got := e.held(t, "flood"); got != maxHeld {
		t.Errorf("%d held after the flood, want %d", got, maxHeld)
	}
	if got := starts(e.p, "flood"); got != 1 {
		t.Errorf("the app was started %d times, want 1", got)
	}
	e.hello(t)
	for _, c := range held {
		c.Close()
	}
	e.waitHeld(t, "flood", 0)
	m.finish(table, 48<<20)
}

// Oversized headers: 100 clients send a header line of 1 MiB, 100 others 100,000
// small headers (800 KB). Each gets net/http's 431 once max_header_bytes (64 KiB)
// is passed, then its connection is closed; the node never reads the rest.
func abuseOversizedHeaders(t *testing.T, table *abuseTable) {
	const each = 100
	e := startAbuse(t, "")
	m := measure(t, e.p, "oversized headers", 2*each)
	long := []byte("GET / HTTP/1.1\r\nHost: hello.localhost\r\nX-Long: " + strings.Repeat("a", 1<<20) + "\r\n\r\n")
	many := []byte("GET / HTTP/1.1\r\nHost: hello.localhost\r\n" + strings.Repeat("X-H: v\r\n", 100_000) + "\r\n")
	type result struct {
		what, statusLine, rest string
		closed                 bool
		err                    error
	}
	results := make(chan result, 2*each)
	for i := range 2 * each {
		what, payload := "1 MiB header line", long
		if i%2 == 1 {
			what, payload = "100k headers", many
		}
		c := dialRaw(t, e.p.gateway)
		// The write fails once the gateway closes: it stops reading at 64 KiB.
		go c.Write(payload)
		go func() {
			br := bufio.NewReader(c)
			resp, body, err := rawResponse(c, br, 10*time.Second)
			r := result{what: what, err: err}
			if resp != nil {
				r.statusLine = resp.Status + " " + body
				r.rest, r.closed = closedAfter(c, br, 5*time.Second)
			}
			results <- r
		}()
	}
	bad := 0
	for range 2 * each {
		r := <-results
		if r.err != nil || r.statusLine != "431 Request Header Fields Too Large 431 Request Header Fields Too Large" || !r.closed || r.rest != "" {
			if bad < 5 {
				t.Errorf("%s: %q %v, then closed %v (%q)", r.what, r.statusLine, r.err, r.closed, r.rest)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d clients with oversized headers did not get a 431 and a closed connection", bad, 2*each)
	}
	e.hello(t)
	m.finish(table, 48<<20)
}
