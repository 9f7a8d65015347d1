package builtin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/plugin"
)

func TestIPFilter_ConfigErrors(t *testing.T) {
	cases := []struct {
		name, config string
		want         []string
	}{
		{"valid", `{allow: [10.0.0.0/8, "192.0.2.1", "::1", "fd00::/8"], deny: [10.6.6.0/24], trusted_proxies: [127.0.0.1]}`, nil},
		{"no config at all", `~`, nil},
		{"bad entries", `{allow: [10.0.0.300], deny: [10.0.0.0/33, "fe80::1%eth0"], trusted_proxies: [localhost]}`, []string{
			`routes[0].plugins[0].config.allow[0]: "10.0.0.300" is not a valid IP address or CIDR prefix`,
			`routes[0].plugins[0].config.deny[0]: "10.0.0.0/33" is not a valid CIDR prefix (such as 10.0.0.0/8 or fd00::/8)`,
			`routes[0].plugins[0].config.deny[1]: "fe80::1%eth0" is not a valid IP address or CIDR prefix`,
			`routes[0].plugins[0].config.trusted_proxies[0]: "localhost" is not a valid IP address or CIDR prefix`,
		}},
		{"unknown key", `{alow: []}`, []string{`routes[0].plugins[0].config.alow: unknown key (did you mean "allow"?)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, got := decodeRoutes(t, routeWith("http://127.0.0.1:1", IPFilterID, tc.config))
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func filter(t *testing.T, allow, deny, trusted []string) *IPFilter {
	t.Helper()
	f := &IPFilter{Allow: allow, Deny: deny, TrustedProxies: trusted}
	var errs conf.Errors
	f.Validate("config", &errs)
	if errs.Len() > 0 {
		t.Fatal(errs.Err())
	}
	return f
}

func TestIPFilter_Allowed(t *testing.T) {
	cases := []struct {
		allow, deny []string
		ip          string
		want        bool
	}{
		{nil, nil, "198.51.100.1", true},
		{[]string{"10.0.0.0/8"}, nil, "10.1.2.3", true},
		{[]string{"10.0.0.0/8"}, nil, "11.1.2.3", false},
		{[]string{"10.0.0.0/8"}, []string{"10.6.6.0/24"}, "10.6.6.6", false}, // deny wins
		{[]string{"10.0.0.0/8"}, []string{"10.6.6.0/24"}, "10.6.7.1", true},
		{nil, []string{"192.0.2.1"}, "192.0.2.1", false},
		{nil, []string{"192.0.2.1"}, "192.0.2.2", true},
		{[]string{"::1"}, nil, "::1", true},
		{[]string{"fd00::/8"}, nil, "fd12::1", true},
		{[]string{"127.0.0.0/8"}, nil, "::ffff:127.0.0.1", true}, // 4-in-6 is unmapped
		{[]string{"10.0.0.0/8"}, nil, "", false},                 // no address: not in allow
		{nil, []string{"10.0.0.0/8"}, "", true},
	}
	for _, tc := range cases {
		f := filter(t, tc.allow, tc.deny, nil)
		var ip netip.Addr
		if tc.ip != "" {
			ip = netip.MustParseAddr(tc.ip).Unmap()
		}
		if got := f.allowed(ip); got != tc.want {
			t.Errorf("allow %v deny %v: allowed(%s) = %v", tc.allow, tc.deny, tc.ip, got)
		}
	}
}

func TestIPFilter_ClientAddress(t *testing.T) {
	cases := []struct {
		name    string
		peer    string
		xff     []string
		trusted []string
		want    string
	}{
		{"peer", "192.0.2.9:1234", []string{"10.0.0.1"}, nil, "192.0.2.9"},
		{"untrusted peer ignores XFF", "192.0.2.9:1234", []string{"10.0.0.1"}, []string{"127.0.0.1"}, "192.0.2.9"},
		{"trusted peer, one hop", "127.0.0.1:1", []string{"203.0.113.5"}, []string{"127.0.0.1"}, "203.0.113.5"},
		{"right to left past trusted", "127.0.0.1:1", []string{"203.0.113.5, 10.0.0.2, 10.0.0.3"}, []string{"127.0.0.1", "10.0.0.0/8"}, "203.0.113.5"},
		{"spoofed left entry ignored", "127.0.0.1:1", []string{"1.1.1.1, 203.0.113.5"}, []string{"127.0.0.1"}, "203.0.113.5"},
		{"several header lines", "127.0.0.1:1", []string{"203.0.113.5", "10.0.0.2"}, []string{"127.0.0.1", "10.0.0.0/8"}, "203.0.113.5"},
		{"all trusted: leftmost", "127.0.0.1:1", []string{"10.0.0.1, 10.0.0.2"}, []string{"127.0.0.1", "10.0.0.0/8"}, "10.0.0.1"},
		{"garbage stops the walk", "127.0.0.1:1", []string{"203.0.113.5, garbage, 10.0.0.2"}, []string{"127.0.0.1", "10.0.0.0/8"}, "10.0.0.2"},
		{"no XFF", "127.0.0.1:1", nil, []string{"127.0.0.1"}, "127.0.0.1"},
		{"ports and brackets", "[::1]:1", []string{"[2001:db8::1]:443, 203.0.113.5:80"}, []string{"::1"}, "203.0.113.5"},
		{"bracketed v6", "[::1]:1", []string{"[2001:db8::1]"}, []string{"::1"}, "2001:db8::1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := filter(t, nil, nil, tc.trusted)
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = tc.peer
			if tc.xff != nil {
				req.Header["X-Forwarded-For"] = tc.xff
			}
			if got := plugin.ClientIP(req, f.trusted); got.String() != tc.want {
				t.Errorf("ClientIP = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestIPFilter_DeniedRequestsGet403(t *testing.T) {
	var calls atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, "ok")
	}))
	defer b.Close()

	denied := serve(t, routeWith(b.URL, IPFilterID, `{deny: [127.0.0.0/8]}`))
	res := get(t, denied, http.Header{"X-Request-Id": {"ipf-1"}})
	body, _ := io.ReadAll(res.Body)
	id := res.Header.Get("X-Request-Id") // the gateway's own: the client's is not taken
	if res.StatusCode != 403 || string(body) != `{"error":"access denied","request_id":"`+id+`"}`+"\n" ||
		id == "" || id == "ipf-1" || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("denied: %d %q %v", res.StatusCode, body, res.Header)
	}
	if calls.Load() != 0 {
		t.Error("a denied request reached the backend")
	}

	// Through a trusted proxy, the forwarded address decides.
	viaProxy := serve(t, routeWith(b.URL, IPFilterID, `{allow: [203.0.113.0/24], trusted_proxies: [127.0.0.1]}`))
	if res := get(t, viaProxy, http.Header{"X-Forwarded-For": {"203.0.113.7"}}); res.StatusCode != 200 {
		t.Errorf("allowed client behind a trusted proxy: %d", res.StatusCode)
	}
	if res := get(t, viaProxy, http.Header{"X-Forwarded-For": {"198.51.100.7"}}); res.StatusCode != 403 {
		t.Errorf("other client behind a trusted proxy: %d", res.StatusCode)
	}
	if calls.Load() != 1 {
		t.Errorf("backend called %d times, want 1", calls.Load())
	}
}
