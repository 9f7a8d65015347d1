package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/reapergw/reaper/internal/conf"
)

// TestValidateRoutes_Messages checks every message of the route checks word for
// word, with its field path.
func TestValidateRoutes_Messages(t *testing.T) {
	const ok = `frontend: {domains: [a.test]}
    backend: {targets: ["http://127.0.0.1:1"]}`
	cases := []struct {
		name, routes string
		want         []string
	}{
		{"valid", "- id: a\n    " + ok, nil},
		{"id required", "- name: x\n    " + ok, []string{`routes[0].id: is required`}},
		{"id chars", "- id: a b\n    " + ok,
			[]string{`routes[0].id: "a b" is not a valid id (up to 128 letters, digits, '-', '_' or '.')`}},
		{"id twice", "- id: a\n    " + ok + "\n  - id: a\n    " + ok,
			[]string{`routes[1].id: "a" is already the id of routes[0]`,
				`routes[1].frontend.domains[0]: "a.test" is already a domain of routes[0] ("a.test"), which always matches first: this route would never be reached`}},
		{"a domain shadowed by an earlier route, case and wildcards alike",
			"- {id: a, frontend: {domains: [A.test, \"*\"]}, backend: {targets: [\"http://h\"]}}\n  - {id: b, frontend: {domains: [a.TEST, \"*\", b.test]}, backend: {targets: [\"http://h\"]}}\n  - {id: c, frontend: {domains: [a.test], methods: [POST]}, backend: {targets: [\"http://h\"]}}",
			[]string{
				`routes[1].frontend.domains[0]: "a.TEST" is already a domain of routes[0] ("A.test"), which always matches first: this route would never be reached`,
				`routes[1].frontend.domains[1]: "*" is already a domain of routes[0] ("*"), which always matches first: this route would never be reached`,
			}},
		{"no domain", "- id: a\n    frontend: {}\n    backend: {targets: [\"http://h\"]}",
			[]string{`routes[0].frontend.domains: at least one domain is required`}},
		{"bad domains", "- id: a\n    frontend: {domains: [ok.test, \"a b\", \"a.*.com\", \"x.test:80\", \"x.test/a//b\", \"x.test/../a\", \"x.test/a%20b\", \"[::1\", \"[zz]\", \"*.\", \"\"]}\n    backend: {targets: [\"http://h\"]}",
			[]string{
				`routes[0].frontend.domains[1]: "a b" is not a valid domain (host or host/path)`,
				`routes[0].frontend.domains[2]: "a.*.com" is not a valid domain (host or host/path)`,
				`routes[0].frontend.domains[3]: "x.test:80" is not a valid domain (host or host/path)`,
				`routes[0].frontend.domains[4]: "x.test/a//b" is not a valid domain (host or host/path)`,
				`routes[0].frontend.domains[5]: "x.test/../a" is not a valid domain (host or host/path)`,
				`routes[0].frontend.domains[6]: "x.test/a%20b" is not a valid domain (host or host/path)`,
				`routes[0].frontend.domains[7]: "[::1" is not a valid domain (host or host/path)`,
				`routes[0].frontend.domains[8]: "[zz]" is not a valid domain (host or host/path)`,
				`routes[0].frontend.domains[9]: "*." is not a valid domain (host or host/path)`,
				`routes[0].frontend.domains[10]: "" is not a valid domain (host or host/path)`,
			}},
		{"methods", "- id: a\n    frontend: {domains: [a.test], methods: [GET, \"G T\", \"\"]}\n    backend: {targets: [\"http://h\"]}",
			[]string{`routes[0].frontend.methods[1]: "G T" is not an HTTP method`, `routes[0].frontend.methods[2]: "" is not an HTTP method`}},
		{"headers", "- id: a\n    frontend: {domains: [a.test], headers: {\"X Bad\": v, X-Re: \"Regex(()\", X-Ok: \"Regex(^a.*)\", x-ok: dup}}\n    backend: {targets: [\"http://h\"]}",
			[]string{
				`routes[0].frontend.headers.X Bad: "X Bad" is not a valid header name`,
				`routes[0].frontend.headers.X-Re: "Regex(()" is not a valid regular expression: missing closing )`,
				`routes[0].frontend.headers.x-ok: is the same header as "X-Ok" (header names ignore case)`,
			}},
		{"no target", "- id: a\n    frontend: {domains: [a.test]}\n    backend: {targets: []}",
			[]string{`routes[0].backend.targets: at least one target is required`}},
		{"bad targets", "- id: a\n    frontend: {domains: [a.test]}\n    backend: {targets: [\"htp://x\", \"http://u:secret@h\", \"http://h?q=1\", \"http://h#f\", \"http://h/a/../b\", \"http:///x\", {url: \"http://h\", weight: 0}, {url: \"http://h\", weight: 101}, [1], ~]}",
			[]string{
				`routes[0].backend.targets[8]: must be a URL or a mapping {url, weight}, got a list`,
				`routes[0].backend.targets[0]: "htp://x" is not an http(s) URL`,
				`routes[0].backend.targets[1]: must not hold credentials (user:password@); use the headers plugin to send an Authorization header`,
				`routes[0].backend.targets[2]: "http://h?q=1" must not have a query or a fragment`,
				`routes[0].backend.targets[3]: "http://h#f" must not have a query or a fragment`,
				`routes[0].backend.targets[4]: "http://h/a/../b" has a path that is not a valid path prefix`,
				`routes[0].backend.targets[5]: "http:///x" is not an http(s) URL`,
				`routes[0].backend.targets[6].weight: must be between 1 and 100, got 0`,
				`routes[0].backend.targets[7].weight: must be between 1 and 100, got 101`,
				`routes[0].backend.targets[9]: "" is not an http(s) URL`,
			}},
		{"root", "- id: a\n    frontend: {domains: [a.test]}\n    backend: {targets: [\"http://h\"], root: api}",
			[]string{`routes[0].backend.root: "api" is not a valid path prefix (it must start with / and hold no empty, . or .. segment nor characters that need escaping)`}},
		{"plugin required", "- id: a\n    " + ok + "\n    plugins: [{enabled: true}]",
			[]string{`routes[0].plugins[0].plugin: is required`}},
		{"plugin unknown", "- id: a\n    " + ok + "\n    plugins: [{plugin: foo}]",
			[]string{`routes[0].plugins[0].plugin: unknown plugin "foo" (registered: ` + strings.Join(IDs(), ", ") + `)`}},
		{"include exclude", "- id: a\n    " + ok + "\n    plugins: [{plugin: test_steps, include: [\"(\", \"/ok\"], exclude: [\"[a\"]}]",
			[]string{
				`routes[0].plugins[0].include[0]: "(" is not a valid regular expression: missing closing )`,
				`routes[0].plugins[0].exclude[0]: "[a" is not a valid regular expression: missing closing ]`,
			}},
		{"plugin config strict", "- id: a\n    " + ok + "\n    plugins: [{plugin: test_steps, config: {tagg: x}}]",
			[]string{`routes[0].plugins[0].config.tagg: unknown key (did you mean "tag"?)`}},
		{"plugin config shape", "- id: a\n    " + ok + "\n    plugins: [{plugin: test_steps, config: [1]}]",
			[]string{`routes[0].plugins[0].config: must be a mapping, got a list`}},
		{"plugin validated without config", "- id: a\n    " + ok + "\n    plugins: [{plugin: test_required}]",
			[]string{`routes[0].plugins[0].config.name: is required`}},
		{"disabled plugin still checked", "- id: a\n    " + ok + "\n    plugins: [{plugin: test_required, enabled: false, config: {}}]",
			[]string{`routes[0].plugins[0].config.name: is required`}},
		{"unset variable in plugin config", "- id: a\n    " + ok + "\n    plugins: [{plugin: test_steps, config: {tag: \"${NOPE}\"}}]",
			[]string{`routes[0].plugins[0].config.tag: environment variable NOPE is not set`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Decoding errors (shapes) and validation errors together, as the
			// configuration loader reports them.
			routes, err := parseRoutes(t, "routes:\n  "+tc.routes, nil)
			var errs conf.Errors
			errs.AddError("", err)
			ValidateRoutes(routes, "routes", &errs)
			got := errorLines(errs.Err())
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func TestValidateRoutes_TooManyPlugins(t *testing.T) {
	var b strings.Builder
	b.WriteString("routes:\n  - id: a\n    frontend: {domains: [a.test]}\n    backend: {targets: [\"http://h\"]}\n    plugins:\n")
	for range maxPluginsPerRoute + 1 {
		b.WriteString("      - plugin: test_steps\n")
	}
	routes, err := parseRoutes(t, b.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var errs conf.Errors
	ValidateRoutes(routes, "routes", &errs)
	want := []string{`routes[0].plugins: has 65 plugins; a route may have at most 64`}
	if got := errorLines(errs.Err()); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestValidateRoutes_PluginConfigExpandsEnvironment(t *testing.T) {
	routes, err := parseRoutes(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["http://h"]}
    plugins: [{plugin: test_steps, config: {tag: "${TAG}"}}]
`, map[string]string{"TAG": "from-env"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := BuildRouter(context.Background(), routes, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if tag := r.Routes()[0].plugins[0].p.(*stepsPlugin).Tag; tag != "from-env" {
		t.Errorf("tag = %q, want the environment's value", tag)
	}
}
