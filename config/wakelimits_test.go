package config

import (
	"strings"
	"testing"
)

func TestWakeLimits_DefaultsAndBadValues(t *testing.T) {
	cfg, err := Parse([]byte("node: {id: n1}"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Node.MaxWakesPerClient != 30 || cfg.Node.MaxWakesPerMinute != 0 {
		t.Errorf("defaults: per client %d, per node %d; want 30 and 0 (off)", cfg.Node.MaxWakesPerClient, cfg.Node.MaxWakesPerMinute)
	}
	cfg, err = Parse([]byte("node: {id: n1, max_wakes_per_client: 0, max_wakes_per_minute: 500}"), env(nil))
	if err != nil || cfg.Node.MaxWakesPerClient != 0 || cfg.Node.MaxWakesPerMinute != 500 {
		t.Errorf("0 and 500: %v %+v", err, cfg)
	}
	_, err = Parse([]byte("node: {id: n1, max_wakes_per_client: -1, max_wakes_per_minute: many}"), env(nil))
	got := ""
	if err != nil {
		got = err.Error()
	}
	for _, want := range []string{
		"node.max_wakes_per_client: must be 0 (no limit) or a number of wakes a minute, not -1",
		"node.max_wakes_per_minute:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("error %q lacks %q", got, want)
		}
	}
}
