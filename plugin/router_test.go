package plugin

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/reapergw/reaper/internal/conf"
)

func TestBuildRouter_ProvisionFailureCleansUp(t *testing.T) {
	routes, err := parseRoutes(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["http://h"]}
    plugins:
      - {plugin: test_steps, config: {tag: first}}
      - {plugin: test_steps, config: {tag: broken, fail_provision: plain}}
      - {plugin: test_steps, enabled: false, config: {tag: disabled}}
  - id: b
    frontend: {domains: [b.test]}
    backend: {targets: ["http://h"]}
    plugins:
      - {plugin: test_steps, config: {tag: second}}
      - {plugin: test_steps, config: {tag: broken2, fail_provision: conf}}
      - {plugin: test_steps, config: {tag: broken3, fail_provision: panic}}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	cleaned := &callLog{}
	r, err := BuildRouter(context.Background(), routes, BuildOptions{Services: map[string]any{"cleaned": cleaned}})
	if r != nil {
		t.Fatal("a failed build returns no router")
	}
	want := []string{
		"routes[0].plugins[1].config: cannot provision broken",
		`routes[1].plugins[1].config.tag: "broken2" is taken`,
		"routes[1].plugins[1].config: and something else",
		"routes[1].plugins[2].config: the plugin failed while it was set up (panic: provision broken3)",
	}
	if got := errorLines(err); !slices.Equal(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
	// Instances that were provisioned are cleaned up; the failed ones must
	// release what they took themselves; disabled ones were never provisioned.
	if got := cleaned.list(); !slices.Equal(got, []string{"first", "second"}) {
		t.Errorf("cleaned up %q, want [first second]", got)
	}
}

func TestBuildRouter_CloseCleansUpOnce(t *testing.T) {
	routes, err := parseRoutes(t, `
routes:
  - id: a
    frontend: {domains: [a.test]}
    backend: {targets: ["http://h"]}
    plugins: [{plugin: test_steps, config: {tag: one}}]
  - id: off
    enabled: false
    frontend: {domains: [b.test]}
    backend: {targets: ["http://h"]}
    plugins: [{plugin: test_steps, config: {tag: never}}]
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	cleaned := &callLog{}
	r, err := BuildRouter(context.Background(), routes, BuildOptions{Services: map[string]any{"cleaned": cleaned}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.Routes()); got != 2 {
		t.Errorf("Routes() has %d routes, want 2 (disabled ones included)", got)
	}
	r.Close()
	r.Close()
	if got := cleaned.list(); !slices.Equal(got, []string{"one"}) {
		t.Errorf("cleaned up %q, want [one] once", got)
	}
}

func TestBuildRouter_ValidationErrorsUseRoutesPath(t *testing.T) {
	routes := []RouteConfig{DefaultRouteConfig()}
	_, err := BuildRouter(context.Background(), routes, BuildOptions{})
	want := []string{
		"routes[0].id: is required",
		"routes[0].frontend.domains: at least one domain is required",
		"routes[0].backend.targets: at least one target is required",
	}
	if got := errorLines(err); !slices.Equal(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
	if _, ok := err.(conf.List); !ok {
		t.Errorf("error is %T, want conf.List", err)
	}
}

func TestSchedule_SmoothWeightedRoundRobin(t *testing.T) {
	s := newSchedule([]int{1, 2})
	var got []int
	for range 6 {
		got = append(got, s.pick())
	}
	// Smooth: the heavy target's turns are spread, never three in a row.
	if fmt.Sprint(got) != "[1 0 1 1 0 1]" {
		t.Errorf("picks %v", got)
	}
	s = newSchedule([]int{5, 1, 1})
	counts := map[int]int{}
	seq := ""
	for range 7 {
		i := s.pick()
		counts[i]++
		seq += fmt.Sprint(i)
	}
	if counts[0] != 5 || counts[1] != 1 || counts[2] != 1 || seq != "0010200" {
		t.Errorf("picks %s (counts %v), want 0010200", seq, counts)
	}
	if newSchedule([]int{3}) != nil || (*schedule)(nil).pick() != 0 {
		t.Error("one target needs no schedule")
	}
	if s := newSchedule([]int{50, 100}); len(s.seq) != 3 {
		t.Errorf("weights are reduced by their gcd: sequence of %d", len(s.seq))
	}
}
