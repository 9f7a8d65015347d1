package forwardauth

import (
	"net/http"
	"strings"
)

// Envoy's HTTP ext_authz (http_service with path_prefix: /auth/envoy) asks
// with the original request's method, its path (and query) after the prefix,
// its host as the Host (:authority), a Content-Length of 0, and of the client's
// headers only Authorization and those allowed_headers names. It lets the
// request go on a 200 only; any other status below 500 is the client's answer,
// with its body and headers; a 5xx becomes an empty 403 (status_on_error), so
// reaper's 5xx answers are given as a 4xx that keeps their body.

// envoyStatus is the status Envoy relays in place of a 5xx: 429 and its
// Retry-After say "come back later" to browsers and API clients alike; the
// real status is in HeaderAnswerStatus.
const envoyStatus = http.StatusTooManyRequests

// envoyRequest is the original request line of an Envoy auth call: method,
// URI after PathEnvoy, host.
func envoyRequest(r *http.Request) (method, uri, host string) {
	uri = strings.TrimPrefix(r.URL.RequestURI(), PathEnvoy)
	if uri == "" || uri[0] != '/' {
		uri = "/" + uri // "/auth/envoy?x=1": the original was "/?x=1"
	}
	return r.Method, uri, r.Host
}

// answerEnvoy writes a refusal as Envoy relays it: a 5xx as envoyStatus, and
// a 200 that is not the go-ahead (a monitor's answer, the status answer) as a
// 203, which Envoy relays where a 200 would send the request on to the
// sleeping app. Either way HeaderAnswerStatus holds the real status.
func answerEnvoy(w http.ResponseWriter, a answer) {
	h := w.Header()
	for k, vs := range a.header {
		h[k] = vs
	}
	status := a.status
	switch {
	case status >= 500:
		status = envoyStatus
	case status == http.StatusOK:
		status = http.StatusNonAuthoritativeInfo
	}
	if status != a.status {
		h.Set(HeaderAnswerStatus, itoa(a.status))
	}
	w.WriteHeader(status)
	w.Write(a.body) //nolint:errcheck // a proxy gone is not our error
}
