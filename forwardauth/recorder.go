package forwardauth

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reapergw/reaper/plugin"
)

// maxAnswerBody bounds an answer kept for nginx: the waiting page and the JSON
// answers are far smaller.
const maxAnswerBody = 1 << 20

var errTooLarge = errors.New("forwardauth: the answer is too large to keep")

// errNoStream: nginx's auth_request cannot relay a stream (the waiting page's
// live progress); the page polls instead.
var errNoStream = errors.New("forwardauth: streams are not relayed through auth_request")

// recorder is what the access gateway writes to: straight through to the proxy
// (pass), or kept for nginx to fetch.
type recorder struct {
	w      http.ResponseWriter
	pass   bool
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func newRecorder(w http.ResponseWriter, pass bool) *recorder {
	r := &recorder{}
	r.init(w, pass)
	return r
}

func (r *recorder) init(w http.ResponseWriter, pass bool) {
	r.w, r.pass = w, pass
	if pass {
		r.header = w.Header()
	} else {
		r.header = http.Header{}
	}
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.wrote {
		return
	}
	r.wrote, r.status = true, code
	if !r.pass && r.isStream() {
		// No stream for nginx: a 404 the page takes as "no live progress".
		r.status = http.StatusNotFound
		r.header = http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
		r.body.WriteString(`{"error":"live progress is not relayed through nginx's auth_request; the page polls"}` + "\n")
		return
	}
	if r.pass {
		r.w.WriteHeader(code)
	}
}

func (r *recorder) isStream() bool {
	return strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream")
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	if r.pass {
		return r.w.Write(b)
	}
	if r.status == http.StatusNotFound && r.body.Len() > 0 && len(b) > 0 {
		return 0, errNoStream
	}
	if r.body.Len()+len(b) > maxAnswerBody {
		return 0, errTooLarge
	}
	return r.body.Write(b)
}

// FlushError is what http.ResponseController.Flush calls.
func (r *recorder) FlushError() error {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	if r.pass {
		return http.NewResponseController(r.w).Flush()
	}
	if r.status == http.StatusNotFound {
		return errNoStream // ends a stream before it starts
	}
	return nil
}

// allowed reports whether the access steps let the request through.
func (r *recorder) allowed() bool {
	return r.status == http.StatusOK && r.header.Get(plugin.HeaderAccessAllowed) != ""
}

// stillWaking answers an auth call whose hold reached auth_hold_max: the app
// still wakes, and the client may retry.
func (r *recorder) stillWaking() {
	h := r.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", "5")
	body := []byte(`{"error":"the application is still waking up, retry in a few seconds"}` + "\n")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	r.WriteHeader(http.StatusServiceUnavailable)
	r.Write(body) //nolint:errcheck // a proxy gone is not our error
}

// answer is a refusal kept for nginx.
type answer struct {
	status int
	header http.Header
	body   []byte
	at     time.Time
}

func (r *recorder) answer() answer {
	h := r.header.Clone()
	h.Set("Content-Length", strconv.Itoa(r.body.Len()))
	return answer{status: r.status, header: h, body: r.body.Bytes(), at: time.Now()}
}

// Bounds of the answers kept for nginx: nginx fetches each at once, so a minute
// and a few thousand are plenty; past them the oldest go.
const (
	answerTTL      = time.Minute
	answersMax     = 4096
	answersMaxSize = 32 << 20
)

// answerStore keeps refusals until nginx fetches them, once each.
type answerStore struct {
	mu    sync.Mutex
	m     map[string]answer
	order []string // ids, oldest first
	size  int
}

func newAnswerStore() *answerStore { return &answerStore{m: map[string]answer{}} }

func (s *answerStore) put(a answer) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = a
	s.order = append(s.order, id)
	s.size += len(a.body)
	for len(s.order) > 0 {
		old, ok := s.m[s.order[0]]
		if ok && len(s.m) <= answersMax && len(s.order) <= 2*answersMax && s.size <= answersMaxSize && time.Since(old.at) < answerTTL {
			break
		}
		s.drop(s.order[0])
		s.order = s.order[1:]
	}
	return id
}

func (s *answerStore) drop(id string) {
	if a, ok := s.m[id]; ok {
		s.size -= len(a.body)
		delete(s.m, id)
	}
}

func (s *answerStore) take(id string) (answer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.m[id]
	if !ok || time.Since(a.at) >= answerTTL {
		return answer{}, false
	}
	s.drop(id)
	return a, true
}

func itoa(n int) string { return strconv.Itoa(n) }
