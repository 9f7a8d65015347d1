package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/reapergw/reaper/internal/clusterenv"
	"github.com/reapergw/reaper/internal/pyapp"
)

// Part F2: part F with the app of issue 10 in place of the demo app: Python's
// http.server, a thread per connection, a listen backlog of 5 (internal/pyapp).
// An app that just booted with such a backlog is what the release's pace is for:
// the target is reaper's peak RSS over the whole run (VmHWM), the release
// included, and the app itself says how many connections and requests it had at
// once. Without python3 the part is skipped, as G is without redis-server.

const (
	pyHeldHost = "pyheld.test"
	// targetPyHeldHWM is the bound on reaper's peak RSS over the whole of F2.
	targetPyHeldHWM = 150 << 20
)

// errNoPython skips part F2: it is not a failure of the bench.
var errNoPython = fmt.Errorf("bench: %w (%s)", pyapp.ErrNoPython, pyapp.InstallHint)

// runHeldPython runs part F2 and prints its report.
func runHeldPython(ctx context.Context, e *env) ([]verdict, error) {
	python, err := pyapp.Find()
	if err != nil {
		fmt.Fprintf(e.out, "\nF2. Held requests, the Python app: SKIPPED: python3 not found; install it: %s\n", pyapp.InstallHint)
		return nil, errNoPython
	}
	r, err := measureHeld(ctx, e, heldParams{
		part: "F2", host: pyHeldHost, what: "the Python app (listen backlog 5)",
		app:      func(addr string) (clusterenv.AppConfig, error) { return heldPyApp(python, e.tmp, addr) },
		appStats: pyAppStats,
	})
	if err != nil {
		return nil, err
	}
	return printF2(e.out, r), nil
}

// heldPyApp is part F2's app: the Python app, its script written into dir, on
// addr, booting in heldBootDelay.
func heldPyApp(python, dir, addr string) (clusterenv.AppConfig, error) {
	argv, err := pyapp.Command(python, dir, pyapp.App{Addr: addr, Name: "pyheld", BootDelay: heldBootDelay})
	if err != nil {
		return clusterenv.AppConfig{}, err
	}
	return clusterenv.AppConfig{ID: "pyheld", Command: argv, Ready: clusterenv.ReadyConfig{TCP: addr}, StopTimeout: "5s"}, nil
}

// pyAppStats asks the Python app at addr, directly, for its /_stats.
func pyAppStats(ctx context.Context, addr string) (string, error) {
	c := clusterenv.NewClient(10 * time.Second)
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/_stats", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if err != nil {
		return "", err
	}
	var st struct {
		Conns    *int `json:"connections_peak"`
		Requests *int `json:"requests_peak"`
		Answered *int `json:"requests"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &st) != nil || st.Conns == nil || st.Requests == nil || st.Answered == nil {
		return "", errors.New("the app's /_stats answered " + resp.Status)
	}
	return fmt.Sprintf("at most %d connections open at once (a thread each) and %d requests in progress at once; %s requests answered",
		*st.Conns, *st.Requests, thousands(int64(*st.Answered))), nil
}

// printF2 prints part F2's report and returns its verdicts.
func printF2(w io.Writer, r heldReport) []verdict {
	fmt.Fprintf(w, "\nF2. %s requests held by one node for the Python app of issue 10 (http.server, a thread per connection, listen backlog %d; boot %s, max_held %s)\n",
		thousands(int64(r.n)), pyapp.Backlog, heldBootDelay, thousands(heldMax))
	printHeld(w, r)
	return append([]verdict{
		{"F2", "reaper's peak RSS over the run, release included (VmHWM)", mib(r.after.HWM), "≤ " + mib(targetPyHeldHWM), r.after.HWM > 0 && r.after.HWM <= targetPyHeldHWM, ""},
	}, answerVerdicts("F2", r)...)
}
