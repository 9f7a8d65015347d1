package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"github.com/reapergw/reaper/reaper"
)

const testSecret = "whsec-0123456789abcdef"

// receiver is a webhook's receiving end: it answers with the status its mode
// says, and keeps what it took (2xx), checking each signature.
type receiver struct {
	t  *testing.T
	mu sync.Mutex
	// answer says the status to answer a request for app with; 0: take it (200).
	answer func(app string) int
	got    []Payload // taken, in order
	tries  int
	closed bool // the connection is refused (no answer at all)
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := Verify([]byte(testSecret), req.Header.Get(HeaderSignature), body, time.Now(), 5*time.Minute); err != nil {
		r.t.Errorf("a delivery's signature: %v", err)
	}
	var p Payload
	if err := json.Unmarshal(body, &p); err != nil {
		r.t.Errorf("a delivery's body %q: %v", body, err)
	}
	if req.Header.Get(HeaderEventID) != p.ID || req.Header.Get(HeaderEventType) != p.Type {
		r.t.Errorf("headers %v do not match the body %s", req.Header, body)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries++
	if code := r.answer(p.AppID); code != 0 {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(code)
		return
	}
	r.got = append(r.got, p)
}

func (r *receiver) set(answer func(app string) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = answer
}

func (r *receiver) taken() []Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func always(code int) func(string) int { return func(string) int { return code } }

// RoundTrip serves the request in memory (inside a synctest bubble: no
// socket), or refuses it while closed.
func (r *receiver) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, &netError{"connect: connection refused"}
	}
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec.Result(), nil
}

type netError struct{ s string }

func (e *netError) Error() string { return e.s }

// outcomes counts what the observer was told, by outcome.
type outcomes struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *outcomes) WebhookDelivery(webhook, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[outcome]++
}

func (o *outcomes) get(outcome string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[outcome]
}

// testService is a service with one webhook ("ops") to r, on a memory store.
type testService struct {
	*Service
	store *reaper.MemStore
	obs   *outcomes
	logs  *logtest.Buffer
}

func newTestService(t *testing.T, r *receiver, mutate ...func(*Config)) *testService {
	t.Helper()
	store, err := reaper.NewMemStore(reaper.MemStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c := Config{Name: "ops", URL: "https://hooks.example.com/in/t0ken-in-the-path", Secret: testSecret}
	for _, m := range mutate {
		m(&c)
	}
	logs := &logtest.Buffer{}
	obs := &outcomes{}
	s := New(Options{Hooks: []Config{c}, Queue: store, Observer: obs, Client: &http.Client{Transport: r},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return &testService{Service: s, store: store, obs: obs, logs: logs}
}

// run runs the deliverer until the returned function is called.
func (s *testService) run() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	return func() { cancel(); <-done }
}

// hold is an operator's hold of app, the nth of the test.
func hold(app string, n int) reaper.Transition {
	at := time.Now()
	return reaper.Transition{AppID: app, From: reaper.StatusUp, To: reaper.StatusUp, Kind: reaper.EventHold, At: at,
		By: "ops", Cause: fmt.Sprint(n), Hold: &reaper.KeepWarm{Until: at.Add(time.Hour), Reason: fmt.Sprint(n), By: "ops", Since: at}}
}

// checkOncePerAppInOrder checks that got holds every event of sent once, and
// each app's in the order sent.
func checkOncePerAppInOrder(t *testing.T, got []Payload, sent []reaper.Transition) {
	t.Helper()
	ids := map[string]bool{}
	perApp := map[string][]string{}
	for _, p := range got {
		if ids[p.ID] {
			t.Errorf("event %s (%s %s) delivered twice", p.ID, p.AppID, p.Cause)
		}
		ids[p.ID] = true
		perApp[p.AppID] = append(perApp[p.AppID], p.Cause)
	}
	want := map[string][]string{}
	for _, s := range sent {
		want[s.AppID] = append(want[s.AppID], s.Cause)
	}
	for app, w := range want {
		if !slices.Equal(perApp[app], w) {
			t.Errorf("%s's events arrived as %q, want %q", app, perApp[app], w)
		}
	}
	if len(got) != len(sent) {
		t.Errorf("%d deliveries, want %d", len(got), len(sent))
	}
}

// A receiver down for 10 minutes (503, then no answer at all) gets every event
// once it is back: each once, each app's in order; the retries back off.
func TestDeliver_ReceiverDownForAWhileGetsEveryEventOnceInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &receiver{t: t, answer: always(503)}
		s := newTestService(t, r)
		stop := s.run()
		defer stop()
		var sent []reaper.Transition
		for i := range 30 {
			tr := hold([]string{"web", "api", "db"}[i%3], i)
			sent = append(sent, tr)
			s.Notify(t.Context(), tr, "")
			time.Sleep(20 * time.Second)
			if i == 15 {
				r.mu.Lock()
				r.closed = true
				r.mu.Unlock()
			}
		}
		if len(r.taken()) != 0 {
			t.Fatalf("a down receiver took %d events", len(r.taken()))
		}
		triesDown := r.tries
		r.mu.Lock()
		r.closed = false
		r.mu.Unlock()
		r.set(always(0))
		time.Sleep(6 * time.Minute) // at most one back-off (5 min ± 20%) later
		synctest.Wait()
		checkOncePerAppInOrder(t, r.taken(), sent)
		if evs, _ := s.store.Pending(t.Context(), "ops", 100); len(evs) != 0 {
			t.Errorf("%d events left in the queue", len(evs))
		}
		// Back-off: three apps, 10 minutes down; at most a few dozen tries.
		if triesDown > 60 {
			t.Errorf("%d attempts while the receiver was down for 10 minutes: no back-off?", triesDown)
		}
		if s.obs.get(OutcomeDelivered) != 30 || s.obs.get(OutcomeRetried) == 0 || s.obs.get(OutcomeDropped) != 0 {
			t.Errorf("outcomes %v", s.obs.n)
		}
		for _, bad := range []string{"t0ken-in-the-path", testSecret} {
			if strings.Contains(s.logs.String(), bad) {
				t.Errorf("the log holds %q:\n%s", bad, s.logs.String())
			}
		}
		if !strings.Contains(s.logs.String(), "the receiver takes events again") {
			t.Errorf("no line says the receiver is back:\n%s", s.logs.String())
		}
	})
}

