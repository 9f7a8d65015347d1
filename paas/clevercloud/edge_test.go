package clevercloud

import (
	"context"
	"net/http"
	"testing"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestGuessAppID(t *testing.T) {
	const uuid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	for in, want := range map[string]string{
		"app-" + uuid + ".cleverapps.io":                                   "app_" + uuid,
		"APP-" + "0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D" + ".CleverApps.io": "app_" + uuid,
		"app-" + uuid + ".cleverapps.io:443":                               "app_" + uuid,
		"app-" + uuid + ".cleverapps.io.":                                  "app_" + uuid,
		"https://app-" + uuid + ".cleverapps.io/path":                      "app_" + uuid,
		"http://app-" + uuid + ".cleverapps.io:8080":                       "app_" + uuid,
		"app-" + uuid + ".example.com":                                     "",
		"www.app-" + uuid + ".cleverapps.io":                               "",
		"app-" + uuid[:35] + ".cleverapps.io":                              "",
		"app-" + uuid[:35] + "g.cleverapps.io":                             "",
		"app_" + uuid + ".cleverapps.io":                                   "",
		"app-" + uuid + "-x.cleverapps.io":                                 "",
		"":                                                                 "",
		"%zz://bad":                                                        "",
	} {
		got, ok := GuessAppID(in)
		if got != want || ok != (want != "") {
			t.Errorf("GuessAppID(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestIsNotReadyYet(t *testing.T) {
	mk := func(status int, kv ...string) *http.Response {
		r := &http.Response{StatusCode: status, Header: http.Header{}}
		for i := 0; i+1 < len(kv); i += 2 {
			r.Header.Set(kv[i], kv[i+1])
		}
		return r
	}
	for _, c := range []struct {
		resp *http.Response
		want bool
	}{
		{mk(404, "X-CleverCloudUpgrade", "true"), true},
		{mk(404, "x-clevercloudupgrade", "TRUE"), true},
		{mk(404), false}, // the app's own 404
		{mk(404, "X-CleverCloudUpgrade", "false"), false},
		{mk(503, "X-CleverCloudUpgrade", "true"), false},
		{mk(200, "X-CleverCloudUpgrade", "true"), false},
		{nil, false},
	} {
		if got := IsNotReadyYet(c.resp); got != c.want {
			t.Errorf("IsNotReadyYet(%+v) = %v", c.resp, got)
		}
	}
}

// The fake's edge answers what IsNotReadyYet recognises while an app is down, and
// the app's own answer (even its own 404) once it is up.
func TestIsNotReadyYet_AgainstTheFakeEdge(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, nil)
	own404 := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	a := e.f.AddApp(fakeclever.App{Owner: orga, State: fakeclever.StateShouldBeDown, Handler: own404})
	get := func() *http.Response {
		req, _ := http.NewRequest("GET", e.f.EdgeURL()+"/", nil)
		req.Host = fakeclever.DefaultDomain(a.ID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get(); !IsNotReadyYet(resp) {
		t.Errorf("down app: %d %v", resp.StatusCode, resp.Header)
	}
	if err := e.c.Start(context.Background(), paas.App{ID: a.ID, Owner: orga}); err != nil {
		t.Fatal(err)
	}
	if resp := get(); resp.StatusCode != 404 || IsNotReadyYet(resp) {
		t.Errorf("up app's own 404 taken for not ready: %v", resp.Header)
	}
	if id, ok := GuessAppID(fakeclever.DefaultDomain(a.ID)); !ok || id != a.ID {
		t.Errorf("GuessAppID of the fake's domain: %q", id)
	}
}
