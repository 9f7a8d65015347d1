package docker

import (
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
)

// These tests need no engine.

func TestFromLabels_ReadsEveryKey(t *testing.T) {
	c, problem := fromLabels("web-1", map[string]string{
		LabelEnable: "true", LabelAppID: "web", LabelStopMethod: "pause", LabelStopTimeout: "30s",
		LabelReadyHTTP: "http://web-1:8080/health", LabelReadyInterval: "50ms", LabelDependsOn: "db, cache,",
		LabelPricePerHour: "0.5", LabelCurrency: "USD", LabelBusyURL: " http://web-1:8080/busy ", LabelBusyMax: "20m",
	})
	if problem != "" {
		t.Fatal(problem)
	}
	s := c.resolve("local")
	if s.id != "web" || s.container != "web-1" || s.method != MethodPause || s.timeout != 30*time.Second ||
		s.ready == nil || s.ready.HTTP != "http://web-1:8080/health" || s.ready.Steady() != 50*time.Millisecond ||
		strings.Join(s.dependsOn, ",") != "db,cache" || s.price != 0.5 || s.currency != "USD" || s.host != "local" ||
		s.busyURL != "http://web-1:8080/busy" || s.busyMax != 20*time.Minute {
		t.Errorf("spec %+v", s)
	}
}

func TestFromLabels_DefaultsAndProblems(t *testing.T) {
	c, problem := fromLabels("api", map[string]string{LabelEnable: "true"})
	s := c.resolve("local")
	if problem != "" || s.id != "api" || s.method != MethodStop || s.timeout != DefaultStopTimeout || s.ready != nil || s.currency != "EUR" {
		t.Errorf("defaults: %+v, %q", s, problem)
	}
	_, problem = fromLabels("x", map[string]string{
		LabelEnable: "true", LabelStopMethod: "freeze", LabelStopTimeout: "soon", LabelReadyTCP: "nope",
		LabelPricePerHour: "cheap", LabelDependsOn: "x", LabelBusyURL: "web-1:8080/busy?token=s3cret", LabelBusyMax: "2s0",
	})
	for _, want := range []string{
		`reaper.stop_method: "freeze" is not a stop method`, `reaper.stop_timeout: "soon" is not a duration`,
		`reaper.ready.tcp: "nope" is not host:port`, `reaper.price_per_hour: "cheap" is not a price`,
		"reaper.depends_on[0]: an app cannot depend on itself",
		"reaper.busy_url: is not an http(s) URL", `reaper.busy_max: "2s0" is not a duration`,
	} {
		if !strings.Contains(problem, want) {
			t.Errorf("missing %q in %q", want, problem)
		}
	}
	if strings.Contains(problem, "s3cret") {
		t.Errorf("the problem shows the busy_url's token: %q", problem)
	}
	if _, problem = fromLabels("w", map[string]string{LabelEnable: "true", LabelBusyMax: "200h"}); !strings.Contains(problem,
		"reaper.busy_max: 200h0m0s is not from 1s to 168h0m0s") {
		t.Errorf("busy_max out of bounds: %q", problem)
	}
}

func TestOptedIn_OnlyTrue(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "1": true, "TRUE": true, "false": false, "": false, "yes": false} {
		if got := optedIn(map[string]string{LabelEnable: v}); got != want {
			t.Errorf("%s=%q: %v, want %v", LabelEnable, v, got, want)
		}
	}
	if optedIn(map[string]string{LabelAppID: "web"}) {
		t.Error("an app id without reaper.enable opts in")
	}
}

