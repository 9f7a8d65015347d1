package dashboard

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/ratelimit"
)

// doorDash is a dashboard behind a trusted proxy at 10.0.0.1, whose failures
// are logged in log.
func doorDash(t *testing.T) (*testDash, *logtest.Buffer) {
	t.Helper()
	td := newTestDash(t)
	var log logtest.Buffer
	d := New(Options{Token: testToken, API: td.api.handler(), Node: "n1", Store: "memory",
		Failures:       ratelimit.NewDoors(log.Logger(slog.LevelInfo)),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}})
	td.Dashboard, td.srv = d, d.Handler()
	return td, &log
}

// bearerCall calls the guarded API from peer, with X-Forwarded-For xff when
// not empty, and the token.
func bearerCall(td *testDash, peer, xff, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/api/apps", nil)
	r.RemoteAddr = peer
	if xff != "" {
		r.Header.Set("X-Forwarded-For", xff)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	td.Guard(td.api.handler()).ServeHTTP(w, r)
	return w
}

func TestGuard_WrongTokensAreRateLimitedPerClient(t *testing.T) {
	td, log := doorDash(t)
	const bad = "203.0.113.7:4000"
	for i := range ratelimit.DoorBurst {
		if res := bearerCall(td, bad, "", "guess"); res.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, res.Code)
		}
	}
	res := bearerCall(td, bad, "", testToken)
	if res.Code != http.StatusTooManyRequests || res.Header().Get("Retry-After") != "12" ||
		!strings.Contains(res.Body.String(), "too many failed attempts") {
		t.Fatalf("the right token past the limit: %d Retry-After %q %s, want 429, Retry-After 12",
			res.Code, res.Header().Get("Retry-After"), res.Body)
	}
	// Another client holding the token is not locked out, however often it calls.
	for range 3 * ratelimit.DoorBurst {
		if res := bearerCall(td, "198.51.100.20:1", "", testToken); res.Code != http.StatusOK {
			t.Fatalf("a client with the token: %d, want 200", res.Code)
		}
	}
	// The client is logged once (its first failure), with the door and the
	// count, never with what it sent.
	if n := log.Lines("failed attempts at the admin token", "client=203.0.113.7", `door="admin API token"`, "failed=1"); n != 1 {
		t.Errorf("the failures are not logged once:\n%s", log)
	}
	if strings.Contains(log.String(), "guess") || strings.Contains(log.String(), testToken) {
		t.Errorf("a token shows in the log:\n%s", log)
	}
}

func TestDoors_ShareOneBudgetPerClient(t *testing.T) {
	td, _ := doorDash(t)
	const peer = "198.51.100.9:1234"
	attempt := func(token string) int {
		form := td.do("GET", "/login", nil, nil)
		r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {token},
			csrfField: {fieldValue(t, form.Body.String(), "csrf")}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = peer
		r.AddCookie(cookieNamed(form.Result().Cookies(), loginCookie))
		w := httptest.NewRecorder()
		td.srv.ServeHTTP(w, r)
		return w.Code
	}
	// Three wrong sign-ins and two wrong tokens use up the budget of both.
	for range 3 {
		if code := attempt("nope"); code != http.StatusUnauthorized {
			t.Fatalf("wrong sign-in: %d", code)
		}
	}
	for range 2 {
		if res := bearerCall(td, peer, "", "nope"); res.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token: %d", res.Code)
		}
	}
	if code := attempt(testToken); code != http.StatusTooManyRequests {
		t.Errorf("sign-in after 5 failures at two doors: %d, want 429", code)
	}
	if res := bearerCall(td, peer, "", testToken); res.Code != http.StatusTooManyRequests {
		t.Errorf("token after 5 failures at two doors: %d, want 429", res.Code)
	}
}

func TestDoors_KeyOnTheClientBehindATrustedProxy(t *testing.T) {
	td, log := doorDash(t)
	const proxy = "10.0.0.1:5000"
	for range ratelimit.DoorBurst {
		bearerCall(td, proxy, "198.51.100.66", "guess")
	}
	if res := bearerCall(td, proxy, "198.51.100.66", testToken); res.Code != http.StatusTooManyRequests {
		t.Fatalf("the guessing client behind the proxy: %d, want 429", res.Code)
	}
	// Every other admin behind the same proxy still gets in.
	if res := bearerCall(td, proxy, "198.51.100.1", testToken); res.Code != http.StatusOK {
		t.Errorf("another client behind the proxy: %d, want 200 (one bad client locked every admin out)", res.Code)
	}
	if n := log.Lines("client=198.51.100.66"); n != 1 {
		t.Errorf("the log does not name the client behind the proxy:\n%s", log)
	}
	// An untrusted peer's X-Forwarded-For is its own invention: a new one on
	// every try does not escape the limit.
	const direct = "192.0.2.50:1"
	for i := range ratelimit.DoorBurst {
		bearerCall(td, direct, "198.51.100."+string(rune('1'+i)), "guess")
	}
	if res := bearerCall(td, direct, "198.51.100.200", testToken); res.Code != http.StatusTooManyRequests {
		t.Errorf("a direct client that forges X-Forwarded-For: %d, want 429", res.Code)
	}
	// IPv6: a whole /64 is one client.
	for i := range ratelimit.DoorBurst {
		bearerCall(td, "[2001:db8:5:6::"+string(rune('1'+i))+"]:1", "", "guess")
	}
	if res := bearerCall(td, "[2001:db8:5:6:ffff::9]:1", "", testToken); res.Code != http.StatusTooManyRequests {
		t.Errorf("another address of the same /64: %d, want 429", res.Code)
	}
}
