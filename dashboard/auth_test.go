package dashboard

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/ratelimit"
)

func TestLogin_SetsASessionCookieByTheRules(t *testing.T) {
	td := newTestDash(t)
	form := td.do("GET", "/login?next=/apps/shop", nil, nil)
	if form.Code != 200 {
		t.Fatalf("GET /login: %d", form.Code)
	}
	login := cookieNamed(form.Result().Cookies(), loginCookie)
	if login == nil || !login.HttpOnly || login.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login cookie %+v: want HttpOnly, SameSite=Strict", login)
	}
	res := td.do("POST", "/login", url.Values{"token": {testToken}, "name": {"alice"}, "next": {"/apps/shop"},
		csrfField: {fieldValue(t, form.Body.String(), "csrf")}}, []*http.Cookie{login})
	if res.Code != http.StatusSeeOther || res.Header().Get("Location") != "/apps/shop" {
		t.Fatalf("sign-in: %d to %q, want 303 to /apps/shop", res.Code, res.Header().Get("Location"))
	}
	c := cookieNamed(res.Result().Cookies(), SessionCookie)
	switch {
	case c == nil:
		t.Fatal("no session cookie")
	case !c.HttpOnly, c.SameSite != http.SameSiteStrictMode, c.Path != "/":
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/", c)
	case c.Secure:
		t.Error("session cookie is Secure over plain HTTP: the browser would never send it back")
	case c.MaxAge != int(SessionTTL/time.Second) || time.Until(c.Expires) > SessionTTL+time.Minute || time.Until(c.Expires) < SessionTTL-time.Minute:
		t.Errorf("session cookie Max-Age %d, Expires %v: want %v from now", c.MaxAge, c.Expires, SessionTTL)
	}
	if strings.Contains(c.Value, testToken) || strings.Contains(res.Body.String(), testToken) ||
		strings.Contains(form.Body.String(), testToken) || strings.Contains(td.log.String(), testToken) {
		t.Error("the admin token shows in a cookie, a page or the log")
	}
	if !strings.Contains(td.log.String(), "dashboard sign-in") {
		t.Errorf("the sign-in is not logged: %s", td.log)
	}

	// Over TLS the cookies are Secure.
	r := httptest.NewRequest("GET", "/login", nil)
	r.TLS = &tls.ConnectionState{}
	w := httptest.NewRecorder()
	td.srv.ServeHTTP(w, r)
	if c := cookieNamed(w.Result().Cookies(), loginCookie); c == nil || !c.Secure {
		t.Errorf("login cookie over TLS: %+v, want Secure", c)
	}
}

func TestLogin_RefusesWrongTokenAndForgedForms(t *testing.T) {
	td := newTestDash(t)
	form := td.do("GET", "/login", nil, nil)
	login := cookieNamed(form.Result().Cookies(), loginCookie)
	csrf := fieldValue(t, form.Body.String(), "csrf")
	other := td.do("GET", "/login", nil, nil) // another browser's form
	for _, tt := range []struct {
		name    string
		form    url.Values
		cookies []*http.Cookie
		code    int
		says    string
	}{
		{"wrong token", url.Values{"token": {"nope"}, csrfField: {csrf}}, []*http.Cookie{login}, 401, "not the admin token"},
		{"no CSRF token", url.Values{"token": {testToken}}, []*http.Cookie{login}, 403, "expired"},
		{"no login cookie", url.Values{"token": {testToken}, csrfField: {csrf}}, nil, 403, "expired"},
		{"another form's CSRF token", url.Values{"token": {testToken}, csrfField: {fieldValue(t, other.Body.String(), "csrf")}}, []*http.Cookie{login}, 403, "expired"},
	} {
		res := td.do("POST", "/login", tt.form, tt.cookies)
		if res.Code != tt.code || !strings.Contains(res.Body.String(), tt.says) {
			t.Errorf("%s: %d, want %d saying %q", tt.name, res.Code, tt.code, tt.says)
		}
		if cookieNamed(res.Result().Cookies(), SessionCookie) != nil {
			t.Errorf("%s: a session cookie was set", tt.name)
		}
	}
}

