package plugin

import (
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
