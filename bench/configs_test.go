package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/internal/clusterenv"
)

// TestConfigs_LoadWithReapersOwnLoader checks every configuration the bench
// writes with the project's own loader, which refuses unknown keys: a key renamed
// in reaper fails here rather than in the middle of `make bench`.
func TestConfigs_LoadWithReapersOwnLoader(t *testing.T) {
	demo := "/bin/true"
	py, err := heldPyApp("/usr/bin/python3", t.TempDir(), "127.0.0.1:20007")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		cfg    clusterenv.Config
		apps   int
		routes int
	}{
		{"awake", awakeConfig(demo, "127.0.0.1:20001", "127.0.0.1:20002"), 2, 4},
		{"wake", wakeConfig(demo, []string{"127.0.0.1:20003", "127.0.0.1:20004", "127.0.0.1:20005"}), 3, 3},
		{"held", heldConfig(heldHost, heldDemoApp(demo, "127.0.0.1:20006")), 1, 1},
		{"python", heldConfig(pyHeldHost, py), 1, 1},
		{"auth", authConfig(demo, "127.0.0.1:20008", "127.0.0.1:20009"), 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, err := clusterenv.WriteConfig(dir, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := config.Parse(b, func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatalf("reaper refuses the bench's config: %v\n%s", err, b)
			}
			if got.Node.Listen != "127.0.0.1:0" || got.Node.AdminListen != "" || got.Node.DataDir != dir+"/data" {
				t.Errorf("node: listen %q, admin %q, data_dir %q", got.Node.Listen, got.Node.AdminListen, got.Node.DataDir)
			}
			if len(got.PaaS.Apps) != tt.apps || len(got.Routes) != tt.routes {
				t.Errorf("%d apps, %d routes; want %d, %d", len(got.PaaS.Apps), len(got.Routes), tt.apps, tt.routes)
			}
		})
	}
}

func TestConfigs_WhatEachPartNeeds(t *testing.T) {
	y := func(c clusterenv.Config) string {
		path, err := clusterenv.WriteConfig(t.TempDir(), c)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		return string(b)
	}
	if got := awakeConfig("/d", "127.0.0.1:20001", "127.0.0.1:20002").Programs(); !slices.Equal(got, []string{"/d"}) {
		t.Errorf("programs of the awake config: %q, want the demo app once", got)
	}
	awake := y(awakeConfig("/d", "127.0.0.1:20001", "127.0.0.1:20002"))
	for _, want := range []string{"- --latency\n", "- 2ms\n", "domains:\n            - plain.test", "app_id: fast", "grace_period: 1h"} {
		if !strings.Contains(awake, want) {
			t.Errorf("awake config lacks %q:\n%s", want, awake)
		}
	}
	wake := y(wakeConfig("/d", []string{"127.0.0.1:20003", "127.0.0.1:20004"}))
	for _, want := range []string{"job_interval: 1s", "grace_period: 1s", "api_behavior: hold", "- --boot-delay\n", "- 300ms\n", "- 302.5ms\n"} {
		if !strings.Contains(wake, want) {
			t.Errorf("wake config lacks %q:\n%s", want, wake)
		}
	}
	py, err := heldPyApp("/p", t.TempDir(), "127.0.0.1:20007")
	if err != nil {
		t.Fatal(err)
	}
	python := y(heldConfig(pyHeldHost, py))
	for _, want := range []string{"- /p\n", "pyapp.py\n", "- --boot-delay\n", "- \"12\"\n", "pyheld.test", "app_id: pyheld", "max_held: 20000", "api_behavior: hold"} {
		if !strings.Contains(python, want) {
			t.Errorf("python config lacks %q:\n%s", want, python)
		}
	}
	held := y(heldConfig(heldHost, heldDemoApp("/d", "127.0.0.1:20006")))
	for _, want := range []string{"max_held: 20000", "- 12s\n", "api_behavior: hold"} {
		if !strings.Contains(held, want) {
			t.Errorf("held config lacks %q:\n%s", want, held)
		}
	}
}
