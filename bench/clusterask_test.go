package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestStartCallAt_TheFirstAcceptedStartOfTheApp(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	app, other := "app_1", "app_2"
	calls := []fakeclever.Call{
		{App: app, Method: "GET", Path: "/v2/organisations/o/applications/app_1/instances", At: at(1), Status: 200},
		{App: other, Method: "POST", Path: "/v2/organisations/o/applications/app_2/instances", At: at(2), Status: 200},
		{App: app, Method: "POST", Path: "/v2/organisations/o/applications/app_1/instances", At: at(3), Status: 409},
		{App: app, Method: "POST", Path: "/v2/organisations/o/applications/app_1/instances", At: at(4), Status: 200},
		{App: app, Method: "POST", Path: "/v2/organisations/o/applications/app_1/instances", At: at(5), Status: 200},
	}
	if got, ok := startCallAt(calls, app); !ok || !got.Equal(at(4)) {
		t.Errorf("startCallAt = %v, %v; want the call at +4 ms", got.Sub(t0), ok)
	}
	if _, ok := startCallAt(calls[:3], app); ok {
		t.Error("found a start where none was accepted")
	}
}

func TestHoldRequest_TimesTheWriteAndChecksTheAppsAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Accept") != "application/json":
			http.Error(w, "wrong accept", http.StatusBadRequest)
		case r.Host == "c0.test":
			w.Write([]byte(`{"app_id":"app_1","name":"x"}`))
		default:
			http.Error(w, `{"app_id":"app_1"}`, http.StatusGatewayTimeout)
		}
	}))
	defer srv.Close()
	gw := strings.TrimPrefix(srv.URL, "http://")
	written := make(chan time.Time, 1)
	before := time.Now()
	a := holdRequest(context.Background(), srv.Client(), gw, "c0.test", "app_1", written)
	if !a.appOK || a.err != nil || a.status != 200 {
		t.Fatalf("holdRequest = %+v", a)
	}
	select {
	case at := <-written:
		if at.Before(before) {
			t.Errorf("written at %v, before the call", at)
		}
	default:
		t.Fatal("the write was not reported")
	}
	if a := holdRequest(context.Background(), srv.Client(), gw, "c0.test", "app_2", make(chan time.Time, 1)); a.appOK || a.err == nil {
		t.Errorf("another app's answer passed: %+v", a)
	}
	if a := holdRequest(context.Background(), srv.Client(), gw, "c1.test", "app_1", make(chan time.Time, 1)); a.appOK || a.status != 504 {
		t.Errorf("an error page passed: %+v", a)
	}
}
