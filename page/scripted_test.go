package page

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/testwait"
)

// marker is the header by which the gateway says it answered in place of the app.
const marker = "CleverCloud-Reaper-Status"

// Poll interval of the pages in the browser tests: fast, but slow enough to be told apart from the error
// interval whatever the load of the machine.
const testPoll = 100 * time.Millisecond

// waitLong bounds every wait on the browser: generous, since the machine is shared.
const waitLong = 15 * time.Second

// answer is what the scripted server answers to the next polls.
type answer struct {
	status int
	header http.Header
	drop   bool // close the connection without answering: a network error for the page
}

// seen is one request the scripted server received.
type seen struct {
	method, path string
	header       http.Header
	at           time.Time
	answered     answer
}

// scriptedServer serves the waiting page on the first GET of "/", the app's page on the next ones, and
// answers HEAD polls with whatever the test scripted last. It records every request.
type scriptedServer struct {
	*httptest.Server
	waiting Waiting
	lang    string

	// events, when set, serves the page's live progress stream (Waiting.EventsURL).
	events http.HandlerFunc

	mu   sync.Mutex
	next answer
	reqs []seen
}

func newScriptedServer(t *testing.T, w Waiting, lang string, first answer) *scriptedServer {
	t.Helper()
	s := &scriptedServer{waiting: w, lang: lang, next: first}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *scriptedServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.next
	s.reqs = append(s.reqs, seen{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), at: time.Now(), answered: a})
	gets := 0
	for _, q := range s.reqs {
		if q.method == http.MethodGet && q.path == "/" {
			gets++
		}
	}
	s.mu.Unlock()

	switch {
	case s.events != nil && r.URL.Path == s.waiting.EventsURL:
		s.events(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/" && gets == 1:
		page, err := RenderWaiting(r.Context(), s.waiting, s.lang)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "abc123", Path: "/", HttpOnly: true})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Retry-After", "30")
		w.Header().Set("CleverCloud-Reaper-Status", s.waiting.Status)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(page)
	case r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>the app</title><p id="app">hello from the app</p>`)
	case a.drop:
		// Hijack and close: the page's fetch rejects.
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	default:
		for k, v := range a.header {
			w.Header()[k] = v
		}
		w.WriteHeader(a.status)
	}
}

// answer scripts the answer to the next polls: a status and header key/value pairs.
func (s *scriptedServer) answer(status int, kv ...string) {
	a := answer{status: status, header: http.Header{}}
	for i := 0; i+1 < len(kv); i += 2 {
		a.header.Set(kv[i], kv[i+1])
	}
	s.mu.Lock()
	s.next = a
	s.mu.Unlock()
}

func (s *scriptedServer) dropPolls() {
	s.mu.Lock()
	s.next = answer{drop: true}
	s.mu.Unlock()
}

func (s *scriptedServer) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

// count is the number of requests of method for the page's URL.
func (s *scriptedServer) count(method string) int {
	n := 0
	for _, q := range s.requests() {
		if q.method == method && q.path == "/" {
			n++
		}
	}
	return n
}

// waitCount waits until the server has seen at least n requests of method for the page's URL.
func (s *scriptedServer) waitCount(t *testing.T, method string, n int) {
	t.Helper()
	if !testwait.Until(waitLong, func() bool { return s.count(method) >= n }) {
		t.Fatalf("server saw %d %s requests within %v, want %d", s.count(method), method, waitLong, n)
	}
}

// morePolls waits until the server has seen n more polls than now.
func (s *scriptedServer) morePolls(t *testing.T, n int) {
	t.Helper()
	s.waitCount(t, http.MethodHead, s.count(http.MethodHead)+n)
}
