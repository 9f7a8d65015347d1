package config

import "testing"

func TestDidYouMean(t *testing.T) {
	known := map[string]bool{"web": true, "api": true, "worker": true}
	for name, want := range map[string]string{
		"wbe": ` (did you mean "web"?)`, "API": ` (did you mean "api"?)`, "workr": ` (did you mean "worker"?)`,
		"database": "", "": "",
	} {
		if got := didYouMean(name, known); got != want {
			t.Errorf("didYouMean(%q) = %q, want %q", name, got, want)
		}
	}
}
