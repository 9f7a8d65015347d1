package reaper

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
)

// Held HTTP/1 requests wait parked (no goroutine) when the gateway parks; these
// tests run the reaper's answers through that path.

type clientReply struct {
	code   int
	body   string
	header http.Header
	err    error
}

// sendAll sends the requests concurrently, each on its own connection, and
// returns their answers in order.
func sendAll(url string, reqs ...func() *http.Request) <-chan []clientReply {
	out := make(chan []clientReply, 1)
	go func() {
		res := make([]clientReply, len(reqs))
		done := make(chan struct{})
		for i, mk := range reqs {
			go func() {
				defer func() { done <- struct{}{} }()
				client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
				r, err := client.Do(mk())
				if err != nil {
					res[i].err = err
					return
				}
				defer r.Body.Close()
				b, err := io.ReadAll(r.Body)
				res[i] = clientReply{code: r.StatusCode, body: string(b), header: r.Header, err: err}
			}()
		}
		for range reqs {
			<-done
		}
		out <- res
	}()
	return out
}

func get(url string) func() *http.Request {
	return func() *http.Request {
		r, _ := http.NewRequest("GET", url, nil)
		r.Header.Set("Accept", "application/json")
		return r
	}
}

func post(url, body string) func() *http.Request {
	return func() *http.Request {
		r, _ := http.NewRequest("POST", url, strings.NewReader(body))
		return r
	}
}

func answersIn(t *testing.T, ch <-chan []clientReply) []clientReply {
	t.Helper()
	select {
	case a := <-ch:
		for i, x := range a {
			if x.err != nil {
				t.Fatalf("request %d: %v", i, x.err)
			}
		}
		return a
	case <-time.After(15 * time.Second):
		t.Fatal("the requests were not answered")
		return nil
	}
}

func TestHold_ParkedRequestsAreReleasedWhenTheAppIsUp(t *testing.T) {
	rig := newHoldRig(t, true, "{app_id: app, ready_delay: 0}")
	url := rig.front.URL
	var reqs []func() *http.Request
	for i := range 10 {
		reqs = append(reqs, get(fmt.Sprintf("%s/get/%d", url, i)), post(fmt.Sprintf("%s/post/%d", url, i), fmt.Sprintf("body %d", i)))
	}
	ch := sendAll(url, reqs...)
	testwait.For(t, 5*time.Second, "20 requests parked", func() bool { return rig.gw.Parked() == 20 && rig.app.held.Load() == 20 })
	// The platform finishes the start once it was asked for it: finished
	// before, the app would be up without a start (a busy machine delays the
	// job's start past the parking).
	testwait.For(t, 5*time.Second, "the start call", func() bool { return rig.fake.Count("start", "app") == 1 })
	rig.fake.FinishStart("app")
	got := answersIn(t, ch)
	for i, a := range got {
		want := "from the app: "
		if i%2 == 1 {
			want += fmt.Sprintf("body %d", i/2)
		}
		if a.code != 200 || a.body != want {
			t.Errorf("request %d: %d %q, want 200 %q", i, a.code, a.body, want)
		}
	}
	if n := len(rig.received()); n != 20 {
		t.Errorf("the app received %d requests, want 20", n)
	}
	if n := rig.fake.Count("start", "app"); n != 1 {
		t.Errorf("%d starts, want 1", n)
	}
	testwait.For(t, 5*time.Second, "nothing held or parked", func() bool {
		return rig.gw.Parked() == 0 && rig.app.held.Load() == 0 && rig.app.inFlight.Load() == 0
	})
}

func TestHold_ParkedRequestPastFailTimeoutGets504(t *testing.T) {
	rig := newHoldRig(t, true, "{app_id: app, ready_delay: 0, fail_timeout: 300ms}")
	start := time.Now()
	got := answersIn(t, sendAll(rig.front.URL, get(rig.front.URL+"/slow")))
	if got[0].code != http.StatusGatewayTimeout || !strings.Contains(got[0].body, "did not wake up in time") {
		t.Errorf("answer %d %q", got[0].code, got[0].body)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("answered after %v, before the fail timeout", waited)
	}
	if rig.app.held.Load() != 0 || rig.gw.Parked() != 0 {
		t.Errorf("held %d, parked %d after the answer", rig.app.held.Load(), rig.gw.Parked())
	}
}

func TestHold_ParkedRequestsAreAnsweredWhenTheNodeShutsDown(t *testing.T) {
	rig := newHoldRig(t, true, "{app_id: app, ready_delay: 0}")
	ch := sendAll(rig.front.URL, get(rig.front.URL+"/a"), get(rig.front.URL+"/b"), post(rig.front.URL+"/c", "x"))
	testwait.For(t, 5*time.Second, "3 requests parked", func() bool { return rig.gw.Parked() == 3 })
	rig.engine.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rig.gw.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	// What the binary does next: shut the server down gracefully.
	if err := rig.front.Config.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for i, a := range answersIn(t, ch) {
		var body map[string]any
		_ = json.Unmarshal([]byte(a.body), &body)
		if a.code != http.StatusServiceUnavailable || a.header.Get("Retry-After") != "1" || body["error"] != "the gateway is restarting, retry" {
			t.Errorf("request %d: %d %v %q", i, a.code, a.header, a.body)
		}
	}
	if got := rig.received(); len(got) != 0 {
		t.Errorf("the app received %q", got)
	}
}

