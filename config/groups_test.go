package config

import (
	"slices"
	"strings"
	"testing"
)

const groupsBase = `
node: {listen: "127.0.0.1:8080"}
paas:
  driver: process
  apps:
    - {id: web, command: [web], ready: {tcp: "127.0.0.1:3001"}}
    - {id: api, command: [api], ready: {tcp: "127.0.0.1:3002"}}
    - {id: worker, command: [worker], ready: {tcp: "127.0.0.1:3003"}}
    - {id: cron, command: [cron], ready: {tcp: "127.0.0.1:3004"}}
routes:
  - id: web
    frontend: {domains: [web.localhost]}
    backend: {targets: ["http://127.0.0.1:3001"]}
    plugins: [{plugin: reaper, config: {app_id: web}}]
`

func TestParse_Groups(t *testing.T) {
	cfg, err := Parse([]byte(groupsBase+`
groups:
  - {id: shop, apps: [web, api, worker]}
  - {id: batch, apps: [cron]}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.ReaperGroups()
	if len(got) != 2 || got[0].ID != "shop" || !slices.Equal(got[0].Apps, []string{"web", "api", "worker"}) || got[1].ID != "batch" {
		t.Fatalf("groups = %+v", got)
	}
}

func TestParse_GroupErrorsNameTheirField(t *testing.T) {
	for _, tc := range []struct {
		name, groups string
		want         []string
	}{
		{"an unknown app", `[{id: shop, apps: [web, wrokerr]}]`, []string{`groups[0].apps[1]: "wrokerr" is not an app of paas.apps`}},
		{"one app in two groups", `[{id: shop, apps: [web, api]}, {id: other, apps: [api]}]`, []string{`groups[1].apps[0]: "api" is already in groups[0]`}},
		{"a duplicate group id", `[{id: shop, apps: [web]}, {id: shop, apps: [api]}]`, []string{`groups[1].id: "shop" is already the id of groups[0]`}},
		{"a group id that is an app id", `[{id: worker, apps: [web, api]}]`, []string{`groups[0].id: "worker" is the id of an app`}},
		{"a group id that is a member's id", `[{id: x, apps: [web]}, {id: web, apps: [api]}]`, []string{`groups[1].id: "web" is the id of an app`}},
		{"an app twice in a group", `[{id: shop, apps: [web, web]}]`, []string{`groups[0].apps[1]: "web" is already groups[0].apps[0]`}},
		{"no id, no apps", `[{apps: []}]`, []string{`groups[0].id: is required`, `groups[0].apps: is required`}},
		{"a bad id", `[{id: "a b", apps: [web]}]`, []string{`groups[0].id: "a b": use at most 64 letters`}},
		{"an unknown key", `[{id: shop, apps: [web], members: [api]}]`, []string{`groups[0].members`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(groupsBase+"groups: "+tc.groups+"\n"), env(nil))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestParse_DependsOn(t *testing.T) {
	src := strings.Replace(groupsBase, `- {id: web, command: [web], ready: {tcp: "127.0.0.1:3001"}}`,
		`- {id: web, command: [web], ready: {tcp: "127.0.0.1:3001"}, depends_on: [api]}`, 1)
	cfg, err := Parse([]byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.DependsOn(); !slices.Equal(got["web"], []string{"api"}) || len(got) != 1 {
		t.Fatalf("DependsOn = %v", got)
	}
	for _, tc := range []struct{ deps, want string }{
		{`web: [apii]`, `paas.apps[0].depends_on[0]: "apii" is not an app of paas.apps`},
		{`web: [web]`, `paas.apps[0].depends_on[0]: an app cannot depend on itself`},
		{`web: [api], api: [web]`, `paas.apps: depends_on makes a cycle: api → web → api`},
	} {
		bad := groupsBase
		for _, kv := range strings.Split(tc.deps, ", ") {
			id, list, _ := strings.Cut(kv, ": ")
			old := `- {id: ` + id + `, command: [` + id + `], ready: {tcp: "127.0.0.1:300`
			i := strings.Index(bad, old)
			j := i + strings.Index(bad[i:], "}}") + 1
			bad = bad[:j] + ", depends_on: " + list + bad[j:]
		}
		_, err := Parse([]byte(bad), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.deps, err, tc.want)
		}
	}
}

func TestParse_GroupKeepUpWindows(t *testing.T) {
	cfg, err := Parse([]byte(groupsBase+`
groups:
  - id: shop
    apps: [web, api]
    must_be_up_at: [{days: [MON, TUE], start: "08:00", end: "18:00"}]
    timezone: Europe/London
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.ReaperGroups()[0]
	if len(g.MustBeUp) != 1 || g.MustBeUp[0].Location.String() != "Europe/London" {
		t.Fatalf("windows = %+v", g.MustBeUp)
	}
	_, err = Parse([]byte(groupsBase+`
groups:
  - {id: shop, apps: [web], must_be_up_at: [{days: [MON], start: "25:00", end: "18:00"}], timezone: Mars/Olympus}
`), env(nil))
	for _, want := range []string{"groups[0].must_be_up_at[0].start", "groups[0].timezone"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