// An app whose events the receiver fails does not hold up the other apps'.
func TestDeliver_OneAppFailingDoesNotBlockTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &receiver{t: t}
		r.set(func(app string) int {
			if app == "broken" {
				return 500
			}
			return 0
		})
		s := newTestService(t, r)
		stop := s.run()
		defer stop()
		s.Notify(t.Context(), hold("broken", 0), "")
		s.Notify(t.Context(), hold("broken", 1), "")
		var sent []reaper.Transition
		for i := range 5 {
			sent = append(sent, hold("web", i))
			s.Notify(t.Context(), sent[i], "")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		checkOncePerAppInOrder(t, r.taken(), sent)
	})
}

// An event the receiver keeps failing is dropped after max_age, counted; the
// app's next event goes then.
func TestDeliver_DroppedAfterMaxAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &receiver{t: t, answer: always(503)}
		s := newTestService(t, r, func(c *Config) { c.MaxAge = conf.Duration(10 * time.Minute) })
		stop := s.run()
		defer stop()
		s.Notify(t.Context(), hold("web", 0), "")
		time.Sleep(9 * time.Minute)
		second := hold("web", 1)
		s.Notify(t.Context(), second, "")
		time.Sleep(90 * time.Second)
		r.set(always(0))
		time.Sleep(6 * time.Minute)
		synctest.Wait()
		checkOncePerAppInOrder(t, r.taken(), []reaper.Transition{second})
		if s.obs.get(OutcomeDropped) != 1 || !strings.Contains(s.logs.String(), "not delivered within max_age; dropped") {
			t.Errorf("outcomes %v; log:\n%s", s.obs.n, s.logs.String())
		}
	})
}

// A 4xx other than 408 and 429 is a refusal: dropped at once, not retried; a
// 429 is retried.
func TestDeliver_RefusedIsDroppedRateLimitedIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &receiver{t: t}
		calls := map[string]int{}
		r.set(func(app string) int {
			calls[app]++
			switch {
			case app == "gone":
				return 410
			case app == "busy" && calls[app] <= 2:
				return 429
			}
			return 0
		})
		s := newTestService(t, r)
		stop := s.run()
		defer stop()
		s.Notify(t.Context(), hold("gone", 0), "")
		busy := hold("busy", 0)
		s.Notify(t.Context(), busy, "")
		time.Sleep(time.Minute)
		synctest.Wait()
		checkOncePerAppInOrder(t, r.taken(), []reaper.Transition{busy})
		if calls["gone"] != 1 || calls["busy"] != 3 || s.obs.get(OutcomeDropped) != 1 || s.obs.get(OutcomeRetried) != 2 {
			t.Errorf("calls %v, outcomes %v", calls, s.obs.n)
		}
	})
}

