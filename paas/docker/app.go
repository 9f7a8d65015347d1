package docker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

// app is one app (a container on one engine) and what the driver knows of it.
type app struct {
	spec spec
	h    *host
	cid  string // a discovered app's container id: another container is another app

	mu       sync.Mutex // guards what follows
	v        *view      // the container as last seen; nil: not found
	gone     time.Time  // when the driver saw its container removed; zero while it is there, or if never seen
	ready    bool       // running, and ready since it last started
	boot     *run       // our start in progress, until ready
	watch    *run       // readiness wait of a container started from outside
	stopping chan struct{}
	dep      *paas.Deployment // never modified once set: replaced
	mem      int64            // memory in use when last measured, bytes
	memAt    time.Time
	lastBoot time.Duration // start call → ready, of our last start
	exit     *paas.Exit    // its last exit by itself once ready (a crash)
	changed  chan struct{} // closed and replaced on every change of v or ready
}

// run is one wait for an app's readiness: ours (a boot) or an adoption.
type run struct {
	at     time.Time
	cancel context.CancelFunc
	// prevStart is when the container last started before a boot of ours: a view
	// that started since and no longer runs is a boot that ended badly.
	prevStart time.Time
	// gate pauses the readiness probes while reaper does not wait for the app.
	gate probe.Gate
}

func newApp(s spec, h *host) *app {
	return &app{spec: s, h: h, changed: make(chan struct{})}
}

// state is what the platform wants, in paas words; a.mu must be held, a.v set.
func (a *app) state() paas.State {
	switch {
	case a.boot != nil:
		return paas.StateWantsToBeUp
	case a.v.running() && a.ready:
		return paas.StateShouldBeUp
	case a.v.running() || a.v.status == container.StateRestarting:
		return paas.StateWantsToBeUp
	}
	return paas.StateShouldBeDown
}

// ref is how the engine is asked for the app's container: by its configured name or
// id, or, for a discovered app, by its name (a container recreated under the same
// name is the same app if it still opts in).
func (a *app) ref() string { return a.spec.container }

// broadcast wakes whoever waits on a.changed; a.mu must be held.
func (a *app) broadcast() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// cancelRuns ends the readiness waits; a.mu must be held.
func (a *app) cancelRuns() {
	for _, r := range []*run{a.boot, a.watch} {
		if r != nil {
			r.cancel()
		}
	}
	a.boot, a.watch = nil, nil
}

// setView records what the engine now says of the container and what that changes:
// an exit, a start from outside. It returns what the caller must do once a.mu is
// released: log, and wait for the readiness of a container started from outside.
// a.mu must be held.
func (a *app) setView(nv *view, adopting bool) (ev viewEvent) {
	old := a.v
	a.v = nv
	defer a.broadcast()
	switch {
	case nv != nil:
		a.gone = time.Time{}
	case old != nil:
		a.gone = time.Now()
	}
	wasUp := old != nil && old.running()
	isUp := nv != nil && nv.running()
	restarted := wasUp && isUp && !nv.startedAt.Equal(old.startedAt) && !old.startedAt.IsZero()
	switch {
	case isUp && (!wasUp || restarted) && a.boot == nil:
		// Started without us (by hand, by its restart policy, with the engine) or
		// adopted: ready once its readiness passes.
		a.ready = false
		if a.watch != nil {
			a.watch.cancel()
			a.watch = nil
		}
		at := nv.startedAt
		if at.IsZero() || at.After(time.Now()) {
			at = time.Now()
		}
		a.dep = &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: at}
		ev.outside, ev.adopted = !adopting, adopting
	case wasUp && !isUp:
		ev = a.exited(nv)
	case a.boot != nil && !isUp && (nv == nil || (nv.status != container.StatePaused && !nv.startedAt.IsZero() && !nv.startedAt.Equal(a.boot.prevStart))):
		// Our start ran and ended (or the container went) before any read of it
		// saw it run.
		ev = a.exited(nv)
	}
	return ev
}

