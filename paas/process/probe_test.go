package process

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

func TestProber_TCP(t *testing.T) {
	p := newProber()
	defer p.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if !p.ready(context.Background(), addr, "") {
		t.Error("a listening port is not ready")
	}
	_ = ln.Close()
	if p.ready(context.Background(), addr, "") {
		t.Error("a closed port is ready")
	}
}

func TestProber_HTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			// To a failing page: a redirect is an answer, and is not followed.
			http.Redirect(w, r, "/500", http.StatusFound)
			return
		}
		code, _ := strconv.Atoi(r.URL.Path[1:])
		w.WriteHeader(code)
	}))
	defer srv.Close()
	p := newProber()
	defer p.close()
	for path, want := range map[string]bool{
		"/200": true, "/204": true, "/404": true, "/499": true, "/redirect": true,
		"/500": false, "/502": false, "/503": false,
	} {
		if got := p.ready(context.Background(), "", srv.URL+path); got != want {
			t.Errorf("GET %s: ready = %v, want %v", path, got, want)
		}
	}
	srv.Close()
	if p.ready(context.Background(), "", srv.URL+"/200") {
		t.Error("a closed server is ready")
	}
}

func TestProber_EndsWithContext(t *testing.T) {
	// A server that accepts but never answers: only the context ends the probe.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	p := newProber()
	defer p.close()
	go func() { done <- p.ready(ctx, "", "http://"+ln.Addr().String()+"/") }()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cancel()
	if <-done {
		t.Error("a probe that got no answer is ready")
	}
}
