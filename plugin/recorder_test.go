package plugin

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRecorder_KeepsResponseControllerWorking: deadlines and flushing reach the
// server's writer through Unwrap and FlushError.
func TestRecorder_KeepsResponseControllerWorking(t *testing.T) {
	errs := make(chan error, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{w: w, st: &state{idHeader: [1]string{"rid"}}}
		rc := http.NewResponseController(rec)
		errs <- rc.SetWriteDeadline(time.Now().Add(time.Minute))
		io.WriteString(rec, "x")
		errs <- rc.Flush()
	}))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("ResponseController through the recorder: %v", err)
		}
	}
	if res.Header.Get("X-Request-Id") != "rid" {
		t.Errorf("X-Request-Id %q", res.Header.Get("X-Request-Id"))
	}
}

func TestRecorder_CountsAndRecords(t *testing.T) {
	w := httptest.NewRecorder()
	rec := &recorder{w: w, st: &state{idHeader: [1]string{"rid"}}}
	w.Header().Set("X-Request-Id", "from-backend")
	rec.Write([]byte("hello"))
	rec.Write([]byte(", world"))
	if rec.status != 200 || rec.bytes.Load() != 12 || w.Header().Get("X-Request-Id") != "rid" {
		t.Errorf("status %d bytes %d id %q", rec.status, rec.bytes.Load(), w.Header().Get("X-Request-Id"))
	}
}

func TestReqBody_CountsAndIgnoresClose(t *testing.T) {
	closed := false
	b := &reqBody{rc: readCloser{strings.NewReader("abcdef"), func() { closed = true }}}
	buf := make([]byte, 4)
	b.Read(buf)
	if err := b.Close(); err != nil || closed {
		t.Error("Close must do nothing: the gateway may send the body again")
	}
	rest, _ := io.ReadAll(b)
	if string(rest) != "ef" || b.n.Load() != 6 {
		t.Errorf("rest %q, counted %d", rest, b.n.Load())
	}
	b.close()
	if !closed {
		t.Error("close closes the real body")
	}
	var empty reqBody
	if n, err := empty.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("no body: %d, %v", n, err)
	}
}

type readCloser struct {
	io.Reader
	close func()
}

func (r readCloser) Close() error { r.close(); return nil }

func TestExchangeHandler_AddsRequestID(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})).With("route", "r1")
	l := slog.New(&exchangeHandler{h: base.Handler(), id: "rid"})
	l.Info("one", "k", 1)
	l.With("w", 2).Info("two")
	l.WithGroup("g").Info("three", "k", 3)
	if !l.Enabled(context.Background(), slog.LevelInfo) || l.Enabled(context.Background(), slog.LevelDebug) {
		t.Error("Enabled follows the base handler")
	}
	want := "level=INFO msg=one route=r1 k=1 request_id=rid\n" +
		"level=INFO msg=two route=r1 request_id=rid w=2\n" +
		"level=INFO msg=three route=r1 request_id=rid g.k=3\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
