package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reapergw/reaper/paas"
)

// Stop puts the app to sleep with its stop method (stop, pause or kill), and
// returns once the container no longer runs (a stop waits for the container's
// exit, at most its stop_timeout before the engine kills it), or when ctx ends.
// Its dependencies are reaper's engine's to put to sleep, after it. Before
// anything is sent the container is read again: a discovered app's container
// that no longer opted in is refused with an error wrapping
// paas.ErrNotShutdownable; one that is gone is stopped already. It is
// idempotent. An engine that cannot be reached gives paas.ErrUnavailable.
func (d *Driver) Stop(ctx context.Context, pa paas.App) error {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return err
	}
	return d.stop(ctx, a)
}

func (d *Driver) stop(ctx context.Context, a *app) error {
	if a.spec.problem != "" {
		return fmt.Errorf("docker: stop %s: its labels cannot be read (%s): %w", a.spec.id, a.spec.problem, paas.ErrNotShutdownable)
	}
	if err := d.awaitStop(ctx, a); err != nil {
		return err
	}
	a.mu.Lock()
	if a.stopping != nil || (a.boot == nil && (a.v == nil || !a.v.running())) {
		a.mu.Unlock()
		return d.awaitStop(ctx, a) // stopped already, or by another call
	}
	a.cancelRuns()
	done := make(chan struct{})
	a.stopping = done
	a.mu.Unlock()
	at := time.Now()
	id, err := d.sendStop(ctx, a)
	if err == nil && id != "" {
		// Read again while still stopping (an exit of ours), so that Observe
		// says down as soon as Stop returns.
		d.refresh(ctx, a, id)
	}
	a.mu.Lock()
	if err == nil {
		a.ready = false
		a.dep = &paas.Deployment{State: paas.DeploymentOK, Action: "UNDEPLOY", At: at}
		a.broadcast()
	}
	a.stopping = nil
	a.mu.Unlock()
	close(done)
	d.notify(a.spec.id)
	if err != nil {
		return err
	}
	d.log.Info("container put to sleep", "app", a.spec.id, "engine", a.h.name, "container", a.spec.container, "method", a.spec.method, "took", since(at))
	return nil
}

// sendStop re-reads the container and sends the stop method, if it runs. It
// returns the container's id ("" when it is gone).
func (d *Driver) sendStop(ctx context.Context, a *app) (string, error) {
	v, err := d.recheck(ctx, a, "stop")
	switch {
	case errors.Is(err, errRefused):
		return "", fmt.Errorf("%w: %w", err, paas.ErrNotShutdownable)
	case errors.Is(err, paas.ErrStartFailed):
		return "", nil // gone: nothing runs
	case err != nil:
		return "", err
	case !v.running():
		return v.id, nil
	}
	switch a.spec.method {
	case MethodPause:
		err = a.h.eng.Pause(ctx, v.id)
	case MethodKill:
		if err = a.h.eng.Kill(ctx, v.id); err == nil {
			err = d.awaitExit(ctx, a, v.id)
		}
	default:
		err = a.h.eng.Stop(ctx, v.id, a.spec.timeout)
	}
	if err != nil {
		return "", fmt.Errorf("docker: stop %s: %w", a.spec.id, classify(a.h.name, a.spec.method+" "+a.spec.container, err))
	}
	return v.id, nil
}

// killWait bounds how long a killed container may take to be seen exited.
const killWait = 5 * time.Second

// awaitExit waits until the engine says the container no longer runs: a kill
// returns once the signal is sent, not once the container is gone.
func (d *Driver) awaitExit(ctx context.Context, a *app, id string) error {
	ctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	pause := 2 * time.Millisecond
	for {
		v, err := a.h.eng.Inspect(ctx, id)
		if errors.Is(err, errGone) || (err == nil && !v.running()) {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("docker: kill %s: still running: %w", a.spec.id, paas.ErrUnavailable)
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// awaitStop waits for a stop in progress to end, bounded by ctx.
func (d *Driver) awaitStop(ctx context.Context, a *app) error {
	a.mu.Lock()
	ch := a.stopping
	a.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("docker: %s: waiting for its stop: %w", a.spec.id, ctx.Err())
	case <-d.base.Done():
		return ErrClosed
	}
}