func TestHold_MaxHeldCountsParkedRequests(t *testing.T) {
	rig := newHoldRig(t, true, "{app_id: app, ready_delay: 0, max_held: 2}")
	first := sendAll(rig.front.URL, get(rig.front.URL+"/1"), get(rig.front.URL+"/2"))
	testwait.For(t, 5*time.Second, "2 requests parked", func() bool { return rig.gw.Parked() == 2 })
	third := answersIn(t, sendAll(rig.front.URL, get(rig.front.URL+"/3")))
	if third[0].code != http.StatusServiceUnavailable || !strings.Contains(third[0].body, "too many requests are waiting") {
		t.Errorf("third request: %d %q", third[0].code, third[0].body)
	}
	rig.fake.FinishStart("app")
	for i, a := range answersIn(t, first) {
		if a.code != 200 {
			t.Errorf("request %d: %d %q", i, a.code, a.body)
		}
	}
	got := rig.received()
	slices.Sort(got)
	if fmt.Sprint(got) != "[GET /1  GET /2 ]" {
		t.Errorf("the app received %q", got)
	}
}

func TestAdminAPI_ShowsTheRequestsHeldOnThisNode(t *testing.T) {
	rig := newHoldRig(t, true, "{app_id: app, ready_delay: 0}")
	h := (&AdminAPI{Engine: rig.engine, Store: rig.engine.store}).Handler()
	ch := sendAll(rig.front.URL, get(rig.front.URL+"/1"), get(rig.front.URL+"/2"))
	testwait.For(t, 5*time.Second, "2 requests parked", func() bool { return rig.gw.Parked() == 2 })
	if code, app, _ := call(t, h, "GET", "/api/apps/app", ""); code != 200 || app["held"] != float64(2) || app["in_flight"] != float64(2) {
		t.Errorf("while 2 wait: %d held %v in_flight %v", code, app["held"], app["in_flight"])
	}
	rig.fake.FinishStart("app")
	answersIn(t, ch)
	testwait.For(t, 5*time.Second, "nothing held", func() bool { return rig.app.held.Load() == 0 })
	if _, app, _ := call(t, h, "GET", "/api/apps/app", ""); app["held"] != float64(0) {
		t.Errorf("after the release: held %v", app["held"])
	}
}

// A client that sends the body of a held request too slowly is disconnected when
// the fail timeout passes: it keeps neither its place nor a goroutine past it.
func TestHold_ASlowBodyIsBoundedByTheFailTimeout(t *testing.T) {
	rig := newHoldRig(t, true, "{app_id: app, ready_delay: 0, fail_timeout: 300ms}")
	c, err := net.Dial("tcp", rig.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprint(c, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhalf.")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
		t.Fatalf("read %q, %v; want the connection closed with nothing written", got, err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("disconnected after %v, before the fail timeout", waited)
	}
	if rig.app.held.Load() != 0 || rig.gw.Parked() != 0 || len(rig.received()) != 0 {
		t.Errorf("held %d, parked %d, the app received %q", rig.app.held.Load(), rig.gw.Parked(), rig.received())
	}
}

// An app that crashed while the node believed it up: the request that finds its
// port closed is parked too, and sent again once the app is back, body intact.
func TestHold_ARequestRefusedByACrashedAppIsParkedThenSentAgain(t *testing.T) {
	addr := freeport.Addr(t) // the app is not listening: it crashed
	rig := &holdRig{}
	rig.start(t, true, "{app_id: app, ready_delay: 0}", "http://"+addr)
	// The app comes up; then it crashes, which the platform does not announce:
	// the node still believes it up when the next request finds its port closed.
	rig.fake.FinishStart("app")
	testwait.For(t, 5*time.Second, "the app is Up", func() bool { return rig.app.status() == StatusUp })
	rig.fake.SetQuietly("app", paastest.App{State: paas.StateShouldBeDown})

	ch := sendAll(rig.front.URL, post(rig.front.URL+"/order", "two coffees"))
	// Parked counts the request from the step that may park it: it may still wait
	// for the job's verdict (recheck) when the test goes on and the app comes
	// back, which that verdict must then see (downSince).
	testwait.For(t, 10*time.Second, "the refused request parked", func() bool { return rig.gw.Parked() == 1 })
	testwait.For(t, 5*time.Second, "a start asked", func() bool { return rig.fake.Count("start", "app") == 1 })
	app := &http.Server{Handler: rig}
	bl, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go app.Serve(bl) //nolint:errcheck // ends with the test
	defer app.Close()
	rig.fake.FinishStart("app")
	got := answersIn(t, ch)
	if got[0].code != 200 || got[0].body != "from the app: two coffees" {
		t.Errorf("answer %d %q", got[0].code, got[0].body)
	}
	if r := rig.received(); len(r) != 1 {
		t.Errorf("the app received %q", r)
	}
}
