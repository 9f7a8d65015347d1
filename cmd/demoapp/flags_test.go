package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "1000000", want: 1_000_000},
		{in: "0", want: 0},
		{in: "512KiB", want: 512 << 10},
		{in: "64MiB", want: 64 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "2TiB", want: 2 << 40},
		{in: "10MB", want: 10_000_000},
		{in: "3kb", want: 3000},
		{in: "64 mib", want: 64 << 20},
		{in: " 7B ", want: 7},
		{in: "8589934591GiB", want: (1<<33 - 1) << 30}, // just below 2^63
		{in: "8589934592GiB", wantErr: true},           // 2^63: beyond int64
		{in: "99999999999999999999", wantErr: true},
		{in: "", wantErr: true},
		{in: "MiB", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "1.5GiB", wantErr: true},
		{in: "12XB", wantErr: true},
		{in: "64M", wantErr: true}, // ambiguous: 10^6 or 2^20
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "2ms", want: 2 * time.Millisecond},
		{in: "2", want: 2 * time.Second},
		{in: "0.05", want: 50 * time.Millisecond},
		{in: "0", want: 0},
		{in: " 3 ", want: 3 * time.Second},
		{in: "-1", wantErr: true},
		{in: "-5s", wantErr: true},
		{in: "NaN", wantErr: true},
		{in: "Inf", wantErr: true},
		{in: "1e300", wantErr: true},
		{in: "", wantErr: true},
		{in: "soon", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseDuration(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseOptions_DefaultsAndValues(t *testing.T) {
	var out, errOut bytes.Buffer
	o, err := parseOptions(nil, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	want := options{listen: "127.0.0.1:3001", name: "demo", shutdownTimeout: 30 * time.Second}
	if o != want {
		t.Errorf("defaults = %+v, want %+v", o, want)
	}

	o, err = parseOptions([]string{
		"--listen", "127.0.0.1:0", "--name", "hello", "--boot-delay", "2", "--memory", "64MiB",
		"--latency", "2ms", "--ignore-sigterm", "--fail-after", "1m", "--shutdown-timeout", "5s",
	}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	want = options{
		listen: "127.0.0.1:0", name: "hello", bootDelay: 2 * time.Second, memory: 64 << 20,
		latency: 2 * time.Millisecond, ignoreSigterm: true, failAfter: time.Minute, shutdownTimeout: 5 * time.Second,
	}
	if o != want {
		t.Errorf("parsed = %+v, want %+v", o, want)
	}
	if out.Len()+errOut.Len() != 0 {
		t.Errorf("parsing good flags printed %q / %q", out.String(), errOut.String())
	}
}

func TestParseOptions_HelpGoesToStdout(t *testing.T) {
	var out, errOut bytes.Buffer
	_, err := parseOptions([]string{"--help"}, &out, &errOut)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, s := range []string{"Usage: demoapp", "-boot-delay", "-memory", "-ignore-sigterm", "/status/{code}"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("help lacks %q:\n%s", s, out.String())
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("help wrote to stderr: %q", errOut.String())
	}
}

func TestParseOptions_BadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--memory", "lots"},
		{"--boot-delay", "-1s"},
		{"--no-such-flag"},
		{"--name", ""},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		_, err := parseOptions(args, &out, &errOut)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: err = %v, want errUsage", args, err)
		}
		if exitCode(err) != 2 {
			t.Errorf("%q: exit code %d, want 2", args, exitCode(err))
		}
		if !strings.Contains(errOut.String(), "demoapp: ") || out.Len() != 0 {
			t.Errorf("%q: stdout %q, stderr %q; want the error on stderr only", args, out.String(), errOut.String())
		}
	}
}