// The filters: a webhook gets the types and the apps it asks for.
func TestNotify_Filters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &receiver{t: t, answer: always(0)}
		s := newTestService(t, r, func(c *Config) {
			c.Events = []string{TypeStatus, TypeHold}
			c.Apps = []string{"web"}
		})
		for _, tr := range []reaper.Transition{
			hold("web", 0),
			hold("api", 1), // another app
			{AppID: "web", From: reaper.StatusUp, To: reaper.StatusUp, Kind: reaper.EventSleep},            // another type
			{AppID: "web", From: reaper.StatusWaitingForUp, To: reaper.StatusError, Cause: "start failed"}, // error: a status
		} {
			s.Notify(t.Context(), tr, "")
		}
		evs, err := s.store.Pending(t.Context(), "ops", 100)
		var types []string
		for _, ev := range evs {
			types = append(types, ev.Type+":"+ev.AppID)
		}
		if err != nil || !slices.Equal(types, []string{"hold:web", "error:web"}) {
			t.Errorf("queued %q, %v; want hold:web, error:web", types, err)
		}
	})
}

// A full queue drops its oldest events, and counts them.
func TestNotify_FullQueueDropsTheOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &receiver{t: t, answer: always(0)}
		s := newTestService(t, r, func(c *Config) { c.QueueLimit = 3 })
		for i := range 5 {
			s.Notify(t.Context(), hold("web", i), "")
		}
		evs, _ := s.store.Pending(t.Context(), "ops", 100)
		if len(evs) != 3 || evs[0].Cause != "2" || s.obs.get(OutcomeDropped) != 2 || !strings.Contains(s.logs.String(), "the queue is full") {
			t.Errorf("queue %+v, outcomes %v", evs, s.obs.n)
		}
	})
}

// failingQueue fails its calls while fail is set.
type failingQueue struct {
	reaper.EventQueue
	mu   sync.Mutex
	fail bool
}

func (q *failingQueue) failing() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.fail }

func (q *failingQueue) Ack(ctx context.Context, queue, id string) error {
	if q.failing() {
		return errors.New("store down")
	}
	return q.EventQueue.Ack(ctx, queue, id)
}

// A delivered event whose removal from the queue fails is not delivered
// again: the deliverer only removes it once the store answers.
func TestDeliver_AckFailureDoesNotDeliverTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &receiver{t: t, answer: always(0)}
		s := newTestService(t, r)
		q := &failingQueue{EventQueue: s.store, fail: true}
		s.opts.Queue = q
		stop := s.run()
		defer stop()
		sent := []reaper.Transition{hold("web", 0), hold("web", 1)}
		s.Notify(t.Context(), sent[0], "")
		time.Sleep(10 * time.Second)
		q.mu.Lock()
		q.fail = false
		q.mu.Unlock()
		s.Notify(t.Context(), sent[1], "")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		checkOncePerAppInOrder(t, r.taken(), sent)
	})
}

// The same over a real socket: a receiver whose port is closed, then open.
func TestDeliver_RealReceiverClosedThenUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connections are refused until the receiver starts
	store, err := reaper.NewMemStore(reaper.MemStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	obs := &outcomes{}
	s := New(Options{Hooks: []Config{{URL: conf.Secret("http://" + addr + "/hook"), Secret: testSecret}}, Queue: store, Observer: obs,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Poll: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var sent []reaper.Transition
	for i := range 6 {
		sent = append(sent, hold([]string{"web", "api"}[i%2], i))
		s.Notify(t.Context(), sent[i], "")
	}
	testwait.For(t, 5*time.Second, "a few failed attempts", func() bool { return obs.get(OutcomeRetried) >= 4 })

	r := &receiver{t: t, answer: always(0)}
	var srvLn net.Listener
	testwait.For(t, 5*time.Second, "the receiver's port", func() bool {
		srvLn, err = net.Listen("tcp", addr)
		return err == nil
	})
	srv := &http.Server{Handler: r}
	go srv.Serve(srvLn)
	defer srv.Close()
	testwait.For(t, 10*time.Second, "every event delivered", func() bool { return len(r.taken()) >= len(sent) })
	checkOncePerAppInOrder(t, r.taken(), sent)
}
