package fakeclever

import (
	"net/http"
	"net/http/httptest"
	"strings"
)

// Transport returns an http.RoundTripper that answers API calls in process,
// without a socket: a request for the bridge host (api-bridge.clever-cloud.com)
// is served as the bridge serves it, any other as the API host. Calls are checked,
// faulted and recorded as over the network. It needs no Start.
//
// It is for tests in a testing/synctest bubble, where real connections cannot be
// (time stands still while a bubbled goroutine waits on a socket): the fake's
// handlers then run in the caller's goroutine, on the bubble's clock. A test of
// what goes on the wire (headers, framing) needs Start and a real client instead.
func (f *Fake) Transport() http.RoundTripper {
	return inProcess{bridge: f.apiHandler(hostBridge), api: f.apiHandler(hostAPI)}
}

type inProcess struct{ bridge, api http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	h := t.api
	if strings.EqualFold(r.URL.Hostname(), "api-bridge.clever-cloud.com") {
		h = t.bridge
	}
	// The request as a server would see it.
	in := r.Clone(r.Context())
	in.RequestURI = r.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:1"
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, in)
	if r.Body != nil {
		_ = r.Body.Close()
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}
