package plugin

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestTransports_SharedAcrossBuilds(t *testing.T) {
	ts := NewTransports()
	src := `
routes:
  - {id: a, frontend: {domains: [a.test]}, backend: {targets: ["http://127.0.0.1:1"]}}
  - {id: b, frontend: {domains: [b.test]}, backend: {targets: ["http://127.0.0.1:2"]}}
  - {id: c, frontend: {domains: [c.test]}, backend: {targets: ["http://127.0.0.1:3"], timeouts: {connect: 1s}}}
`
	build := func() *Router {
		routes, err := parseRoutes(t, src, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := BuildRouter(context.Background(), routes, BuildOptions{Transports: ts})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1, r2 := build(), build()
	defer r1.Close()
	defer r2.Close()
	tr := func(r *Router, i int) http.RoundTripper { return r.routes[i].proxy.Transport }
	if tr(r1, 0) != tr(r1, 1) || tr(r1, 0) == tr(r1, 2) {
		t.Error("routes with the same timeouts share a transport, others do not")
	}
	if tr(r1, 0) != tr(r2, 0) || tr(r1, 2) != tr(r2, 2) {
		t.Error("a rebuild reuses the transports")
	}
	h := tr(r1, 2).(*http.Transport)
	if h.MaxIdleConnsPerHost < 64 || !h.DisableCompression || h.Proxy != nil || h.ResponseHeaderTimeout != 60*time.Second {
		t.Errorf("transport settings %+v", h)
	}
}

func TestBufferPool(t *testing.T) {
	p := newBufferPool()
	b := p.Get()
	if len(b) != bufferSize {
		t.Fatalf("buffer of %d bytes", len(b))
	}
	p.Put(b)
	p.Put(make([]byte, 10)) // foreign buffers are dropped
	if n := testing.AllocsPerRun(100, func() { p.Put(p.Get()) }); n != 0 {
		t.Errorf("Get/Put allocate %v times", n)
	}
}
