package main

import (
	"bytes"
	"context"
	"flag"
	"reflect"
	"strings"
	"testing"
)

func TestParseArgs_OptionsMayFollowTheArguments(t *testing.T) {
	for _, c := range []struct {
		args   []string
		want   []string
		reason string
	}{
		{[]string{"db", "6h", "--reason", "backup"}, []string{"db", "6h"}, "backup"},
		{[]string{"--reason", "backup", "db", "6h"}, []string{"db", "6h"}, "backup"},
		{[]string{"db", "--reason=nightly backup", "6h"}, []string{"db", "6h"}, "nightly backup"},
		{[]string{"db", "--", "--reason", "x"}, []string{"db", "--reason", "x"}, ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		reason := fs.String("reason", "", "")
		got, err := parseArgs(fs, c.args, &bytes.Buffer{}, 0, -1)
		if err != nil || !reflect.DeepEqual(got, c.want) || *reason != c.reason {
			t.Errorf("parseArgs(%q) = %q, reason %q, %v; want %q, reason %q", c.args, got, *reason, err, c.want, c.reason)
		}
	}
}

// Every command prints its usage once on --help, to stdout, and once on a usage
// error, to stderr.
func TestRun_HelpPrintsTheUsageOnce(t *testing.T) {
	for _, cmd := range [][]string{
		{"serve"}, {"check"}, {"stop-apps"}, {"version"}, {"import-otoroshi"}, {"cluster", "status"}, {"health"},
		{"apps"}, {"app"}, {"wake"}, {"sleep"}, {"hold"}, {"release"}, {"reset"}, {"history"}, {"events"}, {"savings"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append(cmd, "--help"), noEnv, &stdout, &stderr)
		if err != exitCode(0) || strings.Count(stdout.String(), "Usage:") != 1 || stderr.Len() != 0 {
			t.Errorf("%s --help: %v, stdout:\n%s\nstderr:\n%s", cmd, err, stdout.String(), stderr.String())
		}
		stdout.Reset()
		stderr.Reset()
		err = run(context.Background(), append(cmd, "--no-such-option"), noEnv, &stdout, &stderr)
		if err != exitCode(2) || strings.Count(stderr.String(), "Usage:") != 1 || stdout.Len() != 0 {
			t.Errorf("%s --no-such-option: %v, stdout:\n%s\nstderr:\n%s", cmd, err, stdout.String(), stderr.String())
		}
	}
}

func noEnv(string) (string, bool) { return "", false }
