package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil || o.n != 5 || o.duration != 40*time.Second || o.apps != 3 || o.netns != "auto" || o.seed == 0 {
		t.Fatalf("defaults = %+v, %v", o, err)
	}
	o, err = parseOptions([]string{"-seed", "1234", "-n", "2", "-duration", "15s", "-netns", "off"}, io.Discard)
	if err != nil || o.seed != 1234 || o.n != 2 || o.duration != 15*time.Second || o.netns != "off" {
		t.Fatalf("parsed %+v, %v", o, err)
	}
	for _, args := range [][]string{{"-n", "0"}, {"-duration", "5s"}, {"-apps", "0"}, {"-netns", "maybe"}} {
		if _, err := parseOptions(args, io.Discard); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

func TestPrintReport_TableAndExitStatus(t *testing.T) {
	plan := schedule{faults: []fault{{kind: kindRedis}, {kind: kindPartition}}}
	clean := scheduleResult{seed: 7, plan: plan, requests: 10,
		injections: []injection{{fault: fault{kind: kindRedis}}, {fault: fault{kind: kindPartition}, skipped: "no namespaces"}},
		checks:     check(obs())}
	var out bytes.Buffer
	if code := printReport(&out, []scheduleResult{clean}, "no namespaces"); code != 0 {
		t.Errorf("exit %d for a clean run:\n%s", code, out.String())
	}
	for _, want := range []string{"1 schedule(s) (seeds 7), 10 requests", "redis-server SIGKILL, restart", "(partitions skipped: no namespaces)", "No violation."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}

	bad := clean
	bad.seed = 8
	bad.checks = check(obs().call("POST", 1, "SHOULD_BE_UP"))
	out.Reset()
	if code := printReport(&out, []scheduleResult{clean, bad}, ""); code != 1 {
		t.Errorf("exit %d with a violation", code)
	}
	if !strings.Contains(out.String(), "seed 8  no app started while up: app 0: a start accepted at 1.00s while the platform said SHOULD_BE_UP") {
		t.Errorf("the violation is not listed with its seed:\n%s", out.String())
	}

	out.Reset()
	broken := scheduleResult{seed: 9, err: errors.New("the cluster did not form")}
	if code := printReport(&out, []scheduleResult{clean, broken}, ""); code != 2 || !strings.Contains(out.String(), "seed 9  HARNESS ERROR: the cluster did not form") {
		t.Errorf("exit %d for a harness error:\n%s", code, out.String())
	}
}
