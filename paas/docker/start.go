package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/reapergw/reaper/paas"
)

// errRefused: the container no longer opted in; reaper does not touch it.
var errRefused = errors.New("docker: the container no longer opted in")

// Start wakes the app: its container (unpaused if paused, started otherwise).
// Its dependencies (depends_on, in the file or the reaper.depends_on label) are
// not the driver's: reaper's engine starts them first and keeps them up while
// the app is (paas.PolicyHint.DependsOn tells it the labels'). It returns once the start is under way, not when the app is ready
// (watchers learn that). Before anything is sent the container is read again: one
// that is gone, or that no longer carries reaper.enable=true (for a discovered
// app), is refused with an error wrapping paas.ErrStartFailed. It is idempotent: on
// an app that is starting or running it does nothing; on one being stopped it
// waits (bounded by ctx) for the stop to end first. An engine that cannot be
// reached gives paas.ErrUnavailable.
func (d *Driver) Start(ctx context.Context, pa paas.App) error {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return err
	}
	return d.start(ctx, a)
}

func (d *Driver) start(ctx context.Context, a *app) error {
	if a.spec.problem != "" {
		return fmt.Errorf("docker: start %s: its labels cannot be read (%s): %w", a.spec.id, a.spec.problem, paas.ErrStartFailed)
	}
	if err := d.awaitStop(ctx, a); err != nil {
		return err
	}
	a.mu.Lock()
	busy := a.boot != nil || (a.v != nil && a.v.running())
	a.mu.Unlock()
	if busy {
		return nil
	}
	v, err := d.recheck(ctx, a, "start")
	if err != nil {
		return err
	}
	return d.launch(ctx, a, v)
}

// launch records the start and sends it; a goroutine then waits for the app's
// readiness.
func (d *Driver) launch(ctx context.Context, a *app, v view) error {
	if !d.reserve() {
		return ErrClosed
	}
	bctx, cancel := context.WithCancel(d.base)
	b := &run{at: time.Now(), cancel: cancel, prevStart: v.startedAt}
	a.mu.Lock()
	if a.boot != nil || (a.v != nil && a.v.running()) {
		a.mu.Unlock() // another call started it meanwhile
		cancel()
		d.wg.Done()
		return nil
	}
	prev := a.dep
	a.boot, a.ready = b, false
	a.dep = &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: b.at}
	a.broadcast()
	a.mu.Unlock()
	d.notify(a.spec.id)

	if err := d.send(ctx, a, v); err != nil {
		d.wg.Done()
		return d.failBoot(a, b, prev, err)
	}
	go func() {
		defer d.wg.Done()
		defer cancel()
		if probed, ok := d.awaitReady(bctx, a, b.at, &b.gate); ok {
			d.markReady(a, b, probed)
		}
	}()
	return nil
}

