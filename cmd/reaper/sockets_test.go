package main

import (
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestSocketNames(t *testing.T) {
	for _, c := range []struct {
		names   string
		set     bool
		count   int
		want    string
		wantErr string
	}{
		{count: 1, want: "gateway"},                                    // no names: the lone socket is the gateway
		{names: "reaper.socket", set: true, count: 1, want: "gateway"}, // systemd's default name
		{names: "admin", set: true, count: 1, want: "admin"},
		{names: "gateway:admin", set: true, count: 2, want: "gateway admin"},
		{names: "admin:gateway", set: true, count: 2, want: "admin gateway"},
		{names: "gateway:admin:http", set: true, count: 3, want: "gateway admin http"},
		{count: 2, wantErr: "2 sockets but LISTEN_FDNAMES names 0"},
		{names: "gateway", set: true, count: 2, wantErr: "2 sockets but LISTEN_FDNAMES names 1"},
		{names: "gateway:web", set: true, count: 2, wantErr: `a socket is named "web"`},
	} {
		env := map[string]string{}
		if c.set {
			env["LISTEN_FDNAMES"] = c.names
		}
		got, err := socketNames(envOf(env), c.count)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q ×%d: error %v, want %q", c.names, c.count, err, c.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%q ×%d: %v, %v; want %s", c.names, c.count, got, err, c.want)
		}
	}
}

// The variables are for the process LISTEN_PID names: a child that inherited them
// by mistake takes no socket.
func TestInheritedSockets_OnlyForTheNamedProcess(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"LISTEN_PID": "4242", "LISTEN_FDS": "1"},
		{"LISTEN_FDS": "1"},
	} {
		s, err := inheritedSockets(envOf(env), 1234)
		if err != nil || s != nil {
			t.Errorf("%v: %v, %v; want no sockets and no error", env, s, err)
		}
	}
	if _, err := inheritedSockets(envOf(map[string]string{"LISTEN_PID": "1234", "LISTEN_FDS": "two"}), 1234); err == nil ||
		!strings.Contains(err.Error(), `LISTEN_FDS="two"`) {
		t.Errorf("a bad LISTEN_FDS: %v", err)
	}
}
