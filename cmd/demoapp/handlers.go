package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	// downloadChunk is the write (and flush) unit of /download.
	downloadChunk = 32 << 10
	// maxStreamLines bounds /stream?n=, so one request cannot run forever by mistake.
	maxStreamLines = 1_000_000
	// defaultSlow is the wait of /slow without ?d=.
	defaultSlow = 5 * time.Second
)

// downloadPattern repeats through every /download body: byte i is
// downloadPattern[i%len(downloadPattern)]. Its length divides downloadChunk, so every
// chunk is the same slice.
const downloadPattern = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"

// app holds what the handlers report and the WebSocket bookkeeping.
type app struct {
	name      string
	pid       int
	started   time.Time
	startedAt string // started in RFC 3339, formatted once for the hot path
	// listeningAt is the wall-clock time the port opened (RFC 3339), so that a
	// caller on the same machine can tell how long after the port opened its
	// answer came (the benchmark's wake latency).
	listeningAt string
	latency     time.Duration
	chunk       []byte // one downloadChunk of downloadPattern, never written to
	ws          wsTracker
}

// newApp returns the app of a process started at started whose port opened at
// listening.
func newApp(name string, pid int, started, listening time.Time, latency time.Duration) *app {
	chunk := []byte(strings.Repeat(downloadPattern, downloadChunk/len(downloadPattern)))
	a := &app{
		name:      name,
		pid:       pid,
		started:   started,
		startedAt: started.UTC().Format(time.RFC3339Nano),
		latency:   latency,
		chunk:     chunk,
		// Wall clock only: the monotonic reading means nothing to another process.
		listeningAt: listening.UTC().Format(time.RFC3339Nano),
	}
	a.ws.init()
	return a
}

// routes returns the handler of every endpoint; "/" catches every other path.
func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", a.handleRoot)
	mux.HandleFunc("/echo", a.handleEcho)
	mux.HandleFunc("/upload", a.handleUpload)
	mux.HandleFunc("/download", a.handleDownload)
	mux.HandleFunc("/slow", a.handleSlow)
	mux.HandleFunc("/stream", a.handleStream)
	mux.HandleFunc("/ws", a.handleWS)
	mux.HandleFunc("/status/{code}", a.handleStatus)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	return mux
}

// rootInfo is the answer of "/".
type rootInfo struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartedAt string `json:"started_at"`
	// ListeningAt is when the port opened: after the boot delay, and after the
	// memory of --memory was touched.
	ListeningAt string `json:"listening_at"`
	UptimeMS    int64  `json:"uptime_ms"`
	Method      string `json:"method"`
	Host        string `json:"host"`
	Path        string `json:"path"`
}

// handleRoot is the benchmark's target, so it does one small encode and one write.
func (a *app) handleRoot(w http.ResponseWriter, r *http.Request) {
	if a.latency > 0 && !wait(r, a.latency) {
		return
	}
	info := rootInfo{
		Name: a.name, PID: a.pid, StartedAt: a.startedAt, ListeningAt: a.listeningAt,
		UptimeMS: time.Since(a.started).Milliseconds(),
		Method:   r.Method, Host: r.Host, Path: r.URL.Path,
	}
	if prefersText(r.Header.Get("Accept")) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "name: %s\npid: %d\nstarted_at: %s\nlistening_at: %s\nuptime_ms: %d\nmethod: %s\nhost: %s\npath: %s\n",
			info.Name, info.PID, info.StartedAt, info.ListeningAt, info.UptimeMS, info.Method, info.Host, info.Path)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// prefersText reports whether an Accept header ranks text/plain strictly above
// application/json (each taking the quality of its most specific matching range).
// An empty header, */* or a browser's header all yield JSON.
func prefersText(accept string) bool {
	if accept == "" {
		return false
	}
	textQ, textSpec := 0.0, -1
	jsonQ, jsonSpec := 0.0, -1
	for part := range strings.SplitSeq(accept, ",") {
		media, params, _ := strings.Cut(part, ";")
		typ, sub, _ := strings.Cut(strings.ToLower(strings.TrimSpace(media)), "/")
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		if s := specificity(typ, sub, "text", "plain"); s > textSpec {
			textQ, textSpec = q, s
		}
		if s := specificity(typ, sub, "application", "json"); s > jsonSpec {
			jsonQ, jsonSpec = q, s
		}
	}
	return textQ > jsonQ
}

