package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// bareListening is the bare proxy's line once it accepts connections.
var bareListening = regexp.MustCompile(`^bareproxy listening on (\S+)$`)

// verdict is one target checked.
type verdict struct {
	part   string // "A", "B", "C", "E", "F"
	what   string
	value  string
	target string
	pass   bool
	rounds string // the figure of each round, when there are rounds
}

// median returns the median of xs (the mean of the middle two for an even count);
// 0 for none.
func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// pick returns f of every sample.
func pick[T any](ss []sample, f func(sample) T) []T {
	out := make([]T, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func medianRPS(ss []sample) float64 { return median(pick(ss, sample.rps)) }
func medianCPU(ss []sample) time.Duration {
	return median(pick(ss, func(s sample) time.Duration { return s.cpuPerReq }))
}
func medianP50(ss []sample) time.Duration { return median(pick(ss, sample.p50)) }
func medianP99(ss []sample) time.Duration { return median(pick(ss, sample.p99)) }

// thousands writes n with thin separators: 41 230.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// micros writes d in microseconds with one decimal.
func micros(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 1, 64) + " µs"
}

// millis writes d in milliseconds with one decimal.
func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

func mib(bytes int64) string {
	return strconv.FormatFloat(float64(bytes)/(1<<20), 'f', 1, 64) + " MiB"
}

func ratio(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) + "×" }

func specLine(spec runSpec) string {
	rounds := "1 round"
	if spec.rounds > 1 {
		rounds = fmt.Sprintf("median of %d rounds", spec.rounds)
	}
	return fmt.Sprintf("%s warm-up + %s measured per run, %s", spec.warmup, spec.duration, rounds)
}

func printA(w io.Writer, a samples, spec runSpec, s *awakeSetup) {
	fmt.Fprintf(w, "\nA. Awake path: %d keep-alive connections; %s\n", spec.conns, specLine(spec))
	fmt.Fprintf(w, "   (both apps were woken through the reaper plugin before, in %s and %s)\n", millis(s.wakeTimes[0]), millis(s.wakeTimes[1]))
	fmt.Fprintf(w, "   %-24s %9s %14s %13s %15s   %s\n", "", "req/s", "proxy CPU/req", "client conns", "app conns", "req/s of each round")
	fmt.Fprintf(w, "   %-24s %9s %14s %13s %15s\n", "", "", "", "opened", "closed (TW)")
	for _, k := range contestantKeys {
		ss := a[k]
		cpu := "-"
		if k != kDirect {
			cpu = micros(medianCPU(ss))
		}
		rounds := make([]string, len(ss))
		for i, x := range ss {
			rounds[i] = thousands(int64(x.rps()))
		}
		dials := slices.Max(pick(ss, func(s sample) int64 { return s.res.Dials }))
		closed := slices.Max(pick(ss, func(s sample) int { return s.appClosed }))
		fmt.Fprintf(w, "   %-24s %9s %14s %13d %15d   %s\n", contestantNames[k], thousands(int64(medianRPS(ss))), cpu, dials, closed, strings.Join(rounds, "  "))
	}
	fmt.Fprintln(w, "   client conns opened: connections the load generator opened per run (= connections: keep-alive held).")
	fmt.Fprintln(w, "   app conns closed: connections to the app that closed during the window (TIME_WAIT sockets): ~0 = no connection per request.")
}

func printB(w io.Writer, b samples, spec runSpec) {
	fmt.Fprintf(w, "\nB. Latency at %d connection; %s\n", spec.conns, specLine(spec))
	fmt.Fprintf(w, "   %-24s %10s %10s %9s %14s   %s\n", "", "p50", "p99", "req/s", "proxy CPU/req", "p50 of each round (µs)")
	for _, k := range contestantKeys {
		ss := b[k]
		rounds := make([]string, len(ss))
		for i, x := range ss {
			rounds[i] = strconv.FormatFloat(float64(x.p50())/float64(time.Microsecond), 'f', 0, 64)
		}
		cpu := "-"
		if k != kDirect {
			cpu = micros(medianCPU(ss))
		}
		fmt.Fprintf(w, "   %-24s %10s %10s %9s %14s   %s\n", contestantNames[k], micros(medianP50(ss)), micros(medianP99(ss)), thousands(int64(medianRPS(ss))), cpu, strings.Join(rounds, " "))
	}
}

func printC(w io.Writer, c samples, spec runSpec) {
	fmt.Fprintf(w, "\nC. App spending 2 ms per request, %d keep-alive connections; %s\n", spec.conns, specLine(spec))
	fmt.Fprintf(w, "   (the ceiling is %d connections / 2 ms = %s req/s)\n", spec.conns, thousands(int64(spec.conns)*500))
	fmt.Fprintf(w, "   %-24s %9s %10s %14s   %s\n", "", "req/s", "p50", "proxy CPU/req", "req/s of each round")
	for _, k := range contestantKeys {
		ss := c[k]
		rounds := make([]string, len(ss))
		for i, x := range ss {
			rounds[i] = thousands(int64(x.rps()))
		}
		cpu := "-"
		if k != kDirect {
			cpu = micros(medianCPU(ss))
		}
		fmt.Fprintf(w, "   %-24s %9s %10s %14s   %s\n", contestantNames[k], thousands(int64(medianRPS(ss))), micros(medianP50(ss)), cpu, strings.Join(rounds, "  "))
	}
}

