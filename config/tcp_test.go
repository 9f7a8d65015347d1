package config

import (
	"strings"
	"testing"
	"time"
)

func TestParse_TCPRoutes(t *testing.T) {
	src := `
node: {listen: "127.0.0.1:8080"}
paas:
  driver: process
  apps:
    - {id: db, command: [pg], ready: {postgres: "127.0.0.1:5433"}}
    - {id: cache, command: [redis], ready: {redis: "127.0.0.1:6380"}}
tcp_routes:
  - {id: pg, listen: "127.0.0.1:5432", app_id: db, target: "127.0.0.1:5433", grace_period: 10m, connection_idle_timeout: 2m}
  - {id: redis, listen: ":6379", app_id: cache, target: "127.0.0.1:6380", mode: keep_connections, max_held: 50}
`
	cfg, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	pg, redis := cfg.TCPRoutes[0], cfg.TCPRoutes[1]
	if pg.IdleTimeout() != 2*time.Minute || pg.Policy().GracePeriod.D() != 10*time.Minute || pg.Policy().MaxHeld != 1000 || pg.Policy().FailTimeout.D() != 15*time.Minute {
		t.Errorf("pg: idle %v, policy %+v", pg.IdleTimeout(), pg.Policy())
	}
	if redis.IdleTimeout() != 0 || redis.Policy().MaxHeld != 50 || redis.Policy().GracePeriod.D() != time.Hour {
		t.Errorf("redis: idle %v, policy %+v", redis.IdleTimeout(), redis.Policy())
	}
	// Without connection_idle_timeout, a quiet connection is reaped after the grace period.
	cfg.TCPRoutes[0].ConnectionIdleTimeout = 0
	if got := cfg.TCPRoutes[0].IdleTimeout(); got != 10*time.Minute {
		t.Errorf("default idle timeout = %v, want the grace period", got)
	}
}

func TestParse_TCPRouteErrorsNameTheirField(t *testing.T) {
	src := `
node: {listen: "127.0.0.1:8080", admin_listen: "127.0.0.1:9090"}
paas:
  driver: process
  apps:
    - {id: db, command: [pg], ready: {postgres: "127.0.0.1:5433"}}
routes:
  - id: web
    frontend: {domains: [web.localhost]}
    backend: {targets: ["http://127.0.0.1:1"]}
    plugins: [{plugin: reaper, config: {app_id: db}}]
tcp_routes:
  - {id: pg, listen: "127.0.0.1:5432", app_id: db, target: "127.0.0.1:5433", mode: pooled}
  - {id: pg, listen: "0.0.0.0:5432", app_id: dbb, target: "5433", grace_period: -1s}
  - {id: web, listen: "127.0.0.1:8080", app_id: db, target: "127.0.0.1:5433", mode: keep_connections, connection_idle_timeout: 1m, max_held: -2}
  - {listen: "127.0.0.1:9090", target: "127.0.0.1:5433", must_be_up_at: [{days: [Funday], start: "08:00", end: "18:00"}]}
`
	_, err := Parse([]byte(src), env(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`tcp_routes[0].mode: "pooled" is not a mode (use request_response or keep_connections)`,
		`tcp_routes[1].id: "pg" is already the id of tcp_routes[0]`,
		`tcp_routes[1].listen: "0.0.0.0:5432": its port is already the listen address of tcp_routes[0].listen`,
		`tcp_routes[1].app_id: "dbb" is not an app of paas.apps (did you mean "db"?)`,
		`tcp_routes[1].target: "5433" is not host:port`,
		`tcp_routes[1].grace_period: "-1s" is negative`,
		`tcp_routes[2].id: "web" is already the id of routes[0]`,
		`tcp_routes[2].listen: "127.0.0.1:8080": its port is already node.listen`,
		`tcp_routes[2].connection_idle_timeout: is not used in keep_connections mode`,
		`tcp_routes[2].max_held: must be at least 1`,
		`tcp_routes[3].id: is required`,
		`tcp_routes[3].app_id: is required`,
		`tcp_routes[3].listen: "127.0.0.1:9090": its port is already node.admin_listen`,
		`tcp_routes[3].must_be_up_at[0].days[0]`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
