package plugin

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPrefersHTML(t *testing.T) {
	cases := map[string]bool{
		"":                 false,
		"*/*":              false,
		"application/json": false,
		"text/html":        true,
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": true,
		"application/json, text/html":                                     false,
		"application/json;q=0.5, text/html":                               true,
		"text/*":                                                          true,
		"text/html;q=0":                                                   false,
		"text/html;q=0.5, */*":                                            false,
		"TEXT/HTML":                                                       true,
	}
	for accept, want := range cases {
		if got := prefersHTML(accept); got != want {
			t.Errorf("prefersHTML(%q) = %v", accept, got)
		}
	}
}

func TestWriteAnswer_InvalidStatusIs500(t *testing.T) {
	for _, tc := range []struct {
		status, want int
		body         string
	}{
		{0, 200, "x"},
		{204, 204, ""},
		{418, 418, "x"},
		{101, 500, ""},
		{600, 500, ""},
	} {
		w := httptest.NewRecorder()
		st := &state{}
		st.ex.Request = httptest.NewRequest("GET", "/", nil)
		st.ex.ID, st.idHeader[0] = "rid", "rid"
		st.ex.Logger = slog.New(slog.DiscardHandler)
		st.rec = recorder{w: w, st: st}
		st.writeAnswer(&instance{kind: "k"}, &Answer{Status: tc.status, Header: http.Header{"x-custom": {"v"}}, Body: []byte("x")})
		if w.Code != tc.want {
			t.Errorf("status %d answered %d, want %d", tc.status, w.Code, tc.want)
		}
		if tc.want == 500 {
			if !strings.Contains(w.Body.String(), `plugin \"k\" failed`) {
				t.Errorf("body %q", w.Body.String())
			}
			continue
		}
		if w.Body.String() != tc.body || w.Header().Get("X-Custom") != "v" || w.Header().Get("X-Request-Id") != "rid" {
			t.Errorf("status %d: body %q header %v", tc.status, w.Body.String(), w.Header())
		}
	}
}

func TestWriteAnswer_Stream(t *testing.T) {
	for _, method := range []string{"GET", "HEAD"} {
		w := httptest.NewRecorder()
		st := &state{}
		st.ex.Request = httptest.NewRequest(method, "/", nil)
		st.ex.ID, st.idHeader[0] = "rid", "rid"
		st.ex.Logger = slog.New(slog.DiscardHandler)
		st.rec = recorder{w: w, st: st}
		called := false
		st.writeAnswer(&instance{kind: "k"}, &Answer{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}, "Content-Length": {"3"}},
			Stream: func(out io.Writer, flush func() error) {
				called = true
				io.WriteString(out, "data: 1\n\n")
				if err := flush(); err != nil {
					t.Errorf("flush: %v", err)
				}
			}})
		if !w.Flushed || w.Code != 200 || w.Header().Get("Content-Length") != "" || w.Header().Get("X-Request-Id") != "rid" {
			t.Errorf("%s: flushed %v, code %d, header %v", method, w.Flushed, w.Code, w.Header())
		}
		if want := method == "GET"; called != want || (w.Body.String() == "data: 1\n\n") != want {
			t.Errorf("%s: stream called %v, body %q", method, called, w.Body.String())
		}
		if st.upstream != upstreamGateway {
			t.Errorf("upstream = %q", st.upstream)
		}
	}
}

// prefixPlugin answers every request with the path prefix it matched.
type prefixPlugin struct{}

func (prefixPlugin) ValidateAccess(ex *Exchange) (*Answer, error) {
	return &Answer{Status: 200, Body: []byte("prefix=" + ex.PathPrefix())}, nil
}

func init() { Register(Info{ID: "test_prefix", New: func() Plugin { return prefixPlugin{} }}) }

func TestExchange_PathPrefix(t *testing.T) {
	r := mustRouter(t, `
routes:
  - {id: sub, frontend: {domains: [p.test/app]}, backend: {targets: ["http://127.0.0.1:1"]}, plugins: [{plugin: test_prefix}]}
  - {id: root, frontend: {domains: [p.test]}, backend: {targets: ["http://127.0.0.1:1"]}, plugins: [{plugin: test_prefix}]}
`, nil, nil)
	tg := newTestGateway(t, r)
	for path, want := range map[string]string{"/app/x": "prefix=/app", "/app": "prefix=/app", "/other": "prefix="} {
		if _, body := tg.do(t, "GET", "p.test", path, nil, nil); body != want {
			t.Errorf("%s: %q, want %q", path, body, want)
		}
	}
	if got := (&Exchange{}).PathPrefix(); got != "" {
		t.Errorf("outside the gateway: %q", got)
	}
}
