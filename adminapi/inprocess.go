package adminapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// HandlerTransport is an http.RoundTripper that serves each request with
// Handler in the calling goroutine, without a network: the dashboard reaches
// the admin API's handler of its own node this way. The answer is held in
// memory, up to DefaultMaxAnswer; an event stream, which never ends, is not for
// it.
type HandlerTransport struct {
	Handler http.Handler
	// RemoteAddr is the caller's address as the handler sees it (its logs).
	RemoteAddr string
}

// InProcess returns a client of the admin API handler h, called in the
// process through HandlerTransport; remote is the caller's name in the
// handler's RemoteAddr.
func InProcess(h http.Handler, remote string) *Client {
	return &Client{Base: "http://in-process", HTTP: &http.Client{Transport: HandlerTransport{Handler: h, RemoteAddr: remote}}}
}

// RoundTrip serves req with the handler and returns its answer.
func (t HandlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	in := req.Clone(req.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = t.RemoteAddr
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	rec := &recorder{header: http.Header{}}
	t.Handler.ServeHTTP(rec, in)
	if req.Body != nil {
		req.Body.Close()
	}
	if rec.overflow {
		return nil, fmt.Errorf("adminapi: the answer of %s %s is larger than %d bytes", req.Method, req.URL.Path, DefaultMaxAnswer)
	}
	code := rec.code
	if code == 0 {
		code = http.StatusOK
	}
	return &http.Response{
		Status: strconv.Itoa(code) + " " + http.StatusText(code), StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(bytes.NewReader(rec.buf.Bytes())),
		ContentLength: int64(rec.buf.Len()), Request: req,
	}, nil
}

// recorder is the http.ResponseWriter of an in-process call: it keeps the
// answer in memory, bounded.
type recorder struct {
	header   http.Header
	code     int
	buf      bytes.Buffer
	overflow bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.buf.Len()+len(p) > DefaultMaxAnswer {
		r.overflow = true
		return 0, errors.New("adminapi: answer too large")
	}
	return r.buf.Write(p)
}