// specificity says how precisely the range typ/sub matches want/wantSub: 2 exact,
// 1 wildcard subtype, 0 */*, -1 no match.
func specificity(typ, sub, want, wantSub string) int {
	switch {
	case typ == want && sub == wantSub:
		return 2
	case typ == want && sub == "*":
		return 1
	case typ == "*" && sub == "*":
		return 0
	}
	return -1
}

// echoInfo is the answer of /echo.
type echoInfo struct {
	Method     string              `json:"method"`
	Proto      string              `json:"proto"`
	Host       string              `json:"host"`
	Path       string              `json:"path"`
	RawQuery   string              `json:"raw_query"`
	Headers    map[string][]string `json:"headers"`
	RemoteAddr string              `json:"remote_addr"`
	BodyBytes  int64               `json:"body_bytes"`
	BodySHA256 string              `json:"body_sha256"`
}

func (a *app) handleEcho(w http.ResponseWriter, r *http.Request) {
	n, sum, err := hashBody(r)
	if err != nil {
		http.Error(w, "demoapp: reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusOK, echoInfo{
		Method: r.Method, Proto: r.Proto, Host: r.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Headers: r.Header, RemoteAddr: r.RemoteAddr, BodyBytes: n, BodySHA256: sum,
	})
}

func (a *app) handleUpload(w http.ResponseWriter, r *http.Request) {
	n, sum, err := hashBody(r)
	if err != nil {
		http.Error(w, "demoapp: reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}{n, sum})
}

// hashBody reads the request body through sha256 in small buffers, never holding it.
func hashBody(r *http.Request) (int64, string, error) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	return n, hex.EncodeToString(h.Sum(nil)), err
}

func (a *app) handleDownload(w http.ResponseWriter, r *http.Request) {
	total, err := parseSize(r.URL.Query().Get("bytes"))
	if err != nil {
		http.Error(w, "demoapp: ?bytes=: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(total, 10))
	rc := http.NewResponseController(w)
	for left := total; left > 0; {
		n := min(left, int64(len(a.chunk)))
		if _, err := w.Write(a.chunk[:n]); err != nil {
			return // the client went away
		}
		if err := rc.Flush(); err != nil {
			return
		}
		left -= n
	}
}

func (a *app) handleSlow(w http.ResponseWriter, r *http.Request) {
	d := defaultSlow
	if s := r.URL.Query().Get("d"); s != "" {
		var err error
		if d, err = parseDuration(s); err != nil {
			http.Error(w, "demoapp: ?d=: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	if !wait(r, d) {
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "slept %s\n", d)
}

func (a *app) handleStream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := 10
	if s := q.Get("n"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > maxStreamLines {
			http.Error(w, fmt.Sprintf("demoapp: ?n= must be a whole number from 0 to %d", maxStreamLines), http.StatusBadRequest)
			return
		}
		n = v
	}
	interval := 100 * time.Millisecond
	if s := q.Get("interval"); s != "" {
		var err error
		if interval, err = parseDuration(s); err != nil {
			http.Error(w, "demoapp: ?interval=: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	// Without it some browsers buffer a text stream to sniff its type.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	for i := 1; i <= n; i++ {
		if i > 1 && !wait(r, interval) {
			return
		}
		line := fmt.Sprintf("line %d of %d at %s", i, n, time.Now().UTC().Format(time.RFC3339Nano))
		if sse {
			line = "data: " + line + "\n"
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

func (a *app) handleStatus(w http.ResponseWriter, r *http.Request) {
	code, err := strconv.Atoi(r.PathValue("code"))
	if err != nil || code < 200 || code > 599 {
		http.Error(w, "demoapp: /status/{code} wants a code from 200 to 599", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	// 204 and 304 must not carry a body.
	if code != http.StatusNoContent && code != http.StatusNotModified {
		fmt.Fprintf(w, "%d %s\n", code, http.StatusText(code))
	}
}

// wait blocks for d or until the client goes away (or the server closes the
// connection); it reports whether the full wait elapsed.
func wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// writeJSON encodes v in a buffer first, so an encoding failure cannot leave a
// half-written 200.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "demoapp: encoding answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
