package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// The load generator's clients: one request each, on a connection of its own (a
// kept-alive connection to a node that was since killed would blur which request
// a fault broke), each recording what it got.

// headerMarker marks every answer the gateway gives in the app's place.
const headerMarker = "CleverCloud-Reaper-Status"

// clientTimeout bounds a request: a hold (fail_timeout) and a download or a
// WebSocket after it, with room to spare; past it, the request failed.
const clientTimeout = failTimeout + 25*time.Second

// result is one request's outcome, as its client saw it.
type result struct {
	id   string
	kind reqKind
	app  int
	node int
	// sent when it went out, headers when its answer's headers came (zero when
	// none did), end when its client was done with it.
	sent, headers, end time.Time
	status             int
	marker             string // CleverCloud-Reaper-Status: the gateway answered in the app's place
	retryAfter         string
	contentType        string
	errorText          string // the "error" of the gateway's JSON answer
	monitoring         bool   // the gateway's answer to a monitor
	fromApp            bool   // the app's own answer (its JSON naming it and the request, a download, a WebSocket)
	appOK              bool   // and it is right: the body arrived intact, the download whole, every echo back
	err                string // the transport's error, or what was wrong with the answer
}

// clients sends requests to the world's nodes.
type clients struct {
	w  *world
	hc *http.Client
}

func newClients(w *world) *clients {
	// No client timeout: each request's context bounds it (the WebSocket dialer
	// refuses a client with one).
	return &clients{w: w, hc: &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}}
}

// do sends p through node and returns what came of it.
func (c *clients) do(ctx context.Context, p planned, node int) result {
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	r := result{id: p.id, kind: p.kind, app: p.app, node: node, sent: time.Now()}
	if p.kind == kindWebSocket {
		c.webSocket(ctx, p, &r)
	} else {
		c.http(ctx, p, &r)
	}
	r.end = time.Now()
	return r
}

// request builds p's HTTP request for the gateway gw.
func (c *clients) request(ctx context.Context, p planned, gw string) (*http.Request, error) {
	a := c.w.apps[p.app]
	host, path, method, accept, ua := a.hold, "/api/"+p.id, http.MethodGet, "application/json", "reaper-faults"
	var body []byte
	switch p.kind {
	case kindAPIUnavailable:
		host = a.unavailable
	case kindBrowser:
		path, accept, ua = "/", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8", "Mozilla/5.0 (reaper-faults)"
	case kindMonitor:
		path, ua = "/health", "UptimeRobot/2.0 (reaper-faults)"
	case kindPost:
		path, method, body = "/post", http.MethodPost, postBody(p)
	case kindDownload:
		path = fmt.Sprintf("/download?bytes=%d&ms=%d", p.size, p.long.Milliseconds())
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+gw+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	req.Host = host
	req.Header.Set(headerID, p.id)
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", ua)
	if body != nil {
		sum := sha256.Sum256(body)
		req.Header.Set(headerSHA, hex.EncodeToString(sum[:]))
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	return req, nil
}

// postBody is the body of a POST: size bytes from its seed.
func postBody(p planned) []byte {
	b := make([]byte, p.size)
	rng := rand.New(rand.NewPCG(p.seed, 1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// http sends every kind but the WebSocket.
func (c *clients) http(ctx context.Context, p planned, r *result) {
	req, err := c.request(ctx, p, c.w.gateways[r.node])
	if err != nil {
		r.err = err.Error()
		return
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		r.err = err.Error()
		return
	}
	defer resp.Body.Close()
	r.headers = time.Now()
	readHead(resp, r)
	switch {
	case r.marker != "":
		readGateway(resp.Body, r)
	case p.kind == kindDownload:
		readDownload(resp, p, r)
	default:
		readAppJSON(resp, p, c.w.apps[p.app].id, r)
	}
}

// readHead keeps the status and the headers the checks read.
func readHead(resp *http.Response, r *result) {
	r.status = resp.StatusCode
	r.marker = resp.Header.Get(headerMarker)
	r.retryAfter = resp.Header.Get("Retry-After")
	r.contentType = resp.Header.Get("Content-Type")
}

// readGateway reads an answer the gateway gave in the app's place.
func readGateway(body io.Reader, r *result) {
	b, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		r.err = "reading the gateway's answer: " + err.Error()
		return
	}
	var v struct {
		Error      string `json:"error"`
		Monitoring bool   `json:"monitoring"`
	}
	if json.Unmarshal(b, &v) == nil {
		r.errorText, r.monitoring = v.Error, v.Monitoring
	}
}

// readAppJSON reads what should be the app's JSON: it names the app and the
// request (so an answer of another app, or for another request, shows).
func readAppJSON(resp *http.Response, p planned, appID string, r *result) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		r.err = "reading the answer: " + err.Error()
		return
	}
	var v struct {
		AppID string `json:"app_id"`
		ID    string `json:"id"`
		OK    bool   `json:"ok"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &v) != nil || v.AppID != appID || v.ID != p.id {
		r.err = fmt.Sprintf("answered %d, unmarked and not the app's answer to it: %.200s", resp.StatusCode, b)
		return
	}
	r.fromApp = true
	r.appOK = p.kind != kindPost || v.OK
	if !r.appOK {
		r.err = "the app says the body did not arrive intact: " + string(b)
	}
}

// readDownload reads a download whole and checks every byte.
func readDownload(resp *http.Response, p planned, r *result) {
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		r.err = fmt.Sprintf("answered %d, unmarked: %.200s", resp.StatusCode, b)
		return
	}
	r.fromApp = true
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(p.size)+1))
	switch {
	case err != nil:
		r.err = fmt.Sprintf("cut after %d of %d bytes: %v", len(b), p.size, err)
	case len(b) != p.size:
		r.err = fmt.Sprintf("%d bytes, want %d", len(b), p.size)
	case !bytes.Equal(b, downloadPattern(0, p.size)):
		r.err = "the bytes are not the app's"
	default:
		r.appOK = true
	}
}

// wsGap separates the messages of a WebSocket.
const wsGap = 200 * time.Millisecond

// webSocket opens a WebSocket to the app and exchanges messages for p.long.
func (c *clients) webSocket(ctx context.Context, p planned, r *result) {
	hdr := http.Header{headerID: {p.id}, "User-Agent": {"reaper-faults"}}
	conn, resp, err := websocket.Dial(ctx, "ws://"+c.w.gateways[r.node]+"/ws",
		&websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: hdr, Host: c.w.apps[p.app].hold})
	if resp != nil {
		r.headers = time.Now()
		readHead(resp, r)
		if r.marker != "" && resp.Body != nil {
			readGateway(resp.Body, r)
		}
	}
	if err != nil {
		if r.marker == "" {
			r.err = err.Error()
		}
		return
	}
	defer conn.CloseNow()
	r.fromApp = true
	for k := 0; k == 0 || time.Since(r.headers) < p.long; k++ {
		msg := fmt.Sprintf("%s-%d", p.id, k)
		if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			r.err = fmt.Sprintf("message %d: %v", k, err)
			return
		}
		_, got, err := conn.Read(ctx)
		if err != nil || string(got) != msg {
			r.err = fmt.Sprintf("message %d: echo %q, %v", k, got, err)
			return
		}
		if !sleepUntil(ctx, time.Now().Add(wsGap)) {
			r.err = fmt.Sprintf("message %d: %v", k, ctx.Err())
			return
		}
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
	r.appOK = true
}