// awaitRunning waits until the driver has seen the container run: only then does
// it know the container's address, which its probe may need.
func (d *Driver) awaitRunning(ctx context.Context, a *app) bool {
	for {
		a.mu.Lock()
		ok, ch := a.v != nil && a.v.running(), a.changed
		a.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// send asks the engine to run the container: unpause a paused one, start the others.
func (d *Driver) send(ctx context.Context, a *app, v view) error {
	what, call := "starting", a.h.eng.Start
	if v.status == container.StatePaused {
		what, call = "unpausing", a.h.eng.Unpause
	}
	err := call(ctx, v.id)
	if err != nil {
		return classify(a.h.name, what+" "+a.spec.container, err)
	}
	// Read at once, so that the readiness found by the probe meets a running
	// container without waiting for the engine's event.
	d.refresh(ctx, a, v.id)
	d.log.Info("container "+strings.TrimSuffix(what, "ing")+"ed", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container, "probe", a.probeText())
	return nil
}

// failBoot records a start that could not be sent. A
// passing failure (the engine unreachable) leaves the app as it was, so that the
// start is sent again; any other is a FAIL deployment. It returns the error to
// give the caller.
func (d *Driver) failBoot(a *app, b *run, prev *paas.Deployment, err error) error {
	a.mu.Lock()
	if a.boot != b {
		a.mu.Unlock()
		return err
	}
	b.cancel()
	a.boot = nil
	retry := paas.Retryable(err) || errors.Is(err, context.Canceled)
	if retry {
		a.dep = prev
	} else {
		a.dep = &paas.Deployment{State: paas.DeploymentFail, Action: "DEPLOY", At: b.at, Cause: err.Error()}
	}
	a.broadcast()
	a.mu.Unlock()
	d.notify(a.spec.id)
	if retry {
		d.log.Warn("container start not sent; it is asked again", "app", a.spec.id, "engine", a.h.name, "err", err)
		return fmt.Errorf("docker: start %s: %w", a.spec.id, err)
	}
	d.log.Error("container could not be started", "app", a.spec.id, "engine", a.h.name, "err", err)
	if errors.Is(err, paas.ErrStartFailed) {
		return err
	}
	return fmt.Errorf("docker: start %s: %w: %v", a.spec.id, paas.ErrStartFailed, err)
}

// watchReady waits, in the background, for the readiness of a container that runs
// without a start of ours.
func (d *Driver) watchReady(a *app) {
	if !d.reserve() {
		return
	}
	ctx, cancel := context.WithCancel(d.base)
	r := &run{at: time.Now(), cancel: cancel}
	a.mu.Lock()
	if a.watch != nil || a.boot != nil || a.ready || a.v == nil || !a.v.running() {
		a.mu.Unlock()
		cancel()
		d.wg.Done()
		return
	}
	a.watch = r
	a.mu.Unlock()
	go func() {
		defer d.wg.Done()
		defer cancel()
		if probed, ok := d.awaitReady(ctx, a, r.at, &r.gate); ok {
			d.markReady(a, r, probed)
		}
	}()
}

// markReady records that the app passed its readiness, for the run r (a boot of
// ours or a watch), probed as probed says; a run that was replaced meanwhile
// changes nothing.
func (d *Driver) markReady(a *app, r *run, probed string) {
	a.mu.Lock()
	if (a.boot != r && a.watch != r) || a.v == nil || !a.v.running() {
		a.mu.Unlock()
		return
	}
	ours := a.boot == r
	a.boot, a.watch, a.ready = nil, nil, true
	at := r.at
	if a.dep != nil {
		at = a.dep.At
	}
	a.dep = &paas.Deployment{State: paas.DeploymentOK, Action: "DEPLOY", At: at}
	took := time.Since(r.at)
	if ours {
		a.lastBoot = took
	}
	a.broadcast()
	a.mu.Unlock()
	// Watchers first: held requests wait for what they do next.
	d.notify(a.spec.id)
	if ours {
		d.log.Info("container ready", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container, "boot", took.Round(time.Millisecond), "probe", probed)
	} else {
		d.log.Info("container ready (started from outside)", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container, "probe", probed)
	}
}

// recheck reads the container again before a start or a stop (what): it must
// still exist and, for a discovered app, still opt in under the same app id.
func (d *Driver) recheck(ctx context.Context, a *app, what string) (view, error) {
	v, err := a.h.eng.Inspect(ctx, a.ref())
	switch {
	case errors.Is(err, errGone):
		return view{}, fmt.Errorf("docker: %s %s: container %q no longer exists on engine %s (removed by hand?): %w",
			what, a.spec.id, a.spec.container, a.h.name, paas.ErrStartFailed)
	case err != nil:
		return view{}, fmt.Errorf("docker: %s %s: %w", what, a.spec.id, classify(a.h.name, "reading "+a.spec.container, err))
	case a.spec.labels && (!optedIn(v.labels) || labelAppID(v.name, v.labels) != a.spec.id):
		return view{}, fmt.Errorf("docker: %s %s: container %q no longer carries %s=true and %s=%s: reaper does not touch it: %w",
			what, a.spec.id, v.name, LabelEnable, LabelAppID, a.spec.id, errRefused)
	}
	return v, nil
}
