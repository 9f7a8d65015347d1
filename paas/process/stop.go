package process

import (
	"errors"
	"strconv"
	"strings"
)

// StopOptions configure StopApps.
type StopOptions struct {
	// DataDir is the node.data_dir whose apps are stopped. Required.
	DataDir string
	// Apps are the configured apps: each is stopped with its stop_signal and
	// stop_timeout. An app that is not configured (any more) gets SIGTERM and
	// DefaultStopTimeout.
	Apps []AppConfig
	// Force stops the apps even while a reaper node runs on DataDir.
	Force bool
}

// StopOutcome is what StopApps did with one app.
type StopOutcome string

const (
	// Stopped: its process group was proven reaper's, signalled, and is gone; its
	// pid file was removed.
	Stopped StopOutcome = "stopped"
	// NotRunning: its pid file named a process that has exited; the file was
	// removed.
	NotRunning StopOutcome = "not running"
	// NotOurs: its pid file named a pid that another program has taken since
	// (another start time), or could not be read; nothing was signalled, and the
	// stale file was removed.
	NotOurs StopOutcome = "refused: not ours"
	// StopFailed: reaper's app could not be stopped (see Detail); it may still run.
	StopFailed StopOutcome = "failed"
)

// StopResult is the outcome for one app.
type StopResult struct {
	App     string
	PID     int // 0 when there was no pid to tell
	Outcome StopOutcome
	Detail  string // what happened, or why: "SIGTERM, gone after 12ms"
}

// String is the line reaper stop-apps prints: "hello: stopped (pid 4242, SIGTERM,
// gone after 12ms)".
func (r StopResult) String() string {
	var b strings.Builder
	b.WriteString(r.App + ": " + string(r.Outcome))
	var parts []string
	if r.PID > 0 {
		parts = append(parts, "pid "+strconv.Itoa(r.PID))
	}
	if r.Detail != "" {
		parts = append(parts, r.Detail)
	}
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
	return b.String()
}

// StopReport is what StopApps did.
type StopReport struct {
	// NodePIDs are the processes of the reaper nodes that run on the data
	// directory (holding its driver lock), when NodeRunning.
	NodeRunning bool
	NodePIDs    []int
	// Apps has one result per app found, sorted by app id.
	Apps []StopResult
}

// Failed reports whether an app could not be stopped.
func (r StopReport) Failed() bool {
	for _, a := range r.Apps {
		if a.Outcome == StopFailed {
			return true
		}
	}
	return false
}

// ErrNodeRunning: StopApps found a reaper node running on the data directory and
// was not forced. Such a node has adopted the apps, and would start them again on
// the next request.
var ErrNodeRunning = errors.New("process: a reaper node is running on this data directory")
