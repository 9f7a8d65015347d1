package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// rawExchange sends request, as written, on a new connection and returns the
// answer.
func rawExchange(t *testing.T, addr, request string) (*http.Response, string) {
	t.Helper()
	c := dialRaw(t, addr)
	defer c.Close()
	if _, err := c.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	resp, body, err := rawResponse(c, bufio.NewReader(c), 20*time.Second)
	if err != nil {
		t.Fatalf("%q: %v", firstLine(request), err)
	}
	return resp, body
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// reaperHeaderCase is one request with odd CleverCloud-Reaper header lines.
type reaperHeaderCase struct {
	name  string
	lines []string // header lines as written
}

// Malformed CleverCloud-Reaper headers. The protocol reads the first value of the
// header, its name and value in any case (net/http trims the spaces around it):
// "status" and "poll" are the only words; anything else — empty, 60 KB long, an
// unknown word, a comma-separated list — is an ordinary request. So status
// requests in any spelling get the 200 status JSON and never wake the app (quiet,
// asleep, is never started); the others get the route's 503 and wake it once
// (noisy, unavailable); a control character is refused by net/http (400). The
// header never reaches an app: the awake echo app sees none of these values.
func abuseReaperHeader(t *testing.T, table *abuseTable) {
	e := startAbuse(t, "")
	long := strings.Repeat("x", 60_000)
	statusCases := []reaperHeaderCase{
		{"lower case", []string{"CleverCloud-Reaper: status"}},
		{"upper case", []string{"CleverCloud-Reaper: STATUS"}},
		{"mixed case", []string{"CleverCloud-Reaper: sTaTuS"}},
		{"spaces around", []string{"CleverCloud-Reaper:    status   "}},
		{"name in lower case", []string{"clevercloud-reaper: status"}},
		{"name in upper case", []string{"CLEVERCLOUD-REAPER: Status"}},
		{"repeated, status first", []string{"CleverCloud-Reaper: status", "CleverCloud-Reaper: poll"}},
	}
	apiCases := []reaperHeaderCase{
		{"empty", []string{"CleverCloud-Reaper: "}},
		{"60 KB long", []string{"CleverCloud-Reaper: " + long}},
		{"unknown word", []string{"CleverCloud-Reaper: wake"}},
		{"word with a suffix", []string{"CleverCloud-Reaper: statusx"}},
		{"comma list", []string{"CleverCloud-Reaper: status, poll"}},
		{"repeated, unknown first", []string{"CleverCloud-Reaper: nope", "CleverCloud-Reaper: status"}},
	}
	n := 2*len(statusCases) + len(apiCases) + 2*4
	m := measure(t, e.p, "malformed reaper header", n)
	request := func(host, path string, lines []string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: application/json\r\n" + strings.Join(lines, "\r\n") + "\r\n\r\n"
	}

	for _, c := range statusCases {
		resp, body := rawExchange(t, e.p.gateway, request("quiet.test", "/", c.lines))
		var ans struct {
			Status       string `json:"status"`
			ReadyDelayMS *int64 `json:"ready_delay_ms"`
		}
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &ans) != nil || ans.Status != "Down" || ans.ReadyDelayMS == nil ||
			resp.Header.Get("CleverCloud-Reaper-Status") != "Down" {
			t.Errorf("status request, %s: %d %v %s; want 200 and the status JSON of Down", c.name, resp.StatusCode, resp.Header, body)
		}
	}
	for _, c := range apiCases {
		resp, body := rawExchange(t, e.p.gateway, request("noisy.test", "/", c.lines))
		var ans struct {
			Error string `json:"error"`
		}
		if resp.StatusCode != 503 || json.Unmarshal([]byte(body), &ans) != nil || ans.Error != "the application is waking up, retry later" ||
			resp.Header.Get("Retry-After") != "30" || resp.Header.Get("CleverCloud-Reaper-Status") == "" {
			t.Errorf("%s header: %d %v %s; want the 503 of an ordinary request for an app waking up", c.name, resp.StatusCode, resp.Header, body)
		}
	}
	// Wakes are asked at once: once noisy's is done, a wake asked for quiet
	// before it would have been too.
	if !testwait.Until(10*time.Second, func() bool { return starts(e.p, "noisy") > 0 }) {
		t.Errorf("ordinary requests did not wake the app")
	}
	if got := starts(e.p, "quiet"); got != 0 {
		t.Errorf("status requests started the app %d times, want 0", got)
	}
	if st := e.admin(t, "quiet")["status"]; st != "Down" {
		t.Errorf("after status requests the app is %v, want Down", st)
	}
	resp, body := rawExchange(t, e.p.gateway, request("noisy.test", "/", []string{"CleverCloud-Reaper: Poll"}))
	if resp.StatusCode != 503 || !strings.Contains(body, `"ready_delay_ms"`) || resp.Header.Get("Retry-After") != "30" {
		t.Errorf("poll request: %d %s; want the 503 status JSON", resp.StatusCode, body)
	}
	resp, body = rawExchange(t, e.p.gateway, request("quiet.test", "/", []string{"CleverCloud-Reaper: status\x01"}))
	if resp.StatusCode != 400 {
		t.Errorf("a control character in the value: %d %s; want net/http's 400", resp.StatusCode, body)
	}
	if got := starts(e.p, "noisy"); got != 1 {
		t.Errorf("ordinary requests started the app %d times, want 1", got)
	}

	// An awake app never sees the header, whatever its value; status still
	// answers from the gateway, poll goes to the app.
	if resp, body := rawExchange(t, e.p.gateway, request("echo.test", "/echo", nil)); resp.StatusCode != 200 {
		t.Fatalf("waking the echo app: %d %s", resp.StatusCode, body)
	}
	for _, v := range []string{"wake", "", long, "poll"} {
		resp, body := rawExchange(t, e.p.gateway, request("echo.test", "/echo", []string{"CleverCloud-Reaper: " + v}))
		var echo struct {
			Headers map[string][]string `json:"headers"`
		}
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &echo) != nil || echo.Headers == nil {
			t.Errorf("awake app, header %.20q: %d %.200s", v, resp.StatusCode, body)
			continue
		}
		if got, ok := echo.Headers["Clevercloud-Reaper"]; ok {
			t.Errorf("awake app, header %.20q: the app got CleverCloud-Reaper: %.40q", v, got)
		}
	}
	resp, body = rawExchange(t, e.p.gateway, request("echo.test", "/echo", []string{"CleverCloud-Reaper: STATUS"}))
	if resp.StatusCode != 200 || !strings.Contains(body, `"status":"Up"`) {
		t.Errorf("status request for an awake app: %d %s; want the gateway's status JSON", resp.StatusCode, body)
	}
	m.finish(table, 48<<20)
}

