package config

import (
	"strings"
	"testing"
)

func TestParse_ProtocolReadinessErrorsNameTheirField(t *testing.T) {
	src := `
paas:
  driver: process
  apps:
    - {id: db, command: [pg], ready: {postgres: "localhost", password: "pw"}}
    - {id: cache, command: [redis], ready: {redis: "127.0.0.1:6379", username: bob}}
    - {id: both, command: [x], ready: {redis: "127.0.0.1:6379", tcp: "127.0.0.1:1"}}
    - {id: web, command: [x], ready: {http: "http://127.0.0.1:1/", username: bob}}
routes:
  - id: db
    frontend: {domains: [db.localhost]}
    backend: {targets: ["http://127.0.0.1:1"]}
    plugins: [{plugin: reaper, config: {app_id: db}}]
`
	_, err := Parse([]byte(src), env(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`paas.apps[0].ready.postgres: "localhost" is not host:port`,
		`paas.apps[0].ready.password: only a redis probe sends a password`,
		`paas.apps[1].ready.username: a redis username goes with a password`,
		`paas.apps[2].ready: give exactly one of tcp, http, postgres or redis`,
		`paas.apps[3].ready.username: only a redis or postgres probe names a user`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

func TestReadinessNotes_ARedisProbeWithoutAPassword(t *testing.T) {
	src := `
paas:
  driver: process
  apps:
    - {id: cache, command: [redis], ready: {redis: "127.0.0.1:6379"}}
    - {id: safe, command: [redis], ready: {redis: "127.0.0.1:6380", password: "${PW}"}}
    - {id: db, command: [pg], ready: {postgres: "127.0.0.1:5432"}}
routes:
  - id: cache
    frontend: {domains: [c.localhost]}
    backend: {targets: ["http://127.0.0.1:1"]}
    plugins: [{plugin: reaper, config: {app_id: cache}}]
`
	cfg, err := Parse([]byte(src), env(map[string]string{"PW": "secret"}))
	if err != nil {
		t.Fatal(err)
	}
	notes := cfg.ReadinessNotes()
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "paas.apps[0].ready: redis 127.0.0.1:6379 without a password") {
		t.Errorf("notes = %q", notes)
	}
	if cfg.PaaS.Apps[1].Ready.Password != "secret" {
		t.Errorf("password = %q, want it from the environment", cfg.PaaS.Apps[1].Ready.Password)
	}
}
