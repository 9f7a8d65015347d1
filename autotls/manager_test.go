package autotls

import (
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	"github.com/reapergw/reaper/internal/logtest"
)

// handshake runs a TLS handshake for serverName against cfg over a pipe and
// returns the server's error.
func handshake(t *testing.T, cfg *tls.Config, serverName string) error {
	t.Helper()
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	go func() {
		client := tls.Client(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true})
		client.Handshake() // fails with the server's alert
		c.Close()
	}()
	srv := tls.Server(s, cfg)
	s.SetDeadline(time.Now().Add(10 * time.Second))
	return srv.Handshake()
}

func TestManager_RefusesNamesOfNoRouteWithoutAskingTheCA(t *testing.T) {
	logs := &logtest.Buffer{}
	m, err := New(Options{
		CA:      "https://127.0.0.1:1/dir", // nothing there: a call to the CA would fail the test below
		Storage: &certmagic.FileStorage{Path: t.TempDir()},
		HTTP01:  true,
		Logger:  logs.Logger(slog.LevelDebug),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	m.SetHosts([]string{"*.wild.test", "127.0.0.1"}) // no exact host: nothing to obtain
	for name, why := range map[string]string{
		"x.wild.test": "node.tls.acme.on_demand is not set",
		"other.test":  "not a host of the routes",
		"":            "no server name",
	} {
		err := handshake(t, m.TLSConfig(), name)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("handshake for %q: %v, want a refusal saying %q", name, err, why)
		}
	}
	if out := logs.String(); strings.Contains(out, "obtaining") || strings.Contains(out, "127.0.0.1:1") {
		t.Errorf("the manager went to the CA:\n%s", out)
	}
	if !strings.Contains(logs.String(), "hosts=[127.0.0.1]") {
		t.Errorf("the IP host of a route is not logged as getting no certificate:\n%s", logs.String())
	}
}

func TestNew_RefusesAnIncompleteConfiguration(t *testing.T) {
	fs := &certmagic.FileStorage{Path: t.TempDir()}
	for _, o := range []Options{
		{Storage: fs, HTTP01: true},
		{CA: "https://ca.example/dir", HTTP01: true},
		{CA: "https://ca.example/dir", Storage: fs},
	} {
		if m, err := New(o); err == nil {
			m.Stop()
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}
