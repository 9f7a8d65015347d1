package trigger

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

// The http trigger: 204 is no work, 200 work, anything else a failure whose
// error never quotes the URL's query (it may hold a token).
func TestHTTP_200Wakes204DoesNotOtherFails(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusNoContent)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(srv.Close)
	rr := run(t, Config{ID: "hook", Wake: "worker", Every: conf.Duration(150 * time.Millisecond),
		HTTP: &HTTP{URL: conf.Secret(srv.URL + "/work?token=hush-hush")}})
	rr.awaitChecks(t, "hook", ResultNone, 2)
	rr.wakes.none(t, "204")

	status.Store(http.StatusInternalServerError)
	rr.awaitChecks(t, "hook", ResultError, 1)
	rr.wakes.none(t, "500")
	if v := rr.Views()[0]; !strings.Contains(v.LastError, "GET answered 500") {
		t.Errorf("last error %q, want the status", v.LastError)
	}

	status.Store(http.StatusOK)
	if w := rr.wakes.next(t, 20*time.Second, "200"); w.id != "worker" || w.by != "trigger hook" {
		t.Fatalf("woke %+v", w)
	}
	srv.Close() // now the GET cannot connect
	rr.awaitChecks(t, "hook", ResultError, 2)
	if v := rr.Views()[0]; strings.Contains(v.LastError, "hush-hush") || strings.Contains(rr.logs.String(), "hush-hush") {
		t.Errorf("the URL's token shows: %q\n%s", v.LastError, rr.logs.String())
	}
}

// post calls the producer endpoint as a client at addr.
func post(t *testing.T, h http.Handler, path, auth, addr string) (int, http.Header, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, nil)
	req.RemoteAddr = addr
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, w.Result().Header, string(b)
}

const producerToken = "a-producer-token-of-some-length"

