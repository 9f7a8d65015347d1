package process

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
)

// decodeApps decodes src as the list under paas.apps, as the configuration loader
// does, and returns the error lines.
func decodeApps(t *testing.T, src string) ([]AppConfig, []string) {
	t.Helper()
	n, err := conf.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var apps []AppConfig
	var errs conf.Errors
	(&conf.Decoder{Env: func(string) (string, bool) { return "", false }}).Decode(n, &apps, "paas.apps", &errs)
	ValidateApps(apps, "paas.apps", &errs)
	var list conf.List
	if err := errs.Err(); err != nil && !errors.As(err, &list) {
		t.Fatalf("error %v is not a conf.List", err)
	}
	var lines []string
	for _, e := range list {
		lines = append(lines, e.Error())
	}
	return apps, lines
}

func TestAppConfig_ErrorsNameTheField(t *testing.T) {
	const ok = `{id: a, command: [x], ready: {tcp: "127.0.0.1:3001"}}`
	cases := []struct {
		name, src string
		want      []string
	}{
		{"valid", `[` + ok + `, {id: b, command: [x, -v], ready: {http: "https://h/healthz", interval: 50ms}, stop_signal: int, stop_timeout: 3}]`, nil},
		{"required", `[{dir: x}]`, []string{
			`paas.apps[0].id: is required`,
			`paas.apps[0].command: is required (the program and its arguments, as a list)`,
			`paas.apps[0].ready: give exactly one of tcp, http, postgres or redis`,
		}},
		{"both probes", `[` + ok + `, {id: b, command: [x], ready: {tcp: "h:1", http: "http://h/"}}]`,
			[]string{`paas.apps[1].ready: give exactly one of tcp, http, postgres or redis`}},
		{"neither probe", `[{id: a, command: [x], ready: {interval: 1s}}]`,
			[]string{`paas.apps[0].ready: give exactly one of tcp, http, postgres or redis`}},
		{"bad signal", `[{id: a, command: [x], ready: {tcp: "h:1"}, stop_signal: SIGFOO}]`,
			[]string{`paas.apps[0].stop_signal: "SIGFOO" is not a signal reaper can send (use SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1 or SIGUSR2)`}},
		{"kill is not a stop signal", `[{id: a, command: [x], ready: {tcp: "h:1"}, stop_signal: KILL}]`,
			[]string{`paas.apps[0].stop_signal: "KILL" is not a signal reaper can send (use SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1 or SIGUSR2)`}},
		{"duplicate ids", `[` + ok + `, {id: b, command: [x], ready: {tcp: "h:1"}}, ` + ok + `]`,
			[]string{`paas.apps[2].id: "a" is already the id of paas.apps[0]`}},
		{"bad id", `[{id: ../etc, command: [x], ready: {tcp: "h:1"}}]`,
			[]string{`paas.apps[0].id: "../etc" must be letters, digits, '.', '-' or '_' (it names files), not starting with '.'`}},
		{"empty program", `[{id: a, command: [" ", x], ready: {tcp: "h:1"}}]`,
			[]string{`paas.apps[0].command[0]: the program must not be empty`}},
		{"command as a string", `[{id: a, command: "./app --x", ready: {tcp: "h:1"}}]`,
			[]string{`paas.apps[0].command: must be a list, got a string`,
				`paas.apps[0].command: is required (the program and its arguments, as a list)`}},
		{"bad tcp", `[{id: a, command: [x], ready: {tcp: "localhost"}}, {id: b, command: [x], ready: {tcp: "h:99999"}}]`,
			[]string{`paas.apps[0].ready.tcp: "localhost" is not host:port (e.g. 127.0.0.1:3001)`,
				`paas.apps[1].ready.tcp: "h:99999" is not host:port (e.g. 127.0.0.1:3001)`}},
		{"bad http", `[{id: a, command: [x], ready: {http: "ftp://h/"}}]`,
			[]string{`paas.apps[0].ready.http: "ftp://h/" is not an http(s) URL`}},
		{"bad http with a password", `[{id: a, command: [x], ready: {http: "ftp://u:hunter2@h/"}}]`,
			[]string{`paas.apps[0].ready.http: "ftp://u:xxxxx@h/" is not an http(s) URL`}},
		{"interval too short", `[{id: a, command: [x], ready: {tcp: "h:1", interval: 1ms}}]`,
			[]string{`paas.apps[0].ready.interval: 1ms is too short (at least 5ms)`}},
		{"bad env names", `[{id: a, command: [x], ready: {tcp: "h:1"}, env: {1X: a, OK: b}, inherit_env: [PATH, "A B"]}]`,
			[]string{`paas.apps[0].env.1X: "1X" is not a valid environment variable name`,
				`paas.apps[0].inherit_env[1]: "A B" is not a valid environment variable name`}},
		{"unknown key", `[{id: a, command: [x], ready: {tcp: "h:1"}, stop_timout: 3s}]`,
			[]string{`paas.apps[0].stop_timout: unknown key (did you mean "stop_timeout"?)`}},
		{"busy_url and busy_max", `[{id: a, command: [x], ready: {tcp: "h:1"}, busy_url: "http://127.0.0.1:3001/busy?token=t", busy_max: 30m}]`, nil},
		{"bad busy_url", `[{id: a, command: [x], ready: {tcp: "h:1"}, busy_url: "ftp://h/busy?token=s3cret"},
			{id: b, command: [x], ready: {tcp: "h:1"}, busy_url: "http://u:pw@h/busy"}]`,
			[]string{`paas.apps[0].busy_url: is not an http(s) URL (http://127.0.0.1:3001/busy)`,
				`paas.apps[1].busy_url: must not hold a user or password: put a token in the query or path`}},
		{"busy_max out of bounds", `[{id: a, command: [x], ready: {tcp: "h:1"}, busy_url: "http://h/busy", busy_max: 500ms},
			{id: b, command: [x], ready: {tcp: "h:1"}, busy_max: 200h}]`,
			[]string{`paas.apps[0].busy_max: 500ms is not from 1s to 168h0m0s`,
				`paas.apps[1].busy_max: 200h0m0s is not from 1s to 168h0m0s`}},
		{"bad duration", `[{id: a, command: [x], ready: {tcp: "h:1"}, stop_timeout: soon}]`,
			[]string{`paas.apps[0].stop_timeout: "soon" is not a duration (write 90s, 15m, 1h30m or a number of seconds)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, got := decodeApps(t, tc.src)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestAppConfig_ResolveAppliesDefaults(t *testing.T) {
	apps, errs := decodeApps(t, `
- id: hello
  command: ["./bin/demoapp", "--listen", "127.0.0.1:3001"]
  env: {GREETING: hi, HOME: /srv/hello}
  ready: {tcp: 127.0.0.1:3001}
- id: tuned
  command: [app]
  inherit_env: []
  dir: ./apps/tuned
  stop_signal: usr2
  stop_timeout: 2.5
  log_file: /var/log/tuned.log
  ready: {http: "http://127.0.0.1:3002/", interval: 100ms}
`)
	if errs != nil {
		t.Fatal(errs)
	}
	env := map[string]string{"PATH": "/bin", "HOME": "/root", "REAPER_ADMIN_TOKEN": "secret", "LANG": "C"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	s := apps[0].resolve("/data", lookup)
	if s.stopSignal != "SIGTERM" || s.stopTimeout != 10*time.Second || s.interval != 25*time.Millisecond ||
		s.logFile != "/data/logs/hello.log" || s.dir != "" || s.ready.TCP != "127.0.0.1:3001" {
		t.Errorf("defaults: %+v", s)
	}
	// Inherited first (HOME overridden by env: is not inherited), then env: sorted.
	if want := []string{"PATH=/bin", "LANG=C", "GREETING=hi", "HOME=/srv/hello"}; !slices.Equal(s.env, want) {
		t.Errorf("env = %q, want %q", s.env, want)
	}

	s = apps[1].resolve("/data", lookup)
	if s.stopSignal != "SIGUSR2" || s.stopTimeout != 2500*time.Millisecond || s.interval != 100*time.Millisecond ||
		s.logFile != "/var/log/tuned.log" || s.dir != "./apps/tuned" || s.ready.HTTP != "http://127.0.0.1:3002/" {
		t.Errorf("given values: %+v", s)
	}
	if s.env == nil || len(s.env) != 0 {
		t.Errorf("inherit_env: [] gives env %#v, want empty and non-nil (nil would pass everything on)", s.env)
	}
}

func TestSignalName(t *testing.T) {
	for in, want := range map[string]string{
		"SIGTERM": "SIGTERM", "term": "SIGTERM", " Int ": "SIGINT", "sigquit": "SIGQUIT", "HUP": "SIGHUP",
		"USR1": "SIGUSR1", "SIGUSR2": "SIGUSR2", "KILL": "", "SIGSTOP": "", "": "", "SIG": "", "15": "",
	} {
		if got := signalName(in); got != want {
			t.Errorf("signalName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSpec_ReadyTargetMasksPasswords(t *testing.T) {
	s := spec{ready: ReadyConfig{HTTP: "http://probe:s3cr3t@127.0.0.1:3001/healthz"}}
	if got := s.readyTarget(); strings.Contains(got, "s3cr3t") || got != "http://probe:xxxxx@127.0.0.1:3001/healthz" {
		t.Errorf("readyTarget = %q", got)
	}
	if got := (&spec{ready: ReadyConfig{TCP: "127.0.0.1:1"}}).readyTarget(); got != "127.0.0.1:1" {
		t.Errorf("readyTarget = %q", got)
	}
}
