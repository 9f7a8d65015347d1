package plugin

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Transports holds one http.Transport (one pool of upstream connections) per
// backend (a target's scheme and host) and distinct timeouts tuple (connect,
// response_header, idle) and connection limit. The binary creates one and passes
// it to every BuildRouter, so that routes rebuilt by a reload reuse the keep-alive
// connections of the routes they replace. A pool per backend lets one backend's
// idle connections be dropped alone (Route.DropIdleConnections), when the app
// behind it stops or wakes. Safe for concurrent use. A pool no route uses any more
// is kept (its idle connections expire after the idle timeout); there are as many
// as backends and tuples ever configured.
type Transports struct {
	mu    sync.Mutex
	m     map[poolKey]*http.Transport
	fresh map[poolKey]*http.Transport // without keep-alive: a retry's fresh connection
	gates map[backendKey]*openingGate // connections still opening, per backend (opening.go)
}

// poolKey is what routes must share to share a pool.
type poolKey struct {
	timeouts Timeouts
	maxConns int
	backend  backendKey
}

// backendKey names a backend: a target's scheme and host (with its port).
type backendKey struct{ scheme, host string }

// NewTransports returns an empty set of pools.
func NewTransports() *Transports {
	return &Transports{m: map[poolKey]*http.Transport{}, fresh: map[poolKey]*http.Transport{}, gates: map[backendKey]*openingGate{}}
}

// Upstream connection pool sizing: enough idle connections per backend that a
// benchmark with 64 concurrent clients never opens a connection per request.
const (
	maxIdleConnsPerHost = 512
	tcpKeepAlive        = 30 * time.Second
)

// get returns the pool for k, creating it on first use.
func (ts *Transports) get(k poolKey) *http.Transport { return ts.pool(ts.m, k, false) }

// getFresh returns k's transport that opens a connection per request: for a
// request sent again after its connection failed, which must not meet another
// connection of the same age.
func (ts *Transports) getFresh(k poolKey) *http.Transport { return ts.pool(ts.fresh, k, true) }

func (ts *Transports) pool(m map[poolKey]*http.Transport, k poolKey, fresh bool) *http.Transport {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if tr, ok := m[k]; ok {
		return tr
	}
	connect, header, idle := k.timeouts.durations()
	dialer := &net.Dialer{Timeout: connect, KeepAlive: tcpKeepAlive}
	gate := ts.gates[k.backend]
	if gate == nil {
		gate = newOpeningGate()
		ts.gates[k.backend] = gate
	}
	idlePerHost := maxIdleConnsPerHost
	if k.maxConns > 0 && k.maxConns < idlePerHost {
		idlePerHost = k.maxConns
	}
	tr := &http.Transport{
		// Never an outbound proxy from the environment: backends are addressed
		// directly.
		Proxy:                 nil,
		DialContext:           gate.dial(dialer),
		TLSHandshakeTimeout:   connect,
		ResponseHeaderTimeout: header,
		IdleConnTimeout:       idle,
		MaxIdleConns:          0, // no global limit; the per-host limit bounds it
		MaxIdleConnsPerHost:   idlePerHost,
		MaxConnsPerHost:       k.maxConns,
		ExpectContinueTimeout: time.Second,
		// A proxy passes bodies as they are: no transparent gzip.
		DisableCompression: true,
		// HTTP/2 to https targets that offer it (plain http targets stay HTTP/1.1).
		ForceAttemptHTTP2: true,
		DisableKeepAlives: fresh,
	}
	m[k] = tr
	return tr
}

// routeTransport sends each of a route's requests through its target's pool.
type routeTransport struct {
	one   *http.Transport // the pool, when the route has one backend
	pools map[backendKey]*http.Transport
}

// newRouteTransport returns the route's RoundTripper over the pools of its
// targets, the keep-alive ones or, with fresh, those that open a connection per
// request.
func (ts *Transports) newRouteTransport(r *Route, fresh bool) *routeTransport {
	rt := &routeTransport{pools: map[backendKey]*http.Transport{}}
	for _, t := range r.targets {
		k := poolKey{r.timeouts, r.maxConns, backendKey{t.url.Scheme, t.url.Host}}
		if fresh {
			rt.pools[k.backend] = ts.getFresh(k)
		} else {
			rt.pools[k.backend] = ts.get(k)
		}
	}
	if len(rt.pools) == 1 {
		for _, tr := range rt.pools {
			rt.one = tr
		}
	}
	return rt
}

func (rt *routeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.one != nil {
		return rt.one.RoundTrip(req)
	}
	tr := rt.pools[backendKey{req.URL.Scheme, req.URL.Host}]
	if tr == nil { // cannot happen: rewrite only sends to the route's targets
		return nil, fmt.Errorf("plugin: no connection pool for %s://%s", req.URL.Scheme, req.URL.Host)
	}
	return tr.RoundTrip(req)
}

// closeIdle closes the idle connections of the route's pools.
func (rt *routeTransport) closeIdle() {
	for _, tr := range rt.pools {
		tr.CloseIdleConnections()
	}
}

// CloseIdleConnections closes the idle connections of every pool; connections in
// use are left alone. It does not block.
func (ts *Transports) CloseIdleConnections() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, tr := range ts.m {
		tr.CloseIdleConnections()
	}
	for _, tr := range ts.fresh {
		tr.CloseIdleConnections()
	}
}

// bufferSize is the size of the buffers that copy bodies; 32 KiB is what io.Copy
// uses and what ReverseProxy allocates per request without a pool.
const bufferSize = 32 << 10

// bufferPool implements httputil.BufferPool with fixed-size arrays, so that Put
// does not allocate (a []byte put in a sync.Pool would be boxed on every call).
type bufferPool struct{ pool sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { return new([bufferSize]byte) }}}
}

func (b *bufferPool) Get() []byte { return b.pool.Get().(*[bufferSize]byte)[:] }

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) != bufferSize {
		return
	}
	b.pool.Put((*[bufferSize]byte)(buf[:bufferSize]))
}

// buffers is shared by every route's proxy.
var buffers = newBufferPool()
