package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"github.com/reapergw/reaper/internal/logtest"
	"github.com/reapergw/reaper/internal/testwait"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRun_ServesAndPrintsHowToUseIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut logtest.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--bridge", "127.0.0.1:0", "--api", "127.0.0.1:0", "--edge", "127.0.0.1:0",
			"--admin", "127.0.0.1:0", "--apps", "2", "--app", "app_named:shop:should_be_down", "--token", "tk",
			"--boot-time", "1", "--app-edge-base", "0"}, &out, &errOut)
	}()
	if !testwait.Until(10*time.Second, func() bool { return strings.Contains(out.String(), "control:") }) {
		t.Fatalf("no usage printed; stderr: %s", errOut.String())
	}
	text := out.String()
	bridge := regexp.MustCompile(`export CLEVER_CLOUD_API_URL=(\S+)`).FindStringSubmatch(text)
	if bridge == nil || !strings.Contains(text, "export CLEVER_CLOUD_API_TOKEN=tk\n") ||
		!strings.Contains(text, "export CC_CONSUMER_KEY=") || !strings.Contains(text, "boot 1s") {
		t.Fatalf("output:\n%s", text)
	}
	for _, want := range []string{"app_00000000-0000-4000-8000-000000000001  app-1", "app_00000000-0000-4000-8000-000000000002",
		"app_named  shop", "SHOULD_BE_DOWN", "Host: app-named.cleverapps.io"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	req, _ := http.NewRequest("GET", bridge[1]+"/v2/summary", nil)
	req.Header.Set("Authorization", "Bearer tk")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var s struct {
		Organisations []struct{ Applications []struct{ ID, State string } }
	}
	if err := json.Unmarshal(body, &s); err != nil || resp.StatusCode != 200 {
		t.Fatalf("summary: %d %s", resp.StatusCode, body)
	}
	if n := len(s.Organisations[1].Applications); n != 3 {
		t.Errorf("%d apps served, want 3: %s", n, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil, io.Discard, io.Discard)
	if err != nil || o.bridge != "127.0.0.1:7801" || o.api != "127.0.0.1:7802" || o.edge != "127.0.0.1:7803" ||
		o.admin != "127.0.0.1:7804" || len(o.apps) != 1 || o.apps[0].ID != "app_00000000-0000-4000-8000-000000000001" ||
		o.bootTime != 20*time.Second {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	o, err = parseOptions([]string{"--app", "app_a", "--owner", "user_me", "--state", "should_be_down", "--apps", "1"}, io.Discard, io.Discard)
	if err != nil || len(o.apps) != 2 || o.apps[1].ID != "app_a" || o.apps[0].Owner != "user_me" || o.apps[0].State != "SHOULD_BE_DOWN" {
		t.Errorf("apps: %+v, %v", o.apps, err)
	}
	for _, bad := range [][]string{{"--app", "nope"}, {"--app", "app_a:b:SLEEPY"}, {"--owner", "me"}, {"--apps", "-1"},
		{"--boot-time", "soon"}, {"--state", "UP"}, {"extra"}, {"--token", ""}} {
		var stderr bytes.Buffer
		if _, err := parseOptions(bad, io.Discard, &stderr); !errors.Is(err, errUsage) || stderr.Len() == 0 {
			t.Errorf("%v: %v (stderr %q)", bad, err, stderr.String())
		}
	}
	var stdout bytes.Buffer
	if _, err := parseOptions([]string{"--help"}, &stdout, io.Discard); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(stdout.String(), "--deploy-delay") && !strings.Contains(stdout.String(), "-deploy-delay") {
		t.Errorf("help: %v %s", err, stdout.String())
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"abc-1": "abc-1", "a b": "'a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
