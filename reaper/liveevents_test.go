package reaper

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/paastest"
	"github.com/reapergw/reaper/plugin"
)

// sseEvent is one event a stream wrote, and when.
type sseEvent struct {
	name string // "" for a comment
	data map[string]any
	at   time.Time
}

// liveStream is an open live progress stream, as the plugin answers it, its
// body written to memory.
type liveStream struct {
	answer *plugin.Answer
	cancel context.CancelFunc
	done   chan struct{} // closed once Stream returned and the exchange ended

	mu     sync.Mutex
	events []sseEvent
}

// openStream asks the plugin for the app's live progress and, when it answers
// with a stream, runs it until ctx ends.
func openStream(t *testing.T, p *Plugin) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := do(ctx, p, httptest.NewRequest(http.MethodGet, WellKnownEventsPath, nil), true)
	s := &liveStream{answer: r.answer, cancel: cancel, done: make(chan struct{})}
	if r.err != nil || r.answer == nil {
		t.Fatalf("events: %v %v", r.answer, r.err)
	}
	if r.answer.Stream == nil {
		r.ex.Finish()
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		defer r.ex.Finish()
		r.answer.Stream(s, func() error { return nil })
	}()
	return s
}

// Write parses what the stream writes: one event or comment per write.
func (s *liveStream) Write(b []byte) (int, error) {
	ev := sseEvent{at: time.Now()}
	text := string(b)
	if !strings.HasSuffix(text, "\n\n") {
		return 0, fmt.Errorf("a write that is not one whole event: %q", text)
	}
	for line := range strings.Lines(strings.TrimSpace(text)) {
		line = strings.TrimSuffix(line, "\n")
		switch k, v, _ := strings.Cut(line, ": "); k {
		case "event":
			ev.name = v
		case "data":
			if err := json.Unmarshal([]byte(v), &ev.data); err != nil {
				return 0, fmt.Errorf("data %q: %w", v, err)
			}
		}
	}
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	return len(b), nil
}

func (s *liveStream) all() []sseEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sseEvent(nil), s.events...)
}

func (s *liveStream) last(t *testing.T) sseEvent {
	t.Helper()
	evs := s.all()
	if len(evs) == 0 {
		t.Fatal("the stream wrote nothing")
	}
	return evs[len(evs)-1]
}

func (s *liveStream) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// The stream follows the wake phase by phase, says "ready" only once the
// route's ready delay has passed since the node saw the app up (a reload then
// lands on the app), and ends there.
func TestLiveEvents_FollowTheWakeUntilReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true
		e := newEnv(t, fake, "")
		p := e.route(config("app", func(c *Config) { rd := conf.Duration(2 * time.Second); c.ReadyDelay = &rd }))
		e.start()
		defer e.stop()
		settle()
		if r := do(context.Background(), p, browserRequest(), false); r.status() != 503 ||
			!strings.Contains(string(r.answer.Body), `"events":"/.well-known/reaper/events"`) {
			t.Fatalf("the waiting page: %d, without its events URL", r.status())
		}
		settle()
		s := openStream(t, p)
		settle()
		first := s.last(t)
		if first.name != "state" || first.data["status"] != "WaitingForUp" || first.data["state"] != "waiting" ||
			first.data["asked_ms"] != 0.0 || first.data["accepted_ms"] == nil || first.data["up_ms"] != nil {
			t.Fatalf("first event %s %v; want the wake asked and its start accepted", first.name, first.data)
		}
		if s.answer.Header.Get("Content-Type") != "text/event-stream" || s.answer.Header.Get(HeaderStatus) != "WaitingForUp" {
			t.Errorf("header %v", s.answer.Header)
		}

		time.Sleep(3 * time.Second)
		fake.FinishStart("app")
		settle()
		up := s.last(t)
		if up.name != "state" || up.data["status"] != "Up" || up.data["state"] != "almost" || up.data["up_ms"] == nil || up.data["ready_ms"] != nil {
			t.Fatalf("once up: %s %v; want almost, up, not ready within the ready delay", up.name, up.data)
		}
		upSeen := time.Unix(0, p.route.a.upSeen.Load())
		<-s.done
		ready := s.last(t)
		if ready.name != "ready" || ready.data["state"] != "ready" || ready.data["ready_ms"] == nil {
			t.Fatalf("last event %s %v; want ready", ready.name, ready.data)
		}
		if ready.at.Before(upSeen.Add(2 * time.Second)) {
			t.Errorf("ready at %v, before the ready delay passed (up seen at %v)", ready.at, upSeen)
		}
		if n := len(s.all()); n != 3 {
			t.Errorf("%d events, want 3: one per change, none repeated", n)
		}
		if e.engine.live.Load() != 0 {
			t.Errorf("%d streams still counted open", e.engine.live.Load())
		}
	})
}