func TestLogin_AttemptsAreRateLimited(t *testing.T) {
	td := newTestDash(t)
	attempt := func(token, addr string) *httptest.ResponseRecorder {
		form := td.do("GET", "/login", nil, nil)
		r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {token},
			csrfField: {fieldValue(t, form.Body.String(), "csrf")}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = addr
		r.AddCookie(cookieNamed(form.Result().Cookies(), loginCookie))
		w := httptest.NewRecorder()
		td.srv.ServeHTTP(w, r)
		return w
	}
	for i := range ratelimit.DoorBurst {
		if res := attempt("wrong", "198.51.100.9:1234"); res.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d, want 401", i+1, res.Code)
		}
	}
	res := attempt(testToken, "198.51.100.9:5678")
	if res.Code != http.StatusTooManyRequests || res.Header().Get("Retry-After") == "" ||
		!strings.Contains(res.Body.String(), "Too many sign-in attempts") {
		t.Fatalf("attempt past the limit, with the right token: %d (Retry-After %q), want 429 and a message",
			res.Code, res.Header().Get("Retry-After"))
	}
	if cookieNamed(res.Result().Cookies(), SessionCookie) != nil {
		t.Error("a limited attempt signed in")
	}
	if res := attempt(testToken, "203.0.113.5:1"); res.Code != http.StatusSeeOther {
		t.Errorf("another address: %d, want 303 (signed in)", res.Code)
	}
}

func TestLogin_NextStaysOnTheListener(t *testing.T) {
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"} {
		if got := localPath(next); got != "/" {
			t.Errorf("localPath(%q) = %q, want /", next, got)
		}
	}
	if got := localPath("/apps/shop?page=2"); got != "/apps/shop?page=2" {
		t.Errorf("a local path was changed to %q", got)
	}
}

func TestPages_SendSignedOutBrowsersToTheForm(t *testing.T) {
	td := newTestDash(t)
	for path, next := range map[string]string{"/": "%2F", "/apps/shop?page=2": "%2Fapps%2Fshop%3Fpage%3D2"} {
		res := td.do("GET", path, nil, nil)
		if res.Code != http.StatusSeeOther || res.Header().Get("Location") != "/login?next="+next {
			t.Errorf("GET %s signed out: %d to %q", path, res.Code, res.Header().Get("Location"))
		}
	}
	if res := td.do("POST", "/apps/shop/wake", url.Values{"confirm": {"yes"}}, nil); res.Code != http.StatusSeeOther {
		t.Errorf("a form posted signed out: %d, want 303 to the sign-in form", res.Code)
	}
	if res := td.do("POST", "/apps/shop/wake", url.Values{"confirm": {"yes"}}, nil, "Accept", "application/json"); res.Code != http.StatusUnauthorized {
		t.Errorf("the script's post signed out: %d, want 401", res.Code)
	}
	// An expired session is no session.
	k := td.keys
	old := k.encodeSession(newSession("", time.Now().Add(-SessionTTL-time.Minute)))
	if res := td.do("GET", "/", nil, []*http.Cookie{{Name: SessionCookie, Value: old}}); res.Code != http.StatusSeeOther {
		t.Errorf("an expired session: %d, want 303", res.Code)
	}
	if len(td.api.writes()) != 0 {
		t.Errorf("the API got writes: %+v", td.api.writes())
	}
}

