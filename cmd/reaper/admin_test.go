package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reapergw/reaper/dashboard"
	"github.com/reapergw/reaper/internal/conf"
)

func TestAdminHandler_DashboardBesideTheGuardedAPI(t *testing.T) {
	const token = "admin-t0ken-for-the-test"
	var reached []string
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.URL.Path)
		w.Write([]byte("[]"))
	})
	ready := &readiness{}
	ready.set(true)
	dash := dashboard.New(dashboard.Options{Token: token, API: api, Node: "n1"})
	h := adminHandler(conf.Secret(token), ready, api, nil, nil, false, dash)
	get := func(path string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if res := get("/healthz"); res.Code != 200 {
		t.Errorf("/healthz: %d", res.Code)
	}
	if res := get("/api/apps"); res.Code != 401 || !strings.Contains(res.Body.String(), "admin token is required") {
		t.Errorf("/api/apps without a token: %d %s", res.Code, res.Body)
	}
	if res := get("/api/apps", "Authorization", "Bearer "+token); res.Code != 200 || len(reached) != 1 {
		t.Errorf("/api/apps with the token: %d, API reached %v", res.Code, reached)
	}
	if res := get("/"); res.Code != http.StatusSeeOther || res.Header().Get("Location") != "/login?next=%2F" {
		t.Errorf("/ signed out: %d to %q, want the sign-in form", res.Code, res.Header().Get("Location"))
	}
	if res := get("/login"); res.Code != 200 || !strings.Contains(res.Body.String(), "Sign in to the dashboard") {
		t.Errorf("/login: %d", res.Code)
	}
	if res := get("/dashboard.js"); res.Code != 200 || !strings.HasPrefix(res.Header().Get("Content-Type"), "text/javascript") {
		t.Errorf("/dashboard.js: %d %s", res.Code, res.Header().Get("Content-Type"))
	}
	if len(reached) != 1 {
		t.Errorf("the API was reached by %v, want only the authenticated call", reached)
	}

	// Without a token: health only.
	off := adminHandler("", ready, api, nil, nil, false, nil)
	for _, path := range []string{"/", "/login", "/api/apps"} {
		w := httptest.NewRecorder()
		off.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 404 || !strings.Contains(w.Body.String(), "node.admin_token is not set") {
			t.Errorf("%s without a token: %d %s", path, w.Code, w.Body)
		}
	}
}
