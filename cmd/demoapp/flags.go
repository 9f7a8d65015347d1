package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// errUsage marks a command line that cannot be parsed; main exits with status 2 for it.
var errUsage = errors.New("demoapp: bad usage")

// options is the parsed command line.
type options struct {
	listen          string
	name            string
	bootDelay       time.Duration
	memory          int64
	latency         time.Duration
	ignoreSigterm   bool
	failAfter       time.Duration
	shutdownTimeout time.Duration
}

const usageHead = `Usage: demoapp [flags]

demoapp is a small HTTP app that reaper's tests, benchmarks and demo run as a real
process. It can play a slow boot, hold memory, add latency, crash, or ignore SIGTERM.

Endpoints:
  /                    200 JSON {name, pid, started_at, listening_at, uptime_ms, method,
                       host, path} (listening_at: when the port opened, wall clock)
                       (plain text when Accept prefers text/plain); any method, any path
  /echo                JSON of the request: method, host, path, query, headers, body size + sha256
  /upload              reads the body streaming, answers {"bytes": n, "sha256": "..."}
  /download?bytes=N    streams N bytes of a repeating pattern (sizes like 10MiB accepted)
  /slow?d=5s           answers 200 after d, or gives up when the client goes away
  /stream?n=10&interval=100ms
                       writes n lines, one per interval, flushing each (SSE with
                       Accept: text/event-stream)
  /ws                  WebSocket echo
  /status/{code}       answers that status (200-599)
  /healthz             200 ok

Durations accept Go syntax (90s, 1m30s) or a bare number of seconds (2.5).
Sizes accept bytes (1000000) or a unit: KiB MiB GiB TiB (powers of 1024), KB MB GB TB (of 1000).

Flags:
`

// parseOptions parses args. For --help it prints the usage to stdout and returns
// flag.ErrHelp; for a bad command line it prints the error to stderr and returns an
// error wrapping errUsage.
func parseOptions(args []string, stdout, stderr io.Writer) (options, error) {
	o := options{
		listen:          "127.0.0.1:3001",
		name:            "demo",
		shutdownTimeout: 30 * time.Second,
	}
	fs := flag.NewFlagSet("demoapp", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", o.listen, "`address` to listen on (host:port; port 0 picks a free one)")
	fs.StringVar(&o.name, "name", o.name, "`name` reported by / and in the log lines")
	fs.Var(durationValue{&o.bootDelay}, "boot-delay", "wait this `duration` before opening the port (a slow boot)")
	fs.Var(sizeValue{&o.memory}, "memory", "allocate and touch this many `bytes` at start, so RSS holds them (e.g. 64MiB)")
	fs.Var(durationValue{&o.latency}, "latency", "each request to / waits this `duration` before answering")
	fs.BoolVar(&o.ignoreSigterm, "ignore-sigterm", false, "log and ignore SIGTERM (only SIGKILL or SIGINT stop the process)")
	fs.Var(durationValue{&o.failAfter}, "fail-after", "exit with status 3 this `duration` after start (a crash, or a failed boot)")
	fs.Var(durationValue{&o.shutdownTimeout}, "shutdown-timeout", "on SIGTERM/SIGINT, wait at most this `duration` for in-flight requests")

	// Parse quietly: the help goes to stdout, errors to stderr, each printed once below.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err == nil && o.name == "" {
		err = errors.New("--name must not be empty")
	}
	if err == nil {
		return o, nil
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageHead)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return o, flag.ErrHelp
	}
	fmt.Fprintf(stderr, "demoapp: %v\nRun demoapp --help for the flags.\n", err)
	return o, fmt.Errorf("%w: %w", errUsage, err)
}

// durationValue is a flag.Value for a non-negative duration given in Go syntax or as
// bare seconds.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// parseDuration reads "90s", "1m30s" or a bare number of seconds ("2", "0.05").
// Negative, non-finite and overflowing values are refused.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f*float64(time.Second) >= math.MaxInt64 {
			return 0, fmt.Errorf("duration %q out of range", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want Go syntax (90s, 1m30s) or seconds (2.5)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q must not be negative", s)
	}
	return d, nil
}

// sizeValue is a flag.Value for a byte count with an optional unit.
type sizeValue struct{ n *int64 }

func (v sizeValue) String() string {
	if v.n == nil || *v.n == 0 {
		return ""
	}
	return strconv.FormatInt(*v.n, 10)
}

func (v sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}

// sizeUnits maps a lower-cased unit to its multiplier.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// parseSize reads a whole number of bytes with an optional unit: "1000000", "512KiB",
// "64MiB", "1GiB", "10MB" (units are case-insensitive, a space before the unit is
// allowed). Fractions, negative numbers and values beyond int64 are refused.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a whole number of bytes, optionally with a unit (64MiB)", s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q out of range", s)
	}
	mult, ok := sizeUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit (want B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q out of range", s)
	}
	return n * mult, nil
}