func TestMatches_NameOrID(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for ref, want := range map[string]bool{"web": true, "/web": true, id: true, id[:12]: true, id[:6]: false, "we": false} {
		if got := matches(ref, id, "web"); got != want {
			t.Errorf("matches(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestConfig_EnginesDefaultToDockerHost(t *testing.T) {
	env := func(v string) func(string) (string, bool) {
		return func(string) (string, bool) { return v, v != "" }
	}
	if h := (&Config{}).engines(env(""))[0]; h.Host != DefaultHost || h.Name != "local" {
		t.Errorf("no DOCKER_HOST: %+v", h)
	}
	if h := (&Config{}).engines(env("tcp://10.0.0.2:2376"))[0]; h.Host != "tcp://10.0.0.2:2376" {
		t.Errorf("DOCKER_HOST: %+v", h)
	}
	if h := (&Config{Host: "unix:///x.sock"}).engines(env("tcp://y:1"))[0]; h.Host != "unix:///x.sock" {
		t.Errorf("host wins over DOCKER_HOST: %+v", h)
	}
}

func TestDependencyCycle(t *testing.T) {
	apps := []AppConfig{{ID: "a", DependsOn: []string{"b"}}, {ID: "b", DependsOn: []string{"c"}}, {ID: "c"}}
	if c := dependencyCycle(apps); c != nil {
		t.Errorf("no cycle, got %v", c)
	}
	apps[2].DependsOn = []string{"a"}
	if c := strings.Join(dependencyCycle(apps), " → "); c != "a → b → c → a" {
		t.Errorf("cycle %q", c)
	}
}

func TestNew_InvalidConfigurationIsRefused(t *testing.T) {
	_, err := New(Options{Config: Config{Apps: []AppConfig{{ID: "a"}}, Host: "ssh://box"}})
	if err == nil || !strings.Contains(err.Error(), "paas.docker.apps[0].container: is required") || !strings.Contains(err.Error(), "ssh://") {
		t.Errorf("err = %v", err)
	}
}

func TestDescribeExit(t *testing.T) {
	for _, c := range []struct {
		v    *view
		want string
	}{
		{nil, "was removed"},
		{&view{status: container.StatePaused}, "was paused"},
		{&view{status: container.StateExited, exitCode: 137, oomKilled: true}, "was killed for lack of memory (OOM, status 137)"},
		{&view{status: container.StateExited, exitCode: 3}, "exited with status 3"},
	} {
		if got := describeExit(c.v); got != c.want {
			t.Errorf("describeExit(%+v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestGraceLabel(t *testing.T) {
	for _, tc := range []struct {
		labels  map[string]string
		want    time.Duration
		wantErr string
	}{
		{map[string]string{LabelEnable: "true"}, 0, ""},
		{map[string]string{LabelGracePeriod: "2s"}, 2 * time.Second, ""},
		{map[string]string{LabelGracePeriod: " 90 "}, 90 * time.Second, ""}, // bare seconds, as in the file
		{map[string]string{LabelGracePeriod: "1h30m"}, 90 * time.Minute, ""},
		{map[string]string{LabelGracePeriod: "soon"}, 0, `label reaper.grace_period: "soon" is not a duration`},
		{map[string]string{LabelGracePeriod: "0"}, 0, `label reaper.grace_period: "0" must be more than 0`},
		{map[string]string{LabelGracePeriod: "-5m"}, 0, `"-5m" is negative`},
		{map[string]string{LabelGracePeriod: ""}, 0, `is not a duration`},
	} {
		got, err := graceLabel(tc.labels)
		if got != tc.want {
			t.Errorf("%v: %s, want %s", tc.labels, got, tc.want)
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v, want no error", tc.labels, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: %v, want an error with %q", tc.labels, err, tc.wantErr)
		}
	}
	// A grace period that cannot be read does not keep the driver from the app.
	if _, problem := fromLabels("x", map[string]string{LabelEnable: "true", LabelGracePeriod: "soon"}); problem != "" {
		t.Errorf("an unreadable grace period is a problem of the driver's: %q", problem)
	}
}

func TestTraefikLabel(t *testing.T) {
	for _, tc := range []struct {
		labels  map[string]string
		want    bool
		wantErr string
	}{
		{map[string]string{LabelEnable: "true"}, false, ""},
		{map[string]string{LabelTraefik: "true"}, true, ""},
		{map[string]string{LabelTraefik: " 1 "}, true, ""},
		{map[string]string{LabelTraefik: "false"}, false, ""},
		{map[string]string{LabelTraefik: "yes"}, false, `label reaper.traefik: "yes" is not true or false`},
		{map[string]string{LabelTraefik: ""}, false, `"" is not true or false`},
	} {
		got, err := traefikLabel(tc.labels)
		if got != tc.want {
			t.Errorf("%v: %v, want %v", tc.labels, got, tc.want)
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v, want no error", tc.labels, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: %v, want an error with %q", tc.labels, err, tc.wantErr)
		}
	}
	// Unreadable, it does not keep the driver from the app.
	if _, problem := fromLabels("x", map[string]string{LabelEnable: "true", LabelTraefik: "yes"}); problem != "" {
		t.Errorf("an unreadable Traefik label is a problem of the driver's: %q", problem)
	}
}

func TestCameBackWhy(t *testing.T) {
	lost := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	back := lost.Add(4 * time.Second)
	always := func(started time.Time) *view {
		return &view{restart: container.RestartPolicyAlways, startedAt: started}
	}
	for _, c := range []struct {
		name       string
		v          *view
		lost, back time.Time
		want       string
	}{
		{"the engine restarted", always(back.Add(-time.Second)), lost, back, `brought back by its restart policy "always" as the engine restarted (unreachable from 12:00:00 to 12:00:04)`},
		{"started just after the engine answered", always(back.Add(time.Second)), lost, back, `as the engine restarted`},
		{"long after the outage", always(back.Add(time.Hour)), lost, back, `started by hand, or by its restart policy "always"`},
		{"before the outage", always(lost.Add(-time.Minute)), lost, back, `started by hand, or by its restart policy "always"`},
		{"no outage", always(back), time.Time{}, time.Time{}, `started by hand, or by its restart policy "always"`},
		{"still out", always(back), lost, time.Time{}, `started by hand, or by its restart policy "always"`},
		{"no restart policy", &view{startedAt: back}, lost, back, "started from outside (docker start, compose, a deploy)"},
		{"on-failure", &view{restart: container.RestartPolicyOnFailure, startedAt: back}, lost, back, `"on-failure" after a crash`},
	} {
		got := cameBackWhy(c.v, c.lost, c.back)
		if !strings.Contains(got, c.want) || !strings.HasSuffix(got, "goes back to sleep after its grace period") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