// Targets of issue 2 (item 12), also applied to the reaper-plugin route (issue 3,
// item 14).
const (
	targetThroughput = 0.90
	targetCPU        = 1.15
	targetP50Extra   = 50 * time.Microsecond
	targetSlowApp    = 0.95
)

// paired returns f(x[r], bare[r]) for every round r both ran, and their median.
// Round r of every contestant ran back to back, so a paired figure cancels the
// background load that drifts from round to round on a shared machine.
func paired(x, bare []sample, f func(x, bare sample) float64) (each []float64, med float64) {
	for r := range min(len(x), len(bare)) {
		each = append(each, f(x[r], bare[r]))
	}
	return each, median(each)
}

// awakeVerdicts compares each reaper route with the bare proxy: for each target,
// the median over the rounds of reaper's figure against the bare proxy's of the
// same round.
func awakeVerdicts(a, b, c samples) []verdict {
	var out []verdict
	rpsRatio := func(x, bare sample) float64 { return x.rps() / bare.rps() }
	cpuRatio := func(x, bare sample) float64 { return float64(x.cpuPerReq) / float64(bare.cpuPerReq) }
	p50Extra := func(x, bare sample) float64 { return float64(x.p50() - bare.p50()) }
	for _, k := range []string{kPlain, kPlugin} {
		name := contestantNames[k]
		rpsEach, rps := paired(a[k], a[kBare], rpsRatio)
		cpuEach, cpu := paired(a[k], a[kBare], cpuRatio)
		p50Each, p50f := paired(b[k], b[kBare], p50Extra)
		slowEach, slow := paired(c[k], c[kBare], rpsRatio)
		p50 := time.Duration(p50f)
		out = append(out,
			verdict{"A", name + ": throughput at 64 connections vs bare", ratio(rps), "≥ " + ratio(targetThroughput), rps >= targetThroughput, joinRatios(rpsEach)},
			verdict{"A", name + ": CPU per request vs bare", ratio(cpu), "≤ " + ratio(targetCPU), cpu <= targetCPU, joinRatios(cpuEach)},
			verdict{"B", name + ": p50 at 1 connection vs bare", signedMicros(p50), "≤ +" + micros(targetP50Extra), p50 <= targetP50Extra, joinMicros(p50Each)},
			verdict{"C", name + ": 2 ms app at 8 connections vs bare", ratio(slow), "≥ " + ratio(targetSlowApp), slow >= targetSlowApp, joinRatios(slowEach)},
		)
	}
	return out
}

func joinRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, " ")
}

func joinMicros(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x/float64(time.Microsecond), 'f', 0, 64)
	}
	return strings.Join(parts, " ")
}

func signedMicros(d time.Duration) string {
	if d >= 0 {
		return "+" + micros(d)
	}
	return "−" + micros(-d)
}

func printD(w io.Writer, a, b, c samples) []verdict {
	vs := awakeVerdicts(a, b, c)
	fmt.Fprintf(w, "\nD. Reaper compared with the bare proxy: median over the rounds of reaper against the bare proxy of the same round\n")
	fmt.Fprintf(w, "   %-4s %-58s %10s   %-17s %s\n", "", "", "median", "target", "each round")
	for _, v := range vs {
		fmt.Fprintf(w, "   %-4s %-58s %10s   %-17s %s\n", passWord(v.pass), v.what, v.value, v.target, v.rounds)
	}
	direct := medianRPS(a[kDirect])
	fmt.Fprintf(w, "   For context only, throughput at 64 connections as a share of direct: bare %s, reaper plain %s, reaper plugin %s.\n",
		ratio(medianRPS(a[kBare])/direct), ratio(medianRPS(a[kPlain])/direct), ratio(medianRPS(a[kPlugin])/direct))
	fmt.Fprintln(w, "   (On 2 CPUs any hop costs most of direct throughput: the app, the proxy and the load generator share the CPUs.)")
	return vs
}

func passWord(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// printSummary prints every verdict, the parts that could not run and those
// skipped (a tool missing: not a failure), and returns the exit status: 0 all
// pass, 1 a target fails, 2 a part could not measure.
func printSummary(w io.Writer, vs []verdict, failed, skipped []string, took time.Duration, quick bool) int {
	fmt.Fprintf(w, "\nSummary (%s)\n", took.Round(time.Second))
	fails := 0
	for _, v := range vs {
		fmt.Fprintf(w, "  %s  %-2s %-62s %12s  target %s\n", passWord(v.pass), v.part, v.what, v.value, v.target)
		if !v.pass {
			fails++
		}
	}
	for _, f := range failed {
		fmt.Fprintf(w, "  ERROR    %s\n", strings.ReplaceAll(f, "\n", "\n           "))
	}
	for _, s := range skipped {
		fmt.Fprintf(w, "  SKIPPED  %s\n", s)
	}
	if quick {
		fmt.Fprintln(w, "  (quick mode: not figures to quote)")
	}
	switch {
	case len(failed) > 0:
		fmt.Fprintf(w, "The bench could not measure everything: %d part(s) failed; %d of %d targets checked fail.\n", len(failed), fails, len(vs))
		return 2
	case fails > 0:
		fmt.Fprintf(w, "%d of %d targets FAIL.\n", fails, len(vs))
		return 1
	}
	fmt.Fprintf(w, "All %d targets pass.\n", len(vs))
	return 0
}