// A stream is what a poll is: it asks for the wake of a sleeping app (again
// every 5 s, coalesced), never counts as traffic, keeps proxies from closing it
// while nothing changes, and ends when its client goes away.
func TestLiveEvents_IsAPollNeverTraffic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		s := openStream(t, p)
		settle()
		if n := fake.Count("start", "app"); n != 1 {
			t.Fatalf("starts after the stream opened: %d, want 1 (it asks for the wake as a poll does)", n)
		}
		if at := p.route.a.lastAccessTime(); !at.IsZero() {
			t.Errorf("the stream counted as traffic at %v", at)
		}
		time.Sleep(16 * time.Second)
		settle()
		comments := 0
		for _, ev := range s.all() {
			if ev.name == "" && ev.data == nil {
				comments++
			}
		}
		if comments != 1 {
			t.Errorf("%d keep-alive comments after 16 s of silence, want 1: %v", comments, s.all())
		}
		if s.ended() {
			t.Fatal("the stream ended while the app wakes")
		}
		s.cancel()
		settle()
		if !s.ended() || e.engine.live.Load() != 0 {
			t.Errorf("the client went away: ended %v, %d streams counted", s.ended(), e.engine.live.Load())
		}
		if at := p.route.a.lastAccessTime(); !at.IsZero() {
			t.Errorf("the stream counted as traffic at %v", at)
		}
	})
}

// An app that cannot start: the stream says so, then ends (the page polls
// at the error interval from then on).
func TestLiveEvents_EndsOnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.FailNext("start", fmt.Errorf("boom: %w", paas.ErrStartFailed))
		e := newEnv(t, fake, "")
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		s := openStream(t, p)
		settle()
		if !s.ended() {
			t.Fatal("the stream goes on after the app went to Error")
		}
		if last := s.last(t); last.name != "state" || last.data["status"] != "Error" || last.data["state"] != "error" {
			t.Errorf("last event %s %v, want the Error", last.name, last.data)
		}
	})
}

// Streams are bounded per node: past the bound, a 503 (the page polls); a
// stream that ends frees its place. A stream for an app that is up ends at
// once with "ready".
func TestLiveEvents_BoundedPerNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := paastest.New("app")
		fake.Manual = true
		e := newEnv(t, fake, "")
		e.engine.opts.MaxLiveStreams = 2
		p := e.route(config("app"))
		e.start()
		defer e.stop()
		settle()
		a, b := openStream(t, p), openStream(t, p)
		settle()
		refused := openStream(t, p)
		if refused.answer.Status != http.StatusServiceUnavailable || refused.answer.Header.Get("Retry-After") != "5" {
			t.Fatalf("a third stream: %d %v, want 503 with Retry-After 5", refused.answer.Status, refused.answer.Header)
		}
		a.cancel()
		settle()
		c := openStream(t, p)
		if c.answer.Status != http.StatusOK {
			t.Fatalf("a stream after one ended: %d", c.answer.Status)
		}
		fake.FinishStart("app")
		settle()
		for _, s := range []*liveStream{b, c} {
			if !s.ended() || s.last(t).name != "ready" {
				t.Errorf("once the app is up: ended %v, last event %v", s.ended(), s.last(t))
			}
		}
		up := openStream(t, p)
		settle()
		if evs := up.all(); len(evs) != 1 || evs[0].name != "ready" || !up.ended() {
			t.Errorf("a stream for an app that is up: %v (ended %v), want one ready event", evs, up.ended())
		}
		if r := do(context.Background(), p, httptest.NewRequest(http.MethodPost, WellKnownEventsPath, nil), false); r.status() != 405 {
			t.Errorf("POST: %d, want 405", r.status())
		}
	})
}