func TestForms_NeedTheSessionsCSRFToken(t *testing.T) {
	td := newTestDash(t)
	cookies, csrf := td.signIn(t, "alice")
	_, otherCSRF := td.signIn(t, "mallory")
	for name, form := range map[string]url.Values{
		"no token":               {"confirm": {"yes"}},
		"another session's":      {"confirm": {"yes"}, csrfField: {otherCSRF}},
		"a token with one wrong": {"confirm": {"yes"}, csrfField: {csrf[:len(csrf)-1] + "x"}},
	} {
		for _, path := range []string{"/apps/shop/wake", "/apps/shop/sleep", "/apps/shop/hold", "/apps/shop/release", "/apps/shop/reset", "/settings", "/logout"} {
			if res := td.do("POST", path, form, cookies); res.Code != http.StatusForbidden {
				t.Errorf("%s, %s: %d, want 403", name, path, res.Code)
			}
		}
	}
	if w := td.api.writes(); len(w) != 0 {
		t.Fatalf("forms without the right CSRF token reached the API: %+v", w)
	}
	// The CSRF header stands for the field (the script sends both).
	res := td.do("POST", "/apps/shop/wake", url.Values{"confirm": {"yes"}}, cookies, CSRFHeader, csrf, "Accept", "application/json")
	if res.Code != http.StatusOK || len(td.api.writes()) != 1 {
		t.Errorf("with the CSRF header: %d %s, writes %v", res.Code, res.Body, td.api.writes())
	}
}

func TestLogout_NeedsCSRFAndClearsTheCookie(t *testing.T) {
	td := newTestDash(t)
	cookies, csrf := td.signIn(t, "")
	res := td.do("POST", "/logout", url.Values{csrfField: {csrf}}, cookies)
	c := cookieNamed(res.Result().Cookies(), SessionCookie)
	if res.Code != http.StatusSeeOther || c == nil || c.MaxAge >= 0 || c.Value != "" {
		t.Fatalf("sign-out: %d, cookie %+v: want 303 and the cookie deleted", res.Code, c)
	}
	if res := td.do("GET", res.Header().Get("Location"), nil, nil); !strings.Contains(res.Body.String(), "You are signed out") {
		t.Error("the sign-in form does not say the browser is signed out")
	}
}

func TestGuard_BearerOrSessionWithCSRFForWrites(t *testing.T) {
	td := newTestDash(t)
	cookies, csrf := td.signIn(t, "")
	api := td.Guard(td.api.handler())
	run := func(method string, cookies []*http.Cookie, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/api/apps/shop/_wake", nil)
		if method == "GET" {
			r = httptest.NewRequest(method, "/api/apps", nil)
		}
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		for _, c := range cookies {
			r.AddCookie(c)
		}
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		return w
	}
	for _, tt := range []struct {
		name    string
		method  string
		cookies []*http.Cookie
		header  []string
		code    int
	}{
		{"bearer read", "GET", nil, []string{"Authorization", "Bearer " + testToken}, 200},
		{"bearer write", "POST", nil, []string{"Authorization", "Bearer " + testToken}, 202},
		{"wrong bearer, even with a session", "GET", cookies, []string{"Authorization", "Bearer nope"}, 401},
		{"nothing", "GET", nil, nil, 401},
		{"session read", "GET", cookies, nil, 200},
		{"session write without CSRF", "POST", cookies, nil, 403},
		{"session write with a wrong CSRF", "POST", cookies, []string{CSRFHeader, "nope"}, 403},
		{"session write with CSRF", "POST", cookies, []string{CSRFHeader, csrf}, 202},
		{"CSRF without a session", "POST", nil, []string{CSRFHeader, csrf}, 401},
	} {
		res := run(tt.method, tt.cookies, tt.header...)
		if res.Code != tt.code {
			t.Errorf("%s: %d, want %d", tt.name, res.Code, tt.code)
		}
		if res.Code == 401 && (res.Header().Get("Content-Type") != "application/json" || !strings.Contains(res.Body.String(), "admin token is required")) {
			t.Errorf("%s: 401 answer %q is not the API's JSON error", tt.name, res.Body)
		}
	}
}

// The Bearer scheme's name is case-insensitive (RFC 9110); the token is not.
func TestBearer(t *testing.T) {
	for _, c := range []struct {
		auth, token string
		ok          bool
	}{
		{"Bearer abc", "abc", true}, {"bearer abc", "abc", true}, {"BEARER  abc", "abc", true},
		{"Basic abc", "", false}, {"Bearerabc", "", false}, {"", "", false},
	} {
		if token, ok := bearer(c.auth); token != c.token || ok != c.ok {
			t.Errorf("bearer(%q) = %q, %v; want %q, %v", c.auth, token, ok, c.token, c.ok)
		}
	}
}
