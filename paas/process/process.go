// Package process is reaper's embedded default PaaS driver: it runs each app of
// paas.apps[] as a local process and maps that world onto the Clever Cloud vocabulary
// of package paas.
//
//   - not running: SHOULD_BE_DOWN, with the last deployment (nil if this driver never
//     started it);
//   - started, readiness probe not passing yet: WANTS_TO_BE_UP, deployment WIP DEPLOY;
//   - ready: SHOULD_BE_UP, deployment OK DEPLOY (At: when it was started);
//   - exited before it was ready, or could not be executed: SHOULD_BE_DOWN, deployment
//     FAIL DEPLOY with the cause (exit status, end of its log), marked Exited when
//     it ran (reaper starts it again, with a back-off);
//   - exited after it was ready (a crash, a kill by hand): SHOULD_BE_DOWN, deployment
//     still OK, so the next request wakes it; Observation.Exit says how it ended;
//   - stopped by Stop: SHOULD_BE_DOWN once its whole process group is gone,
//     deployment OK UNDEPLOY (At: when the stop began).
//
// Each app runs in its own process group, which stop signals (and SIGKILL after the
// stop timeout) reach as a whole. Apps outlive reaper: a pid file under
// <data_dir>/process records each running app, and the next driver adopts it after
// checking the process's start time, so a restart of reaper costs awake apps nothing.
// An app whose pid file was lost is adopted if its REAPER_APP marker proves it is the
// app (MarkerEnv). StopApps stops the apps a driver left running, and only those.
// Readiness is probed while an app starts, every 2 ms in its first second, then less
// and less often up to every ready.interval (package probe), and pushed to watchers
// (paas.Watcher) the moment it passes; exits are learnt from pidfds, never by polling.
//
// The driver needs Linux 5.3 or later (pidfd_open); elsewhere New returns an error.
package process

import (
	"errors"
	"log/slog"
)

// Options configure a Driver.
type Options struct {
	// DataDir is reaper's node.data_dir: pid files go to DataDir/process, default
	// logs to DataDir/logs. Required.
	DataDir string
	// Apps are the apps this driver runs, validated again by New.
	Apps []AppConfig
	// Logger receives the driver's events; nil discards them.
	Logger *slog.Logger
}

// Errors of the driver, besides those of package paas (paas.ErrNotFound for an app
// that is not configured, paas.ErrStartFailed for an app that cannot be executed).
var (
	// ErrClosed: the driver was closed; it starts and stops nothing any more.
	ErrClosed = errors.New("process: driver closed")
	// ErrUnsupported: this system lacks what the driver needs (Linux pidfds).
	ErrUnsupported = errors.New("process: local processes are not supported on this system (Linux 5.3 or later is needed)")
)
