package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Where a cold Postgres's wake spends its time once Postgres is ready, read from
// reaper's log: the process driver's "app ready" (its postgres probe passed), the
// status change to Up (the job's write, which releases the holds), and the held
// connection's access line (its hold's end: the dial follows at once).

// wakeSteps are the moments of one wake after Postgres logged that it accepts
// connections, each from that moment.
type wakeSteps struct {
	probed   time.Duration // the readiness probe passed ("app ready")
	up       time.Duration // the record says Up
	released time.Duration // the held connection's hold ended: it is dialled
	answered time.Duration // the client read its first query's answer
}

// logLine is what wakeSteps reads of one reaper JSON log line.
type logLine struct {
	Time     time.Time `json:"time"`
	Msg      string    `json:"msg"`
	App      string    `json:"app"`
	To       string    `json:"to"`
	Route    string    `json:"route"`
	Held     int64     `json:"held"`     // ns
	Duration int64     `json:"duration"` // ns
}

// firstTime is the time of the first line that match accepts, or zero.
func firstTime(lines []logLine, match func(logLine) bool, at func(logLine) time.Time) time.Time {
	for _, l := range lines {
		if match(l) {
			return at(l)
		}
	}
	return time.Time{}
}

// wakeStepsOf reads a wake's moments from reaper's log: the lines of the wake
// whose Postgres was ready at ready and whose client read its answer at
// answered. It waits (a little) for the held connection's access line, written
// once the client closed; a moment not found stays zero.
func (n *tcpNode) wakeStepsOf(ctx context.Context, ready, answered time.Time) wakeSteps {
	// Postgres's time has milliseconds, and a probe may pass as it writes
	// the line: look from a little before.
	from := ready.Add(-time.Second)
	held := func(l logLine) bool {
		return l.Msg == "tcp connection" && l.Route == "pg" && l.Held > 0 && l.Time.After(from)
	}
	_, _ = n.Log.WaitFor(ctx, 5*time.Second, func(s string) bool {
		var l logLine
		return json.Unmarshal([]byte(s), &l) == nil && held(l)
	})
	var lines []logLine
	for _, s := range n.Log.Snapshot() {
		var l logLine
		if json.Unmarshal([]byte(s), &l) == nil && l.Time.After(from) {
			lines = append(lines, l)
		}
	}
	since := func(t time.Time) time.Duration {
		if t.IsZero() {
			return 0
		}
		return t.Sub(ready)
	}
	logged := func(l logLine) time.Time { return l.Time }
	probed := firstTime(lines, func(l logLine) bool { return l.Msg == "app ready" && l.App == "db" }, logged)
	up := firstTime(lines, func(l logLine) bool { return l.Msg == "app status changed" && l.App == "db" && l.To == "Up" }, logged)
	// The access line is written when the connection ends: it began duration
	// before, and was held for held.
	released := firstTime(lines, held, func(l logLine) time.Time {
		return l.Time.Add(-time.Duration(l.Duration)).Add(time.Duration(l.Held))
	})
	return wakeSteps{probed: since(probed), up: since(up), released: since(released), answered: answered.Sub(ready)}
}

// printWakeSteps prints the median moment of each step over the wakes.
func printWakeSteps(w io.Writer, steps []wakeSteps) {
	if len(steps) == 0 {
		return
	}
	pick := func(f func(wakeSteps) time.Duration) string {
		ds := make([]time.Duration, len(steps))
		for i, s := range steps {
			ds[i] = f(s)
		}
		return millis(median(ds))
	}
	parts := []string{
		"probe passed +" + pick(func(s wakeSteps) time.Duration { return s.probed }),
		"Up +" + pick(func(s wakeSteps) time.Duration { return s.up }),
		"hold released, dialled +" + pick(func(s wakeSteps) time.Duration { return s.released }),
		"answered +" + pick(func(s wakeSteps) time.Duration { return s.answered }),
	}
	fmt.Fprintf(w, "   where the wake's time goes, from Postgres ready (medians): %s\n", strings.Join(parts, ", "))
}