func endpointOf(t *testing.T, opts EndpointOptions) (*running, http.Handler) {
	t.Helper()
	rr := run(t, Config{ID: "orders", Wake: "worker", Token: producerToken},
		Config{ID: "q", Wake: "worker", Every: conf.Duration(time.Hour), HTTP: &HTTP{URL: "http://127.0.0.1:1/"}})
	e := NewEndpoint(rr.Runner, opts)
	if e == nil {
		t.Fatal("no endpoint for a trigger with a token")
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	return rr, e.Wrap(next)
}

// The right token wakes; a wrong token and an unknown id get the same 401,
// word for word, which names neither; other paths go on to the gateway.
func TestEndpoint_RightTokenWakesWrongTokenAndUnknownIDLookAlike(t *testing.T) {
	rr, h := endpointOf(t, EndpointOptions{})
	code, _, body := post(t, h, WakePathPrefix+"orders", "Bearer "+producerToken, "192.0.2.1:1000")
	if code != http.StatusAccepted || !strings.Contains(body, `"asked": true`) {
		t.Fatalf("right token: %d %s", code, body)
	}
	if w := rr.wakes.next(t, 5*time.Second, "the right token"); w.id != "worker" || w.by != "trigger orders" {
		t.Fatalf("woke %+v", w)
	}
	codeW, hdrW, bodyW := post(t, h, WakePathPrefix+"orders", "Bearer not-the-token-at-all-0000", "192.0.2.2:1000")
	codeU, hdrU, bodyU := post(t, h, WakePathPrefix+"no-such-trigger", "Bearer "+producerToken, "192.0.2.3:1000")
	codeQ, _, bodyQ := post(t, h, WakePathPrefix+"q", "Bearer "+producerToken, "192.0.2.4:1000") // a polling trigger's id
	codeN, _, bodyN := post(t, h, WakePathPrefix+"orders", "", "192.0.2.5:1000")
	for _, c := range []struct {
		name string
		code int
		body string
	}{{"unknown id", codeU, bodyU}, {"a polling trigger's id", codeQ, bodyQ}, {"no token", codeN, bodyN}} {
		if c.code != codeW || c.body != bodyW {
			t.Errorf("%s: %d %s; a wrong token: %d %s: they must not differ", c.name, c.code, c.body, codeW, bodyW)
		}
	}
	if codeW != http.StatusUnauthorized || hdrW.Get("WWW-Authenticate") != hdrU.Get("WWW-Authenticate") {
		t.Errorf("wrong token: %d, WWW-Authenticate %q vs %q", codeW, hdrW.Get("WWW-Authenticate"), hdrU.Get("WWW-Authenticate"))
	}
	for _, word := range []string{"orders", "no-such", "token", "exist"} {
		if strings.Contains(bodyW, word) {
			t.Errorf("the 401 says %q: %s", word, bodyW)
		}
	}
	rr.wakes.none(t, "refused calls")
	if n := rr.counts.refusedFor(RefusedUnauthorized); n != 4 {
		t.Errorf("%d refusals counted, want 4", n)
	}
	if code, _, _ := post(t, h, "/anything", "", "192.0.2.1:1000"); code != http.StatusTeapot {
		t.Errorf("another path: %d, want the gateway's answer", code)
	}
	req := httptest.NewRequest(http.MethodGet, WakePathPrefix+"orders", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", w.Code)
	}
	if strings.Contains(rr.logs.String(), producerToken) {
		t.Errorf("the token is in the log:\n%s", rr.logs.String())
	}
}

// Past its calls a client gets 429 with Retry-After, the right token or not;
// past its failures too, and then even the right token waits; other clients
// are not limited.
func TestEndpoint_RateLimitAnswers429(t *testing.T) {
	rr, h := endpointOf(t, EndpointOptions{CallsPerMinute: 3, FailuresBurst: 2, FailuresRefill: time.Hour})
	rr.wakes.setAsked(false) // the worker is up: calls ask nothing
	for i := range 3 {
		if code, _, body := post(t, h, WakePathPrefix+"orders", "Bearer "+producerToken, "192.0.2.1:1"); code != http.StatusAccepted {
			t.Fatalf("call %d: %d %s", i+1, code, body)
		}
	}
	code, hdr, _ := post(t, h, WakePathPrefix+"orders", "Bearer "+producerToken, "192.0.2.1:2")
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Fatalf("4th call in a minute: %d, Retry-After %q; want 429 with one", code, hdr.Get("Retry-After"))
	}
	// A guesser: two failures, then refused before its token is looked at.
	for range 2 {
		if code, _, _ := post(t, h, WakePathPrefix+"orders", "Bearer guess-guess-guess-guess", "198.51.100.7:1"); code != http.StatusUnauthorized {
			t.Fatalf("a wrong token: %d", code)
		}
	}
	if code, _, _ := post(t, h, WakePathPrefix+"orders", "Bearer "+producerToken, "198.51.100.7:1"); code != http.StatusTooManyRequests {
		t.Errorf("after its failures, the guesser's right token: %d, want 429", code)
	}
	if code, _, _ := post(t, h, WakePathPrefix+"orders", "Bearer "+producerToken, "203.0.113.9:1"); code != http.StatusAccepted {
		t.Errorf("another client: %d, want 202", code)
	}
	if n := rr.counts.refusedFor(RefusedRateLimited); n != 2 {
		t.Errorf("%d rate-limited calls counted, want 2", n)
	}
}

// Without a trigger that has a token, there is no endpoint: the path is the
// gateway's like any other.
func TestEndpoint_NoneWithoutATokenTrigger(t *testing.T) {
	rr := run(t, Config{ID: "q", Wake: "worker", HTTP: &HTTP{URL: "http://127.0.0.1:1/"}})
	if e := NewEndpoint(rr.Runner, EndpointOptions{}); e != nil {
		t.Fatal("an endpoint without a trigger that has a token")
	}
	var e *Endpoint
	if code, _, _ := post(t, e.Wrap(http.NotFoundHandler()), WakePathPrefix+"q", "Bearer "+producerToken, "192.0.2.1:1"); code != http.StatusNotFound {
		t.Fatalf("the path without an endpoint: %d, want the gateway's 404", code)
	}
}
