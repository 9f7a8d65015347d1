package trigger

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/reapergw/reaper/internal/logtest"
)

// Each call to the producer endpoint has one access line, in the gateway's
// format, through the logger it is given: the app, what the call did and the
// status; never the token, nor the query.
func TestEndpoint_EachCallHasItsAccessLine(t *testing.T) {
	const secret = "a-query-secret-of-some-length"
	rr := run(t, Config{ID: "orders", Wake: "worker", Token: producerToken},
		Config{ID: "reports", Wake: "reporter", Token: producerToken + "-2"})
	var access logtest.Buffer
	e := NewEndpoint(rr.Runner, EndpointOptions{CallsPerMinute: 5, AccessLog: slog.New(slog.NewJSONHandler(&access, nil)),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	h := e.Wrap(http.NotFoundHandler())
	call := func(method, path, auth, addr string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = addr
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}

	rr.wakes.setAsked(false) // reporter is up
	call("POST", WakePathPrefix+"reports?token="+secret, "Bearer "+producerToken+"-2", "192.0.2.1:1000")
	rr.wakes.setAsked(true)
	w := call("POST", WakePathPrefix+"orders", "Bearer "+producerToken, "10.0.0.5:1000",
		"X-Request-Id", "req-42", "X-Forwarded-For", "198.51.100.9")
	call("POST", WakePathPrefix+"orders", "Bearer not-the-token-at-all-0000", "192.0.2.2:1000")
	call("POST", WakePathPrefix+"no-such-trigger", "Bearer "+producerToken, "192.0.2.3:1000")
	call("GET", WakePathPrefix+"orders", "Bearer "+producerToken, "192.0.2.4:1000")
	for range 5 {
		call("POST", WakePathPrefix+"reports", "Bearer "+producerToken+"-2", "192.0.2.5:1000")
	}
	call("POST", WakePathPrefix+"reports", "Bearer "+producerToken+"-2", "192.0.2.5:1000") // the 6th in a minute
	call("POST", "/elsewhere", "", "192.0.2.6:1000")                                       // the gateway's, not the endpoint's

	if got := w.Header().Get("X-Request-Id"); got != "req-42" {
		t.Errorf("the answer's X-Request-Id %q, want the trusted proxy's req-42", got)
	}
	var lines []map[string]any
	for line := range strings.Lines(access.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q", line)
		}
		lines = append(lines, m)
	}
	want := []struct {
		path, app, outcome string
		status             float64
	}{
		{"/.well-known/reaper/wake/reports", "reporter", "already up or waking", 202},
		{"/.well-known/reaper/wake/orders", "worker", "woken", 202},
		{"/.well-known/reaper/wake/orders", "worker", "refused: unauthorized (a wrong or missing token, or no such trigger)", 401},
		{"/.well-known/reaper/wake/no-such-trigger", "", "refused: unauthorized (a wrong or missing token, or no such trigger)", 401},
		{"/.well-known/reaper/wake/orders", "", "refused: use POST", 405},
	}
	if len(lines) != len(want)+6 {
		t.Fatalf("%d access lines for %d calls to the endpoint:\n%s", len(lines), len(want)+6, access.String())
	}
	for i, wl := range want {
		l := lines[i]
		if l["msg"] != "access" || l["path"] != wl.path || l["app"] != wl.app || l["outcome"] != wl.outcome || l["status"] != wl.status {
			t.Errorf("line %d: %v\nwant path %s, app %q, outcome %q, status %v", i+1, l, wl.path, wl.app, wl.outcome, wl.status)
		}
		for _, k := range []string{"request_id", "route", "method", "host", "bytes", "duration", "upstream", "client"} {
			if _, ok := l[k]; !ok {
				t.Errorf("line %d has no %s, as the gateway's lines do: %v", i+1, k, l)
			}
		}
	}
	if l := lines[1]; l["request_id"] != "req-42" || l["client"] != "198.51.100.9" || l["method"] != "POST" {
		t.Errorf("behind a trusted proxy: %v; want its request id and the client it forwards for", l)
	}
	if l := lines[len(lines)-1]; l["status"] != float64(429) || l["outcome"] != "refused: too many calls from this client" || l["app"] != "" {
		t.Errorf("the call past the limit: %v", l)
	}
	for _, s := range []string{producerToken, secret, "Bearer", "not-the-token"} {
		if strings.Contains(access.String()+rr.logs.String(), s) {
			t.Errorf("the log shows %q:\n%s", s, access.String())
		}
	}
}
