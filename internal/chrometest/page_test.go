package chrometest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestPage_NavigateAndEval(t *testing.T) {
	b := Start(t)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// An error status still renders: Navigate must not treat it as a failure.
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `<!doctype html><title>hello</title><p id="x">world</p>`)
	})
	p := b.NewPage(t)
	if err := p.Navigate(srv.URL + "/"); err != nil {
		t.Fatalf("Navigate: %v", err)
	}

	tests := []struct {
		js, want string
	}{
		{`document.title`, `"hello"`},
		{`document.getElementById("x").textContent`, `"world"`},
		{`1 + 2`, `3`},
		{`({a: [1, "b"]})`, `{"a":[1,"b"]}`},
		{`undefined`, `null`},
		{`Promise.resolve(7)`, `7`},
	}
	for _, tt := range tests {
		got, err := p.Eval(tt.js)
		if err != nil {
			t.Errorf("Eval(%s): %v", tt.js, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Eval(%s) = %s, want %s", tt.js, got, tt.want)
		}
	}

	var title string
	if err := p.EvalInto(`document.title`, &title); err != nil || title != "hello" {
		t.Errorf("EvalInto(document.title) = %q, %v; want hello", title, err)
	}
	if _, err := p.Eval(`(() => { throw new Error("boom") })()`); !errors.Is(err, ErrEval) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Eval(throw) error = %v, want ErrEval with the message", err)
	}
	if _, err := p.Eval(`NaN`); !errors.Is(err, ErrEval) {
		t.Errorf("Eval(NaN) error = %v, want ErrEval", err)
	}
	if err := p.Call("No.suchMethod", nil, nil); !errors.Is(err, ErrCDP) {
		t.Errorf("Call(No.suchMethod) error = %v, want ErrCDP", err)
	}
}

func TestPage_NavigateFailureIsAnError(t *testing.T) {
	b := Start(t)
	// A port that was free a moment ago: the connection is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	p := b.NewPage(t)
	if err := p.Navigate("http://" + addr + "/"); err == nil {
		t.Fatal("Navigate to a closed port: no error")
	}
}

func TestPage_WaitFor(t *testing.T) {
	b := Start(t)
	p := b.NewPage(t)
	start := time.Now()
	if _, err := p.Eval(`setTimeout(() => { window.ready = true }, 200); 0`); err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Eval(`!!window.ready`); string(v) != "false" {
		t.Fatalf("window.ready before the timer = %s, want false", v)
	}
	p.WaitFor(t, `window.ready`, 5*time.Second)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("WaitFor returned after %v, before the condition could be true", d)
	}
}

func TestPage_WaitForFailsTheTestOnTimeout(t *testing.T) {
	b := Start(t)
	p := b.NewPage(t)
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.WaitFor(ft, `false`, 100*time.Millisecond)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("WaitFor did not give up")
	}
	if !strings.Contains(ft.msg, "not true within") {
		t.Errorf("WaitFor failure = %q, want a timeout message", ft.msg)
	}
}

func TestPage_ContextsAreIsolated(t *testing.T) {
	b := Start(t)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "k", Value: "v", Path: "/"})
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>c</title>`)
	})
	p1, p2 := b.NewPage(t), b.NewPage(t)
	if err := p1.Navigate(srv.URL + "/set"); err != nil {
		t.Fatal(err)
	}
	if err := p2.Navigate(srv.URL + "/"); err != nil {
		t.Fatal(err)
	}
	if v, _ := p1.Eval(`document.cookie`); string(v) != `"k=v"` {
		t.Errorf("cookie of the page that set it = %s, want \"k=v\"", v)
	}
	if v, _ := p2.Eval(`document.cookie`); string(v) != `""` {
		t.Errorf("cookie of another page = %s, want none", v)
	}
}

func TestPage_Screenshot(t *testing.T) {
	b := Start(t)
	p := b.NewPage(t)
	png, err := p.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("screenshot is not a PNG: % x", png[:min(8, len(png))])
	}
}
