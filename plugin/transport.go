package plugin

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Transports holds one http.Transport (one pool of upstream connections) per
// distinct timeouts tuple (connect, response_header, idle) and connection limit. The binary creates one
// and passes it to every BuildRouter, so that routes rebuilt by a reload reuse the
// keep-alive connections of the routes they replace. Safe for concurrent use. A
// tuple no route uses any more keeps its transport (its idle connections expire
// after the idle timeout); there are as many transports as tuples ever configured.
type Transports struct {
	mu sync.Mutex
	m  map[poolKey]*http.Transport
}

// poolKey is what routes must share to share a pool.
type poolKey struct {
	timeouts Timeouts
	maxConns int
}

// NewTransports returns an empty set of pools.
func NewTransports() *Transports {
	return &Transports{m: map[poolKey]*http.Transport{}}
}

// Upstream connection pool sizing: enough idle connections per backend that a
// benchmark with 64 concurrent clients never opens a connection per request.
const (
	maxIdleConnsPerHost = 512
	tcpKeepAlive        = 30 * time.Second
)

// get returns the transport for t, creating it on first use.
func (ts *Transports) get(k poolKey) *http.Transport {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if tr, ok := ts.m[k]; ok {
		return tr
	}
	connect, header, idle := k.timeouts.durations()
	dialer := &net.Dialer{Timeout: connect, KeepAlive: tcpKeepAlive}
	idlePerHost := maxIdleConnsPerHost
	if k.maxConns > 0 && k.maxConns < idlePerHost {
		idlePerHost = k.maxConns
	}
	tr := &http.Transport{
		// Never an outbound proxy from the environment: backends are addressed
		// directly.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
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
	}
	ts.m[k] = tr
	return tr
}

// CloseIdleConnections closes the idle connections of every pool; connections in
// use are left alone. It does not block.
func (ts *Transports) CloseIdleConnections() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, tr := range ts.m {
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
