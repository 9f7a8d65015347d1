package builtin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

func TestHeaders_ConfigErrors(t *testing.T) {
	cases := []struct {
		name, config string
		want         []string
	}{
		{"valid", `{request: {add: {X-A: "1"}, set: {Host: x.test}, remove: [Cookie]}, response: {set: {X-B: "2"}}}`, nil},
		{"empty", `{}`, nil},
		{"unknown key", `{requests: {}}`, []string{`routes[0].plugins[0].config.requests: unknown key (did you mean "request"?)`}},
		{"bad names", `{request: {add: {"X A": v}, set: {"": v}, remove: ["X:B"]}, response: {add: {"é": v}}}`, []string{
			`routes[0].plugins[0].config.request.add.X A: "X A" is not a valid header name`,
			`routes[0].plugins[0].config.request.set.: "" is not a valid header name`,
			`routes[0].plugins[0].config.request.remove[0]: "X:B" is not a valid header name`,
			`routes[0].plugins[0].config.response.add.é: "é" is not a valid header name`,
		}},
		{"bad values", `{request: {set: {X-A: "a\r\nX-Injected: 1"}}, response: {add: {X-B: "a\u0000b"}}}`, []string{
			`routes[0].plugins[0].config.request.set.X-A: the value must not contain CR, LF or other control characters`,
			`routes[0].plugins[0].config.response.add.X-B: the value must not contain CR, LF or other control characters`,
		}},
		{"host only in set", `{request: {add: {host: a}, remove: [HOST]}}`, []string{
			`routes[0].plugins[0].config.request.add.host: Host can only be changed with request.set`,
			`routes[0].plugins[0].config.request.remove[0]: Host can only be changed with request.set`,
		}},
		{"wrong shape", `{request: {remove: X-A}}`, []string{`routes[0].plugins[0].config.request.remove: must be a list, got a string`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, got := decodeRoutes(t, routeWith("http://127.0.0.1:1", HeadersID, tc.config))
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestHeaders_TransformsRequestAndResponse(t *testing.T) {
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "backend/1.0")
		w.Header().Set("X-Frame-Options", "SAMEORIGIN")
		w.Header().Set("Vary", "Accept")
		json.NewEncoder(w).Encode(map[string]any{
			"host": r.Host, "cookie": r.Header.Values("Cookie"), "env": r.Header.Values("X-Env"),
			"from": r.Header.Values("X-From"),
		})
	}))
	defer b.Close()
	srv := serve(t, routeWith(b.URL, HeadersID, `{
      request: {add: {X-From: reaper}, set: {X-Env: prod, Host: internal.test}, remove: [Cookie]},
      response: {add: {Vary: Origin}, set: {X-Frame-Options: DENY}, remove: [Server]}}`))
	res := get(t, srv, http.Header{"Cookie": {"session=1"}, "X-Env": {"dev"}, "X-From": {"client"}})
	var seen struct {
		Host   string
		Cookie []string
		Env    []string
		From   []string
	}
	if err := json.NewDecoder(res.Body).Decode(&seen); err != nil {
		t.Fatal(err)
	}
	if seen.Host != "internal.test" || seen.Cookie != nil || !slices.Equal(seen.Env, []string{"prod"}) ||
		!slices.Equal(seen.From, []string{"client", "reaper"}) {
		t.Errorf("backend saw %+v", seen)
	}
	if res.Header.Get("Server") != "" || res.Header.Get("X-Frame-Options") != "DENY" ||
		!slices.Equal(res.Header.Values("Vary"), []string{"Accept", "Origin"}) {
		t.Errorf("client got headers %v", res.Header)
	}
}
