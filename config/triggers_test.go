package config

import (
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/trigger"
)

const triggersBase = `
node: {listen: "127.0.0.1:8080"}
paas:
  driver: process
  apps:
    - {id: worker, command: [w], ready: {tcp: "127.0.0.1:3002"}}
routes:
  - id: worker
    frontend: {domains: [worker.localhost]}
    backend: {targets: ["http://127.0.0.1:3002"]}
    plugins: [{plugin: reaper, config: {app_id: worker}}]
`

func TestParse_Triggers(t *testing.T) {
	src := triggersBase + `triggers:
  - {id: jobs, wake: worker, every: 5s, redis_list: {addr: "127.0.0.1:6379", key: jobs, password: "${REDIS_PASSWORD}", db: 2}}
  - {id: cron, wake: worker, redis_due: {addr: "127.0.0.1:6379", key: schedule, lead: 2m}}
  - {id: pending, wake: worker, sql: {dsn: "postgres://u:p@127.0.0.1/db", query: "SELECT count(*) FROM jobs"}}
  - {id: hook, wake: worker, http: {url: "http://127.0.0.1:9000/work"}}
  - {id: notify, wake: worker, postgres_notify: {dsn: "postgres://u:p@127.0.0.1/db", channel: jobs}}
  - {id: producer, wake: worker, token: "${PRODUCER_TOKEN}"}
`
	cfg, err := Parse([]byte(src), env(map[string]string{"REDIS_PASSWORD": "s3cret", "PRODUCER_TOKEN": "0123456789abcdef0123"}))
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{trigger.KindRedisList, trigger.KindRedisDue, trigger.KindSQL, trigger.KindHTTP, trigger.KindPostgresNotify, trigger.KindEndpoint}
	for i, want := range kinds {
		if got := cfg.Triggers[i].Kind(); got != want {
			t.Errorf("triggers[%d] is %q, want %q", i, got, want)
		}
	}
	jobs := cfg.Triggers[0]
	if jobs.EveryOrDefault() != 5*time.Second || jobs.RedisList.Password.Reveal() != "s3cret" || jobs.RedisList.DB != 2 || jobs.RedisList.Key != "jobs" {
		t.Errorf("jobs: %+v", jobs.RedisList)
	}
	if cron := cfg.Triggers[1]; cron.EveryOrDefault() != trigger.DefaultEvery || cron.RedisDue.Lead.D() != 2*time.Minute {
		t.Errorf("cron: every %s, lead %s", cron.EveryOrDefault(), cron.RedisDue.Lead)
	}
	if cfg.Triggers[5].Polls() || cfg.Triggers[5].Token.Reveal() != "0123456789abcdef0123" {
		t.Errorf("producer: polls %v", cfg.Triggers[5].Polls())
	}
}

func TestParse_TriggerErrorsNameTheirFieldAndHideSecrets(t *testing.T) {
	src := triggersBase + `triggers:
  - {id: jobs, wake: worker, redis_list: {addr: "localhost", key: ""}, every: 10ms}
  - {id: jobs, wake: wroker, redis_due: {addr: "127.0.0.1:6379", key: s, lead: 200h}}
  - {id: "bad id", wake: worker, sql: {dsn: "postgres://u:topsecret@[::1", query: " "}}
  - {id: h, wake: worker, http: {url: "ftp://x/?token=topsecret"}, redis_list: {addr: "127.0.0.1:1", key: k}}
  - {id: n, wake: worker, postgres_notify: {dsn: "postgres://127.0.0.1/db"}}
  - {id: p, wake: worker, token: topsecret, every: 1s}
  - {id: none}
`
	_, err := Parse([]byte(src), env(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`triggers[0].every: must be between 100ms and 24h0m0s`,
		`triggers[0].redis_list.addr: must be host:port, not "localhost"`,
		`triggers[0].redis_list.key: is required`,
		`triggers[1].id: "jobs" is already the id of triggers[0]`,
		`triggers[1].wake: "wroker" is not an app that a route manages, nor a group`,
		`triggers[1].redis_due.lead: must be at most 168h0m0s`,
		`triggers[2].id: "bad id": only letters, digits`,
		`triggers[2].sql.dsn: is not a Postgres connection string`,
		`triggers[2].sql.query: is required`,
		`triggers[3]: needs exactly one of redis_list, redis_due, sql, http, postgres_notify or token (found 2)`,
		`triggers[3].http.url: must be an http:// or https:// URL`,
		`triggers[4].postgres_notify.channel: is required`,
		`triggers[5].token: must be at least 16 characters`,
		`triggers[5].every: has no meaning for a producer's trigger`,
		`triggers[6].wake: is required`,
		`triggers[6]: needs exactly one of redis_list, redis_due, sql, http, postgres_notify or token (found 0)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "topsecret") {
		t.Errorf("an error quotes a secret:\n%v", err)
	}
}

func TestParse_TriggerMayWakeAGroup(t *testing.T) {
	src := triggersBase + `groups:
  - {id: backoffice, apps: [worker]}
triggers:
  - {id: jobs, wake: backoffice, redis_list: {addr: "127.0.0.1:6379", key: jobs}}
`
	cfg, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Triggers[0].Wake != "backoffice" {
		t.Errorf("wake %q", cfg.Triggers[0].Wake)
	}
}