// Host variants on the plain route hello.localhost: a port, upper case and a
// trailing dot still match it (ports and case are ignored, and a fully qualified
// name is the same name); an absolute request URI names the host instead of the
// Host header; unknown hosts, an IP, the gateway's own address and an empty Host
// get the gateway's 404 "no route for this host and path"; a request without
// Host, with two, or with a malformed one gets net/http's 400. None of these
// hosts appears in the node's metrics.
func abuseHosts(t *testing.T, table *abuseTable) {
	e := startAbuse(t, "")
	cases := []struct {
		name, head string // head: the request line and the Host lines
		want       int    // 200: the hello route; 404: the gateway's no route; 400: net/http
	}{
		{"port", "GET / HTTP/1.1\r\nHost: hello.localhost:8080", 200},
		{"upper case", "GET / HTTP/1.1\r\nHost: HELLO.LOCALHOST", 200},
		{"trailing dot", "GET / HTTP/1.1\r\nHost: hello.localhost.", 200},
		{"all three", "GET / HTTP/1.1\r\nHost: Hello.LocalHost.:80", 200},
		{"HTTP/1.0 with a host", "GET / HTTP/1.0\r\nHost: hello.localhost", 200},
		{"absolute URI wins over Host", "GET http://hello.localhost/ HTTP/1.1\r\nHost: other.test", 200},
		{"two trailing dots", "GET / HTTP/1.1\r\nHost: hello.localhost..", 404},
		{"unknown host", "GET / HTTP/1.1\r\nHost: unknown.test", 404},
		{"a name below the route's", "GET / HTTP/1.1\r\nHost: www.hello.localhost", 404},
		{"IPv4", "GET / HTTP/1.1\r\nHost: 127.0.0.1", 404},
		{"the gateway's address", "GET / HTTP/1.1\r\nHost: " + e.p.gateway, 404},
		{"IPv6", "GET / HTTP/1.1\r\nHost: [::1]:8080", 404},
		{"empty", "GET / HTTP/1.1\r\nHost: ", 404},
		{"HTTP/1.0 without Host", "GET / HTTP/1.0", 404},
		{"HTTP/1.1 without Host", "GET / HTTP/1.1", 400},
		{"two Host headers", "GET / HTTP/1.1\r\nHost: hello.localhost\r\nHost: hello.localhost", 400},
		{"a space in the host", "GET / HTTP/1.1\r\nHost: hello localhost", 400},
		{"a 300-character host", "GET / HTTP/1.1\r\nHost: " + strings.Repeat("h", 300) + ".localhost", 404},
	}
	m := measure(t, e.p, "host variants", len(cases))
	for _, c := range cases {
		resp, body := rawExchange(t, e.p.gateway, c.head+"\r\nAccept: application/json\r\nConnection: close\r\n\r\n")
		switch {
		case resp.StatusCode != c.want:
			t.Errorf("%s: %d %q, want %d", c.name, resp.StatusCode, body, c.want)
		case c.want == 200 && body != "hello":
			t.Errorf("%s: %q, want the hello route's answer", c.name, body)
		case c.want == 404:
			var ans struct {
				Error     string `json:"error"`
				RequestID string `json:"request_id"`
			}
			if json.Unmarshal([]byte(body), &ans) != nil || ans.Error != "no route for this host and path" || ans.RequestID == "" {
				t.Errorf("%s: %q, want the gateway's JSON 404", c.name, body)
			}
		case c.want == 400 && !strings.HasPrefix(body, "400 Bad Request"):
			t.Errorf("%s: %q, want net/http's 400", c.name, body)
		}
	}
	// A browser asking for an unknown host gets the same 404 as a page.
	resp, body := rawExchange(t, e.p.gateway, "GET / HTTP/1.1\r\nHost: unknown.test\r\nAccept: text/html\r\n\r\n")
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "no route for this host and path") {
		t.Errorf("a browser for an unknown host: %d %v %.200s", resp.StatusCode, resp.Header, body)
	}
	// The hosts clients send never become metrics' labels (a flood of them would
	// add series without end).
	req, _ := http.NewRequest("GET", "http://"+e.p.admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+abuseToken)
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics := readAll(t, mresp)
	for _, host := range []string{"unknown.test", "www.hello", "hhhhhhhh", "other.test"} {
		if strings.Contains(metrics, host) {
			t.Errorf("/metrics mentions %q, a host a client sent", host)
		}
	}
	m.finish(table, 32<<20)
}
