package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"

	"github.com/reapergw/reaper/paas"
)

// echoWait bounds how long Start and Stop wait for the informer to deliver
// the workload they scaled (milliseconds, usually), so that an Observe right
// after them sees the new count.
const echoWait = 5 * time.Second

// Start scales the workload from 0 to its awake count (see the package doc)
// through the scale subresource, and returns once the apiserver accepted it.
// A workload already scaled up is left as it is. Concurrent Starts of one app
// make one scale.
func (d *Driver) Start(ctx context.Context, pa paas.App) error {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	for attempt := 0; ; attempt++ {
		err = d.scaleUp(ctx, a)
		if !errors.Is(err, errConflict) || attempt == 2 {
			return err
		}
	}
}

// scaleUp is one read and write of a Start; a.opMu must be held.
func (d *Driver) scaleUp(ctx context.Context, a *app) error {
	sc, err := d.getScale(ctx, a.ref)
	if err != nil {
		return fmt.Errorf("kubernetes: app %s: %w", a.id, err)
	}
	if sc.Spec.Replicas > 0 {
		return nil // awake, or waking
	}
	n, from := a.target()
	if from == "" {
		d.log.Warn("kubernetes: no awake replica count known (no reaper.replicas annotation, no replicas in the file, not seen awake since reaper started): waking to 1", "app", a.id, "workload", a.ref.String())
	}
	now := time.Now()
	a.mu.Lock()
	prev, prevOurs := a.dep, a.ours
	a.dep = &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: now}
	a.ours, a.probed, a.bootAt = true, false, now
	a.mu.Unlock()
	sc.Spec.Replicas = n
	if _, err = d.updateScale(ctx, a.ref, sc); err != nil {
		a.mu.Lock()
		a.dep, a.ours = prev, prevOurs
		a.mu.Unlock()
		return fmt.Errorf("kubernetes: app %s: %w", a.id, err)
	}
	d.log.Info("kubernetes: waking: scaled up", "app", a.id, "workload", a.ref.String(), "replicas", n, "from", from)
	d.notify(a.id)
	d.waitSeen(ctx, a, func(v *view) bool { return v.replicas > 0 })
	return nil
}

// target is the count a wake scales to and where it comes from ("" for the
// default of 1). An unusable reaper.replicas annotation is skipped, with a
// warning.
func (a *app) target() (int32, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.v != nil {
		if n, err := replicasOf(a.v.annotations); err == nil && n > 0 {
			return n, "annotation " + AnnotationReplicas
		}
	}
	if a.declared != nil && a.declared.Replicas > 0 {
		return a.declared.Replicas, "paas.kubernetes.apps[].replicas"
	}
	if a.awake > 0 {
		return a.awake, "the count it had before it slept"
	}
	return 1, ""
}

// Stop scales the workload to 0 through the scale subresource, remembering
// its count for the next wake, and returns once the apiserver accepted it. A
// workload at 0 is left as it is.
func (d *Driver) Stop(ctx context.Context, pa paas.App) error {
	a, err := d.lookup(pa.ID)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	for attempt := 0; ; attempt++ {
		err = d.scaleDown(ctx, a, &paas.Deployment{State: paas.DeploymentOK, Action: "UNDEPLOY", At: time.Now()})
		if !errors.Is(err, errConflict) || attempt == 2 {
			return err
		}
	}
}

// scaleDown is one read and write of a scale to 0, recording dep as the last
// deployment; a.opMu must be held.
func (d *Driver) scaleDown(ctx context.Context, a *app, dep *paas.Deployment) error {
	sc, err := d.getScale(ctx, a.ref)
	if err != nil {
		return fmt.Errorf("kubernetes: app %s: %w", a.id, err)
	}
	if sc.Spec.Replicas == 0 {
		return nil
	}
	a.mu.Lock()
	prev, prevOurs := a.dep, a.ours
	a.awake, a.dep, a.ours, a.probed = sc.Spec.Replicas, dep, false, false
	if a.probeStop != nil {
		a.probeStop()
		a.probeStop, a.probing = nil, false
	}
	a.mu.Unlock()
	was := sc.Spec.Replicas
	sc.Spec.Replicas = 0
	if _, err = d.updateScale(ctx, a.ref, sc); err != nil {
		a.mu.Lock()
		a.dep, a.ours = prev, prevOurs
		a.mu.Unlock()
		return fmt.Errorf("kubernetes: app %s: %w", a.id, err)
	}
	d.log.Info("kubernetes: asleep: scaled to 0", "app", a.id, "workload", a.ref.String(), "was", was)
	d.notify(a.id)
	d.waitSeen(ctx, a, func(v *view) bool { return v.replicas == 0 })
	return nil
}

// scaleBack scales a failed wake of ours back to 0, in the background: its
// Pods must not crash-loop for nothing. Its FAIL deployment is kept.
func (d *Driver) scaleBack(a *app) {
	if !d.reserve() {
		return
	}
	go func() {
		defer d.wg.Done()
		a.opMu.Lock()
		defer a.opMu.Unlock()
		a.mu.Lock()
		dep := a.dep
		a.mu.Unlock()
		ctx, cancel := context.WithTimeout(d.base, 30*time.Second)
		defer cancel()
		if err := d.scaleDown(ctx, a, dep); err != nil {
			d.log.Warn("kubernetes: could not scale a failed wake back to 0", "app", a.id, "err", err)
		}
	}()
}

// reserve counts a goroutine that Close must wait for; false once closed.
func (d *Driver) reserve() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.wg.Add(1)
	return true
}

// waitSeen waits (bounded by echoWait and ctx) until the informer delivered a
// view of the app for which ok holds.
func (d *Driver) waitSeen(ctx context.Context, a *app, ok func(*view) bool) {
	t := time.NewTimer(echoWait)
	defer t.Stop()
	for {
		a.mu.Lock()
		seen, ch := a.v != nil && ok(a.v), a.changedCh()
		a.mu.Unlock()
		if seen {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-d.base.Done():
			return
		}
	}
}

// getScale reads the workload's scale subresource.
func (d *Driver) getScale(ctx context.Context, r ref) (*autoscalingv1.Scale, error) {
	sc, err := d.kc.getScale(ctx, r)
	if err != nil {
		return nil, classify(err, "get", scaleOf(r))
	}
	return sc, nil
}

// updateScale writes the scale subresource, with the resourceVersion it was
// read at: a change made meanwhile is errConflict, and read again.
func (d *Driver) updateScale(ctx context.Context, r ref, sc *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	out, err := d.kc.updateScale(ctx, r, sc)
	if err != nil {
		return nil, classify(err, "update", scaleOf(r))
	}
	return out, nil
}

// scaleOf names a workload's scale subresource in messages.
func scaleOf(r ref) string {
	res := "deployments"
	if r.kind == KindStatefulSet {
		res = "statefulsets"
	}
	return fmt.Sprintf("%s/scale %q in namespace %s", res, r.name, r.namespace)
}
