package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Part H's report: a line per run, the figures over the runs, the verdicts.

// killResult is everything part H measured; runs holds those that ended (an
// error may stop the part early).
type killResult struct {
	redis    string
	seed     uint64
	planned  int
	schedule []time.Duration
	runs     []killRun
	setup    time.Duration  // the cluster started and every app Down
	took     time.Duration  // the whole part
	warnings map[string]int // level and message → count, of every node process
}

// killRunFormat lays out killRunLine and its header.
const killRunFormat = "%3s  %-5s %-4s %7s  %-7s %8s  %-8s %11s  %12s  %-8s %-6s  %s"

// killRunHeader names the columns of killRunLine.
var killRunHeader = fmt.Sprintf(killRunFormat, "run", "app", "via", "held", "kill", "at", "fell", "start", "kill→answers", "answers", "starts", "then")

// killRunLine is one run in a line: the app, the follower, how long it took to
// hold the requests, the leader killed (its term) and when after they were held,
// where the kill fell against the dead leader's start call (killPhase), when the
// start the platform accepted reached it against the kill, the time to the last
// answer, the answers, the starts the platform accepted, the leader after and how
// long the killed node took to rejoin.
func killRunLine(i int, r killRun) string {
	start := "none"
	if r.landed {
		start = fmt.Sprintf("%+.0f ms", msf(r.startAt))
	}
	return fmt.Sprintf(killRunFormat, strconv.Itoa(i), strings.TrimSuffix(r.host, ".test"), r.via, fmt.Sprintf("%.0f ms", msf(r.held)),
		fmt.Sprintf("%s t%d", r.killed, r.oldTerm), fmt.Sprintf("+%.0f ms", msf(r.offset+r.killLate)), r.phase, start,
		seconds(r.toAnswers), answersLine(r.answers), strconv.Itoa(r.calls.accepted)+extraStarts(r.calls),
		fmt.Sprintf("%s leads (t%d), %s back in %s", r.elected, r.newTerm, r.killed, seconds(r.rejoin)))
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// extraStarts writes the refused start calls and the restarts, when any.
func extraStarts(s startCalls) string {
	var out []string
	if s.refused > 0 {
		out = append(out, fmt.Sprintf("%d refused", s.refused))
	}
	if s.restarts > 0 {
		out = append(out, fmt.Sprintf("%d RESTART", s.restarts))
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, ", ") + ")"
}

// answersLine counts the answers by kind: "10×200", or "7×200 3×504".
func answersLine(as []heldAnswer) string {
	counts := map[string]int{}
	var keys []string
	for _, a := range as {
		k := "err"
		switch {
		case a.appOK && a.err == nil:
			k = "200"
		case a.status == http.StatusOK:
			k = "200-not-app"
		case a.status != 0:
			k = strconv.Itoa(a.status)
		}
		if counts[k] == 0 {
			keys = append(keys, k)
		}
		counts[k]++
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d×%s", counts[k], k)
	}
	return strings.Join(parts, " ")
}

// printH prints part H and returns its verdicts, for the runs that ended.
func printH(w io.Writer, r killResult) []verdict {
	fmt.Fprintf(w, "\nH. Leader killed mid-wake (issue 10, item 4): 3 reaper nodes, redis-server %s, the fake Clever Cloud in-process\n", r.redis)
	fmt.Fprintf(w, "   %d runs on one cluster (seed %d: -seed %d replays the kills), each on an app never woken before: %d requests\n", r.planned, r.seed, r.seed, killHeld)
	fmt.Fprintf(w, "   in hold mode to a follower; once its admin API says it holds them all, kill -9 the leader 0 to %s later (one run\n", seconds(killWindow))
	fmt.Fprintf(w, "   in each %s of that, shuffled); the killed node restarts on its data directory, and the next run waits until\n", millis(killWindow/time.Duration(max(r.planned, 1))))
	fmt.Fprintln(w, "   the cluster is whole.")
	fmt.Fprintf(w, "   An app boots %s after a start (+ %s before its deployment); every API call takes %s (half before the platform acts);\n", clusterBoot, clusterDeployDelay, killAPILatency)
	fmt.Fprintf(w, "   routes: hold mode, ready_delay %s, fail_timeout %s (a lost wake would end in 504s).\n", killReadyDelay, killFailTimeout)
	fmt.Fprintf(w, "   Cluster up with every app Down in %s; the part took %s.\n", seconds(r.setup), r.took.Round(time.Second))
	if len(r.runs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "   held: the first request written → the follower holds them all; at: the kill, after that; fell: where the kill fell")
	fmt.Fprintln(w, "   against the dead leader's start call (before it; while it was sent; landed: the platform had it, not the leader its")
	fmt.Fprintln(w, "   answer; after its answer); start: the accepted start reached the platform, against the kill (< 0: the dead leader's).")
	fmt.Fprintf(w, "   %s\n", killRunHeader)
	for i, run := range r.runs {
		fmt.Fprintf(w, "   %s\n", killRunLine(i+1, run))
	}
	s := summarizeKills(r.runs)
	fmt.Fprintf(w, "   kill → the last of the %d answers, %d runs: median %s, p90 %s, max %s (min %s)\n", killHeld, len(r.runs),
		seconds(s.median), seconds(s.p90), seconds(s.max), seconds(s.min))
	fmt.Fprintf(w, "   where the kills fell: before the start call %d, while it was sent %d, once the platform had it %d, after its answer %d\n",
		s.phases[phaseBefore], s.phases[phaseSending], s.phases[phaseLanded], s.phases[phaseAfter])
	fmt.Fprintf(w, "   lost wakes (an answer not the app's 200, or no start): %d; double starts (two accepted, or a restart): %d\n", s.lost, s.double)
	for _, i := range s.bad {
		fmt.Fprintf(w, "     run %d: %s\n", i+1, runProblems(r.runs[i]))
	}
	fmt.Fprintf(w, "   Warnings and errors logged by the nodes (every process, the killed ones to their kill): %s\n", warningsLine(r.warnings))
	return []verdict{
		{"H", "leader killed mid-wake: kill → 10 held answers, max (p100)", seconds(s.max), "≤ " + seconds(targetKillToAnswers), s.max <= targetKillToAnswers, ""},
		{"H", "leader killed mid-wake: lost wakes", fmt.Sprintf("%d of %d", s.lost, len(r.runs)), "0", s.lost == 0, ""},
		{"H", "leader killed mid-wake: double starts", fmt.Sprintf("%d of %d", s.double, len(r.runs)), "0", s.double == 0, ""},
	}
}

// killSummary is part H's figures over its runs.
type killSummary struct {
	median, p90, max, min time.Duration
	phases                map[string]int
	lost, double          int
	bad                   []int // the runs lost or started twice
}

func summarizeKills(runs []killRun) killSummary {
	s := killSummary{phases: map[string]int{}}
	ds := pick2(runs, func(r killRun) time.Duration { return r.toAnswers })
	if len(ds) > 0 {
		s.median, s.p90, s.max, s.min = median(ds), quantile(ds, 0.9), slices.Max(ds), slices.Min(ds)
	}
	for i, r := range runs {
		s.phases[r.phase]++
		if r.lost() {
			s.lost++
		}
		if r.double() {
			s.double++
		}
		if r.lost() || r.double() {
			s.bad = append(s.bad, i)
		}
	}
	return s
}

// runProblems says what went wrong in a run: its answers' errors, its starts.
func runProblems(r killRun) string {
	var out []string
	if r.calls.accepted != 1 || r.calls.restarts > 0 {
		out = append(out, fmt.Sprintf("%d accepted starts, %d restarts", r.calls.accepted, r.calls.restarts))
	}
	seen := map[string]bool{}
	for _, a := range r.answers {
		if a.appOK && a.err == nil {
			continue
		}
		msg := fmt.Sprintf("%d %v", a.status, a.err)
		if !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
	}
	return strings.Join(out, "; ")
}
