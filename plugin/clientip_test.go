package plugin

import (
	"net/http"
	"net/netip"
	"slices"
	"testing"
)

func TestValidRequestID(t *testing.T) {
	cases := map[string]bool{
		"a": true, "01JD-abc_~!#": true, string(make([]byte, 0)): false,
		"a b": false, "a\tb": false, "é": false, "a\x7f": false,
	}
	long := make([]byte, 129)
	for i := range long {
		long[i] = 'x'
	}
	cases[string(long)] = false
	cases[string(long[:128])] = true
	for s, want := range cases {
		if got := validRequestID(s); got != want {
			t.Errorf("validRequestID(%q) = %v", s, got)
		}
	}
}

func TestPeerAddr(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1:80":           "127.0.0.1",
		"[::1]:80":               "::1",
		"[::ffff:10.0.0.1]:1":    "10.0.0.1",
		"192.0.2.1":              "192.0.2.1",
		"@":                      "invalid IP",
		"/run/reaper.sock:12345": "invalid IP",
	}
	for in, want := range cases {
		if got := peerAddr(in).String(); got != want {
			t.Errorf("peerAddr(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParseAddrOrPrefix(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{"10.0.0.0/8", "10.0.0.0/8", ""},
		{"10.1.2.3/8", "10.0.0.0/8", ""}, // masked
		{"192.0.2.1", "192.0.2.1/32", ""},
		{"::1", "::1/128", ""},
		{"::ffff:10.0.0.1", "10.0.0.1/32", ""},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", ""},
		{"fd00::/8", "fd00::/8", ""},
		{"10.0.0.0/33", "", `"10.0.0.0/33" is not a valid CIDR prefix (such as 10.0.0.0/8 or fd00::/8)`},
		{"host.example", "", `"host.example" is not a valid IP address or CIDR prefix`},
		{"fe80::1%eth0", "", `"fe80::1%eth0" is not a valid IP address or CIDR prefix`},
		{"", "", `"" is not a valid IP address or CIDR prefix`},
	}
	for _, tc := range cases {
		p, err := ParseAddrOrPrefix(tc.in)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseAddrOrPrefix(%q) error %v, want %q", tc.in, err, tc.err)
			}
		case err != nil || p.String() != tc.want:
			t.Errorf("ParseAddrOrPrefix(%q) = %s, %v; want %s", tc.in, p, err, tc.want)
		}
	}
}

func TestClientFromXFF_UsesTheGatewaysTrustedProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	peer := netip.MustParseAddr("10.0.0.9")
	cases := []struct {
		xff  []string
		want string
	}{
		{nil, "10.0.0.9"},
		{[]string{"203.0.113.1"}, "203.0.113.1"},
		{[]string{"203.0.113.1, 10.1.1.1"}, "203.0.113.1"},
		{[]string{"198.51.100.2, 203.0.113.1"}, "203.0.113.1"},
		{[]string{"203.0.113.1", "10.1.1.1, 10.2.2.2"}, "203.0.113.1"},
		{[]string{" , 203.0.113.1 ,"}, "203.0.113.1"},
		{[]string{"10.1.1.1"}, "10.1.1.1"},
		{[]string{"nonsense, 10.1.1.1"}, "10.1.1.1"},
	}
	for _, tc := range cases {
		if got := clientFromXFF(tc.xff, peer, trusted).String(); got != tc.want {
			t.Errorf("clientFromXFF(%q) = %s, want %s", tc.xff, got, tc.want)
		}
	}
}

func TestRefuseH2C(t *testing.T) {
	cases := []struct {
		upgrade     []string
		wantUpgrade []string
		settingsOut bool
	}{
		{[]string{"h2c"}, nil, true},
		{[]string{"H2C"}, nil, true},
		{[]string{"websocket"}, []string{"websocket"}, false},
		{[]string{"h2c, websocket"}, []string{"websocket"}, true},
		{[]string{"websocket", "h2c"}, []string{"websocket"}, true},
		{nil, nil, false},
	}
	for _, tc := range cases {
		h := http.Header{"Http2-Settings": {"AAMA"}}
		if tc.upgrade != nil {
			h["Upgrade"] = tc.upgrade
		}
		refuseH2C(h)
		if !slices.Equal(h["Upgrade"], tc.wantUpgrade) {
			t.Errorf("Upgrade %q became %q, want %q", tc.upgrade, h["Upgrade"], tc.wantUpgrade)
		}
		if _, kept := h["Http2-Settings"]; kept == tc.settingsOut {
			t.Errorf("Upgrade %q: HTTP2-Settings kept = %v", tc.upgrade, kept)
		}
	}
}
