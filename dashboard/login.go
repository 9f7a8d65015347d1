package dashboard

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/httpjson"
)

// maxForm bounds the body of the dashboard's forms.
const maxForm = 8 << 10

// loginView is what the sign-in page shows.
type loginView struct {
	CSRF   string
	Next   string
	Name   string
	Error  string
	Notice string
}

// loginForm shows the sign-in form, with a fresh nonce cookie that its CSRF
// token is tied to. A browser already signed in goes on to the dashboard.
func (d *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if _, ok := d.keys.session(r, time.Now()); ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	v := loginView{Next: next}
	if r.URL.Query().Get("out") != "" {
		v.Notice = "You are signed out."
	}
	d.showLogin(w, r, http.StatusOK, v)
}

func (d *Dashboard) showLogin(w http.ResponseWriter, r *http.Request, code int, v loginView) {
	nonce := randomHex(16)
	http.SetCookie(w, cookie(r, loginCookie, nonce, loginTTL))
	v.CSRF = d.keys.loginCSRF(nonce)
	d.render(w, r, code, loginPage(d.opts.Node, v))
}

// doorSignIn names the sign-in form in the log of failed attempts.
const doorSignIn = "dashboard sign-in"

// login checks a sign-in: a client that failed too often (here or at another
// door to the token) is refused first, then the form's CSRF token is checked,
// then the token, compared in constant time; both failures count against the
// client's budget.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	client := d.client(r)
	if wait, limited := d.failures.Limited(client, doorSignIn, now); limited {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		d.showLogin(w, r, http.StatusTooManyRequests, loginView{Next: "/",
			Error: "Too many sign-in attempts from your address. Try again in " + span(wait) + "."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		d.showLogin(w, r, http.StatusBadRequest, loginView{Next: "/", Error: "The form could not be read; try again."})
		return
	}
	v := loginView{Next: localPath(r.PostForm.Get("next")), Name: strings.TrimSpace(r.PostForm.Get("name"))}
	c, err := r.Cookie(loginCookie)
	if err != nil || !d.keys.macOK("login", c.Value, r.PostForm.Get(csrfField)) {
		d.failures.Failed(client, doorSignIn, now)
		v.Error = "This sign-in form has expired (or cookies are off). Try again."
		d.showLogin(w, r, http.StatusForbidden, v)
		return
	}
	if !d.keys.tokenOK(r.PostForm.Get("token")) {
		d.failures.Failed(client, doorSignIn, now)
		v.Error = "That is not the admin token of this node."
		d.showLogin(w, r, http.StatusUnauthorized, v)
		return
	}
	s := newSession(v.Name, now)
	http.SetCookie(w, cookie(r, SessionCookie, d.keys.encodeSession(s), SessionTTL))
	http.SetCookie(w, cookie(r, loginCookie, "", 0))
	d.log.Info("dashboard sign-in", "client", client, "name", s.Name)
	http.Redirect(w, r, v.Next, http.StatusSeeOther)
}

// logout ends the browser's session: the cookie is removed. It takes the
// session's CSRF token, like every form.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	s, ok := d.keys.session(r, time.Now())
	if ok {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if r.ParseForm() != nil || !d.keys.csrfOK(s, r.PostForm.Get(csrfField)) {
			d.render(w, r, http.StatusForbidden, messagePage(d.frame(s, "Sign out"),
				"This form has expired; reload the page and sign out again.", "/", "Back to the apps"))
			return
		}
		d.log.Info("dashboard sign-out", "client", d.client(r), "name", s.Name)
	}
	http.SetCookie(w, cookie(r, SessionCookie, "", 0))
	http.Redirect(w, r, "/login?out=1", http.StatusSeeOther)
}

// checkCSRF parses a posted form and checks its CSRF token against the
// session; false (and the answer written) when it does not match.
func (d *Dashboard) checkCSRF(w http.ResponseWriter, r *http.Request, s session) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		d.refuse(w, r, s, http.StatusBadRequest, "The form could not be read.")
		return false
	}
	token := r.PostForm.Get(csrfField)
	if token == "" {
		token = r.Header.Get(CSRFHeader)
	}
	if !d.keys.csrfOK(s, token) {
		d.log.Warn("dashboard form refused: missing or wrong CSRF token", "client", d.client(r), "path", r.URL.Path)
		d.refuse(w, r, s, http.StatusForbidden, "This form has expired or did not come from the dashboard; reload the page and try again.")
		return false
	}
	return true
}

// refuse answers a form that cannot be served: JSON for the script, a page
// otherwise.
func (d *Dashboard) refuse(w http.ResponseWriter, r *http.Request, s session, code int, msg string) {
	if wantsJSON(r) {
		httpjson.Write(w, code, actionResult{Error: msg})
		return
	}
	d.render(w, r, code, messagePage(d.frame(s, "Refused"), msg, "/", "Back to the apps"))
}