// exited records a container that stopped running; a.mu must be held.
func (a *app) exited(nv *view) (ev viewEvent) {
	wasReady, ours := a.ready, a.boot
	a.ready = false
	if a.watch != nil {
		a.watch.cancel()
		a.watch = nil
	}
	switch {
	case a.stopping != nil:
		// Ours: Stop records it.
	case ours != nil || !wasReady:
		cause := describeExit(nv) + " before it was ready"
		at := time.Now()
		if ours != nil {
			at = ours.at
			ours.cancel()
			a.boot = nil
		} else if a.dep != nil {
			at = a.dep.At
		}
		// Exited: it ran, so a start again may work (reaper retries it).
		a.dep = &paas.Deployment{State: paas.DeploymentFail, Action: "DEPLOY", At: at, Cause: cause, Exited: nv != nil}
		ev.failed = cause
	default:
		// A crash, or a stop by hand: down, its deployment still OK, so that the
		// next request wakes it.
		ev.stoppedOutside = describeExit(nv)
		a.exit = &paas.Exit{At: time.Now(), Status: ev.stoppedOutside}
	}
	return ev
}

// missing says why the app's container is not there, in a sentence that names it
// and is the cause of the app's Error (paas.CauseError): gone since the driver saw
// it go (reaper never removes nor renames a container: someone else did), or
// never seen. a.mu must be held.
func (a *app) missing() error {
	cause := fmt.Sprintf("container %q not found on engine %s (it does not exist, or has another name)", a.spec.container, a.h.name)
	if !a.gone.IsZero() {
		cause = fmt.Sprintf("container %q is gone from engine %s since %s: removed (or renamed) outside reaper",
			a.spec.container, a.h.name, a.gone.UTC().Format(time.RFC3339))
	}
	return &paas.CauseError{Cause: cause, Err: fmt.Errorf("docker: app %s: %s: %w", a.spec.id, cause, paas.ErrNotFound)}
}

// viewEvent is what setView saw, for the log and the readiness wait.
type viewEvent struct {
	outside, adopted bool   // it runs without a start of ours
	failed           string // it exited before it was ready: why
	stoppedOutside   string // it stopped (or was paused, or removed) without us
}

// describeExit says how a container stopped: "exited with status 3", "was
// OOM-killed", "was paused", "was removed".
func describeExit(v *view) string {
	switch {
	case v == nil:
		return "was removed"
	case v.status == container.StatePaused:
		return "was paused"
	case v.oomKilled:
		return fmt.Sprintf("was killed for lack of memory (OOM, status %d)", v.exitCode)
	case v.errText != "":
		return fmt.Sprintf("exited with status %d (%s)", v.exitCode, v.errText)
	}
	return fmt.Sprintf("exited with status %d", v.exitCode)
}

// cameBackWhy explains a container that runs without a start of ours, for the
// log. lost and back are the engine's last outage as the driver saw it (zero:
// none): a container with an always or unless-stopped policy that started
// during it, or just after the engine answered again, was started by its
// policy as the engine restarted.
func cameBackWhy(v *view, lost, back time.Time) string {
	const then = "; if a route manages it, it goes back to sleep after its grace period"
	switch v.restart {
	case container.RestartPolicyAlways, container.RestartPolicyUnlessStopped:
		if !lost.IsZero() && !back.IsZero() && v.startedAt.After(lost) && v.startedAt.Before(back.Add(restartedWithin)) {
			return fmt.Sprintf("brought back by its restart policy %q as the engine restarted (unreachable from %s to %s)%s",
				v.restart, lost.UTC().Format(time.TimeOnly), back.UTC().Format(time.TimeOnly), then)
		}
		return fmt.Sprintf("started by hand, or by its restart policy %q (the engine starts it again when the engine restarts)%s", v.restart, then)
	case container.RestartPolicyOnFailure:
		return "started by hand, or by its restart policy \"on-failure\" after a crash" + then
	}
	return "started from outside (docker start, compose, a deploy)" + then
}

// restartedWithin is how long after an engine answers again a container it
// starts is still taken for one its restart policy brought back.
const restartedWithin = 30 * time.Second
