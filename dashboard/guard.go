package dashboard

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
)

// Guard puts the admin API behind the admin token, as scripts send it
// (Authorization: Bearer <token>), or a dashboard session: the session cookie
// is enough to read (GET, HEAD: the page's script reads the event stream with
// it), and a write with it also needs the session's CSRF token in the
// X-CSRF-Token header, which no other site's page can know. Anything else gets
// 401 and a JSON error, as before the dashboard existed.
//
// A wrong token counts against the client's budget of failures (shared with
// the sign-in form and the preview, see Options.Failures); a client out of
// budget gets 429 and Retry-After, whatever token it sends, until it refills.
// A right token costs nothing: scripts call as often as they like.
func (d *Dashboard) Guard(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth := r.Header.Get("Authorization"); auth != "" {
			now, client := time.Now(), d.client(r)
			if wait, limited := d.failures.Limited(client, doorToken, now); limited {
				w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
				httpjson.Error(w, http.StatusTooManyRequests, "too many failed attempts at the admin token from your address; try again in "+span(wait))
				return
			}
			token, ok := bearer(auth)
			if ok && d.keys.tokenOK(token) {
				api.ServeHTTP(w, r)
				return
			}
			d.failures.Failed(client, doorToken, now)
			unauthorized(w)
			return
		}
		s, ok := d.keys.session(r, time.Now())
		if !ok {
			unauthorized(w)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !d.keys.csrfOK(s, r.Header.Get(CSRFHeader)) {
			httpjson.Error(w, http.StatusForbidden, "a write with the dashboard's session cookie needs its CSRF token in the "+CSRFHeader+" header")
			return
		}
		api.ServeHTTP(w, r)
	})
}

// doorToken names the admin API's Bearer token in the log of failed attempts.
const doorToken = "admin API token"

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="reaper"`)
	httpjson.Error(w, http.StatusUnauthorized, "a valid admin token is required (Authorization: Bearer <node.admin_token>), or sign in to the dashboard at /login")
}

// bearer reads the token of an Authorization header of the Bearer scheme, whose
// name is case-insensitive (RFC 9110 §11.1): "bearer x" and "BEARER x" too.
func bearer(auth string) (string, bool) {
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(token, " "), true
}
