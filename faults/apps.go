package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// The apps: the fake Clever Cloud's edge hands each app's requests, while an
// instance serves it, to a handler of the harness, which answers as the app and
// records what reached it. That record is the apps' side of the invariants:
// whether a request reached its app, when, for how long, and with its body
// intact.

// Headers the load generator sets and the apps read.
const (
	headerID  = "X-Fault-Id"    // the request's id in the harness
	headerSHA = "X-Body-Sha256" // the hex SHA-256 of the body the client sent
)

// maxBody bounds the bodies the apps read (the load generator sends at most 256 KiB).
const maxBody = 1 << 20

// appHit is one request that reached an app, as the app saw it.
type appHit struct {
	id        string // its X-Fault-Id; "" for a request not from the load generator
	app       int
	path      string
	monitor   bool
	arrived   time.Time
	ended     time.Time // zero while it is under way
	bodyBytes int64
	bodySHA   string // the hex SHA-256 of the body that arrived
	bodyOK    bool   // it matched the client's X-Body-Sha256
}

// appRecorder keeps every hit of every app.
type appRecorder struct {
	mu   sync.Mutex
	hits []*appHit
}

func (r *appRecorder) begin(h *appHit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hits = append(r.hits, h)
}

func (r *appRecorder) end(h *appHit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.ended = time.Now()
}

// snapshot returns a copy of the hits so far.
func (r *appRecorder) snapshot() []appHit {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]appHit, len(r.hits))
	for i, h := range r.hits {
		out[i] = *h
	}
	return out
}

// handler answers as app i (appID):
//
//	POST /post                 reads the body, checks its hash, answers {"ok": …}
//	GET  /download?bytes=&ms=  streams that many bytes over that long
//	GET  /ws                   a WebSocket that echoes every message
//	anything else              {"app_id": …, "id": …}
func (r *appRecorder) handler(i int, appID string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h := &appHit{id: req.Header.Get(headerID), app: i, path: req.URL.Path,
			monitor: monitorUA.MatchString(req.UserAgent()), arrived: time.Now()}
		r.begin(h)
		defer r.end(h)
		switch req.URL.Path {
		case "/post":
			serveBody(w, req, appID, h)
		case "/download":
			serveDownload(w, req)
		case "/ws":
			serveWebSocket(w, req)
		default:
			writeAppJSON(w, map[string]any{"app_id": appID, "id": h.id})
		}
	})
}

func writeAppJSON(w http.ResponseWriter, v map[string]any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// serveBody reads the body whole and says whether its hash is the one the client
// announced.
func serveBody(w http.ResponseWriter, req *http.Request, appID string, h *appHit) {
	sum := sha256.New()
	n, err := io.Copy(sum, io.LimitReader(req.Body, maxBody))
	got := hex.EncodeToString(sum.Sum(nil))
	// Written before the answer: the recorder's end (deferred) takes the lock.
	h.bodyBytes, h.bodySHA = n, got
	h.bodyOK = err == nil && got == req.Header.Get(headerSHA)
	writeAppJSON(w, map[string]any{"app_id": appID, "id": h.id, "ok": h.bodyOK, "bytes": n})
}

// downloadChunks is how many writes a download takes.
const downloadChunks = 16

// serveDownload streams ?bytes= bytes of downloadPattern in downloadChunks writes
// spread over ?ms= milliseconds: a long answer that keeps its app busy.
func serveDownload(w http.ResponseWriter, req *http.Request) {
	size, _ := strconv.Atoi(req.URL.Query().Get("bytes"))
	ms, _ := strconv.Atoi(req.URL.Query().Get("ms"))
	size, ms = min(max(size, downloadChunks), 64<<20), min(max(ms, 0), 60_000)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	tick := time.NewTicker(time.Duration(ms)*time.Millisecond/downloadChunks + time.Millisecond)
	defer tick.Stop()
	chunk := size / downloadChunks
	for k := range downloadChunks {
		from, n := k*chunk, chunk
		if k == downloadChunks-1 {
			n = size - from // the last write takes the rest
		}
		if _, err := w.Write(downloadPattern(from, n)); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if k == downloadChunks-1 {
			return
		}
		select {
		case <-tick.C:
		case <-req.Context().Done():
			return
		}
	}
}

// downloadPattern is the bytes [from, from+n) of every download: byte k is k mod
// 251, so that a lost or repeated piece shows.
func downloadPattern(from, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte((from + i) % 251)
	}
	return b
}

// serveWebSocket echoes every message until the client closes.
func serveWebSocket(w http.ResponseWriter, req *http.Request) {
	c, err := websocket.Accept(w, req, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := req.Context()
	for {
		typ, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		if err := c.Write(ctx, typ, slices.Clone(msg)); err != nil {
			return
		}
	}
}
