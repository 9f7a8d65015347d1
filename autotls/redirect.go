package autotls

import (
	"net"
	"net/http"
	"strings"
)

// ChallengePath starts the paths of HTTP-01 challenges; they are never
// redirected.
const ChallengePath = "/.well-known/acme-challenge/"

// challengeSolver answers an HTTP-01 challenge request, and reports whether it
// did (certmagic's ACMEIssuer.HandleHTTPChallenge).
type challengeSolver func(w http.ResponseWriter, r *http.Request) bool

// httpHandler serves the http_listen listener: the CA's HTTP-01 challenge
// requests (404 for a token nobody presented, or when http-01 is off), and a
// 308 to https for everything else, with the same host, path and query.
func httpHandler(solve challengeSolver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, ChallengePath) {
			if !solve(w, r) {
				http.NotFound(w, r)
			}
			return
		}
		redirectToHTTPS(w, r)
	})
}

// redirectToHTTPS answers 308 https://host/path?query. The port is left out:
// a public ACME CA validates the certificate's names on port 443, so that is
// where HTTPS is. A request without a usable Host gets 400.
func redirectToHTTPS(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || strings.ContainsAny(host, "/\\@?# \t") {
		http.Error(w, "400 bad request: no host to redirect to https", http.StatusBadRequest)
		return
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6
	}
	w.Header().Set("Location", "https://"+host+r.URL.RequestURI())
	w.WriteHeader(http.StatusPermanentRedirect)
}
