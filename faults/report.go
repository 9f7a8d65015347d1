package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// maxEvidence bounds the evidence lines printed per invariant and schedule (the
// count is always printed).
const maxEvidence = 5

// printSchedule writes one schedule's faults as they ran and its verdicts.
func printSchedule(w io.Writer, r scheduleResult) {
	fmt.Fprintf(w, "\nschedule seed %d", r.seed)
	if r.err != nil {
		fmt.Fprintf(w, ": HARNESS ERROR: %v\n", r.err)
		return
	}
	fmt.Fprintf(w, ": %d faults, %d requests, %s\n", len(r.injections), r.requests, r.took.Round(time.Second))
	for _, inj := range r.injections {
		fmt.Fprintf(w, "  %s\n", inj.fault.describe())
		switch {
		case inj.skipped != "":
			fmt.Fprintf(w, "           SKIPPED: %s\n", inj.skipped)
		case inj.failed != "":
			fmt.Fprintf(w, "           %s; NOT UNDONE: %s\n", inj.detail, inj.failed)
		case inj.fault.kind == kindAppCrash || inj.fault.kind == kindStopAfterWake:
			fmt.Fprintf(w, "           %s\n", inj.detail)
		default:
			fmt.Fprintf(w, "           %sundone after %s\n", withSep(inj.detail), inj.end.Sub(inj.at).Round(100*time.Millisecond))
		}
	}
	printOutcomes(w, r.outcomes)
	for _, c := range r.checks {
		mark := "ok  "
		if len(c.violations) > 0 {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %-58s %s\n", mark, c.name, counts(c))
		for i, v := range c.violations {
			if i == maxEvidence {
				fmt.Fprintf(w, "         … %d more\n", len(c.violations)-maxEvidence)
				break
			}
			fmt.Fprintf(w, "         %s\n", v)
		}
	}
}

// withSep returns s followed by "; ", or "" when s is empty.
func withSep(s string) string {
	if s == "" {
		return ""
	}
	return s + "; "
}

// outcome counts the answers of one kind of request.
type outcome struct{ app, gateway, none int }

// outcomes counts the results by kind: the app's answer, the gateway's, none.
func outcomes(results []result) map[reqKind]outcome {
	out := map[reqKind]outcome{}
	for _, r := range results {
		o := out[r.kind]
		switch {
		case r.fromApp:
			o.app++
		case r.marker != "":
			o.gateway++
		default:
			o.none++
		}
		out[r.kind] = o
	}
	return out
}

// printOutcomes writes the line of answers by kind.
func printOutcomes(w io.Writer, by map[reqKind]outcome) {
	var parts []string
	for _, k := range allReqKinds {
		o := by[k]
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d", k, o.app, o.gateway, o.none))
	}
	fmt.Fprintf(w, "  answers (the app's / the gateway's / other): %s\n", strings.Join(parts, ", "))
}

// counts writes what an invariant checked, excused and left undecided.
func counts(c checkResult) string {
	s := fmt.Sprintf("%d checked", c.checked)
	if c.exempt > 0 {
		s += fmt.Sprintf(", %d excused", c.exempt)
	}
	if c.undecided > 0 {
		s += fmt.Sprintf(", %d undecided", c.undecided)
	}
	if n := len(c.violations); n > 0 {
		s += fmt.Sprintf(", %d VIOLATED", n)
	}
	return s
}

// printReport writes the table of the run (issue 10, item 11) and returns the
// exit status: 1 when an invariant was violated, 2 when a schedule could not run,
// else 0.
func printReport(w io.Writer, results []scheduleResult, netReason string) int {
	var seeds []string
	errs, requests := 0, 0
	for _, r := range results {
		seeds = append(seeds, fmt.Sprint(r.seed))
		requests += r.requests
		if r.err != nil {
			errs++
		}
	}
	fmt.Fprintf(w, "\n== Report: %d schedule(s) (seeds %s), %d requests\n", len(results), strings.Join(seeds, ", "), requests)
	printFaultTable(w, results, netReason)
	violations := printInvariantTable(w, results)
	if violations > 0 {
		fmt.Fprintln(w, "\nViolations (replay a schedule: go run ./faults -seed SEED -n 1):")
		for _, r := range results {
			for _, c := range r.checks {
				for i, v := range c.violations {
					if i == maxEvidence {
						fmt.Fprintf(w, "  seed %d  %s: … %d more\n", r.seed, c.name, len(c.violations)-maxEvidence)
						break
					}
					fmt.Fprintf(w, "  seed %d  %s: %s\n", r.seed, c.name, v)
				}
			}
		}
	}
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(w, "  seed %d  HARNESS ERROR: %v\n", r.seed, r.err)
		}
	}
	switch {
	case violations > 0:
		fmt.Fprintf(w, "\n%d violation(s).\n", violations)
		return 1
	case errs > 0:
		fmt.Fprintf(w, "\nNo violation, but %d schedule(s) could not run.\n", errs)
		return 2
	}
	fmt.Fprintln(w, "\nNo violation.")
	return 0
}

// printFaultTable writes the faults by kind: planned, struck, skipped.
func printFaultTable(w io.Writer, results []scheduleResult, netReason string) {
	type row struct{ planned, struck, skipped, failed int }
	rows, refused := map[faultKind]*row{}, 0
	for _, k := range allKinds {
		rows[k] = &row{}
	}
	for _, r := range results {
		for _, f := range r.plan.faults {
			rows[f.kind].planned++
		}
		for _, inj := range r.injections {
			refused += inj.refused
			switch {
			case inj.skipped != "":
				rows[inj.fault.kind].skipped++
			case inj.failed != "":
				rows[inj.fault.kind].failed++
			default:
				rows[inj.fault.kind].struck++
			}
		}
	}
	fmt.Fprintf(w, "\n  %-36s %8s %8s %8s %10s\n", "fault", "planned", "struck", "skipped", "not undone")
	for _, k := range allKinds {
		r := rows[k]
		fmt.Fprintf(w, "  %-36s %8d %8d %8d %10d\n", k, r.planned, r.struck, r.skipped, r.failed)
	}
	if netReason != "" {
		fmt.Fprintf(w, "  (partitions skipped: %s)\n", netReason)
	}
	if refused > 0 {
		fmt.Fprintf(w, "  (%d node restart(s) exited before serving, and were tried again: reaper does not start while Valkey is unreachable)\n", refused)
	}
}

// printInvariantTable writes every invariant's totals and returns the number of
// violations.
func printInvariantTable(w io.Writer, results []scheduleResult) int {
	fmt.Fprintf(w, "\n  %-58s %8s %8s %9s %10s  %s\n", "invariant", "checked", "excused", "undecided", "violations", "seeds")
	total := 0
	for i, inv := range invariants {
		var checked, exempt, undecided, violated int
		var seeds []string
		for _, r := range results {
			if i >= len(r.checks) {
				continue
			}
			c := r.checks[i]
			checked, exempt, undecided = checked+c.checked, exempt+c.exempt, undecided+c.undecided
			if n := len(c.violations); n > 0 {
				violated += n
				seeds = append(seeds, fmt.Sprint(r.seed))
			}
		}
		total += violated
		fmt.Fprintf(w, "  %-58s %8d %8d %9d %10d  %s\n", inv.name, checked, exempt, undecided, violated, strings.Join(seeds, " "))
	}
	return total
}
