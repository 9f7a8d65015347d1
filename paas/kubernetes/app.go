package kubernetes

import (
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/probe"
)

// ref names a workload.
type ref struct {
	kind, namespace, name string
}

func (r ref) String() string { return r.kind + " " + r.namespace + "/" + r.name }

// view is what the apiserver last said of a workload.
type view struct {
	replicas    int32 // spec.replicas
	generation  int64
	observed    int64 // status.observedGeneration
	ready       int32 // status.readyReplicas
	running     int32 // status.replicas
	annotations map[string]string
	// failed is the Deployment's ProgressDeadlineExceeded message for its
	// current generation; empty otherwise.
	failed string
}

// readyNow reports whether the workload counts a ready replica of its
// current generation.
func (v *view) readyNow() bool {
	return v.replicas > 0 && v.observed >= v.generation && v.ready >= 1
}

func deploymentView(d *appsv1.Deployment) *view {
	v := &view{replicas: replicas(d.Spec.Replicas), generation: d.Generation, observed: d.Status.ObservedGeneration,
		ready: d.Status.ReadyReplicas, running: d.Status.Replicas, annotations: d.Annotations}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" && v.observed >= v.generation {
			v.failed = c.Message
			if v.failed == "" {
				v.failed = "progress deadline exceeded"
			}
		}
	}
	return v
}

func statefulSetView(s *appsv1.StatefulSet) *view {
	return &view{replicas: replicas(s.Spec.Replicas), generation: s.Generation, observed: s.Status.ObservedGeneration,
		ready: s.Status.ReadyReplicas, running: s.Status.Replicas, annotations: s.Annotations}
}

// replicas is spec.replicas, whose default is 1.
func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// app is one declared or discovered app and what the driver knows of it.
type app struct {
	id       string
	ref      ref
	declared *AppConfig // nil for a discovered app

	mu        sync.Mutex
	v         *view     // nil: not found (yet, or deleted)
	deletedAt time.Time // when the informer saw it deleted
	dep       *paas.Deployment
	awake     int32 // the last spec.replicas ≥ 1 seen
	opMu      sync.Mutex
	ours      bool      // the WIP deployment is a wake of ours
	probed    bool      // the ready probe passed for the current wake
	probing   bool      // a ready probe loop runs
	bootAt    time.Time // when our wake began
	bootTime  time.Duration
	gate      probe.Gate
	probeStop func()
	changed   chan struct{} // closed at the next change of v; nil: nobody waits
}

// state is what the platform wants, in paas words; a.mu must be held, a.v set.
func (a *app) state() paas.State {
	switch {
	case a.v.replicas == 0:
		return paas.StateShouldBeDown
	case a.up():
		return paas.StateShouldBeUp
	}
	return paas.StateWantsToBeUp
}

// up reports whether the workload is ready (and its probe passed); a.mu must
// be held.
func (a *app) up() bool {
	return a.v != nil && a.v.readyNow() && (a.declared == nil || a.declared.Ready == nil || a.probed)
}

// change is what setView saw, for the log, the probe and the failed wake.
type change struct {
	outsideUp, outsideDown, ready, failed, deleted bool
}

// changedCh is closed at the next change of the view; a.mu must be held.
func (a *app) changedCh() chan struct{} {
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return a.changed
}

// setView records a new view of the workload (nil: deleted) and what it
// changes: a scale from outside, readiness, a failed wake; a.mu must be held.
// A scale of ours is told from one from outside by the deployment Start or
// Stop recorded before writing it.
func (a *app) setView(nv *view, now time.Time) (c change) {
	old := a.v
	a.v = nv
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
	if nv == nil {
		if old != nil {
			a.deletedAt, c.deleted = now, true
		}
		return c
	}
	a.deletedAt = time.Time{}
	if nv.replicas > 0 {
		a.awake = nv.replicas
	}
	wasUp := old != nil && old.replicas > 0
	wakingOurs := a.ours && a.dep != nil && a.dep.State == paas.DeploymentWIP
	sleepingOurs := a.dep != nil && (a.dep.Action == "UNDEPLOY" || a.dep.State == paas.DeploymentFail)
	switch {
	case nv.replicas > 0 && !wasUp && !wakingOurs:
		// Scaled up without us, or found awake when the driver started: up
		// once a replica is ready.
		c.outsideUp = old != nil
		a.ours, a.probed = false, false
		a.dep = &paas.Deployment{State: paas.DeploymentWIP, Action: "DEPLOY", At: now}
	case nv.replicas == 0 && wasUp && !sleepingOurs:
		// Deliberate (kubectl scale, a GitOps sync), not a crash: no
		// paas.Exit, which reaper would count as a failed boot soon after a
		// wake. Pods that crash are Kubernetes' to restart.
		c.outsideDown = true
		status := fmt.Sprintf("%s scaled from %d to 0 by someone else", a.ref, old.replicas)
		if a.dep != nil && a.dep.State == paas.DeploymentWIP {
			a.dep = &paas.Deployment{State: paas.DeploymentFail, Action: "DEPLOY", At: a.dep.At, Cause: status + " before it was ready"}
		}
		a.ours, a.probed = false, false
	}
	if nv.replicas > 0 && a.dep != nil && a.dep.State == paas.DeploymentWIP {
		switch {
		case nv.failed != "":
			a.dep = &paas.Deployment{State: paas.DeploymentFail, Action: "DEPLOY", At: a.dep.At, Cause: nv.failed}
			c.failed = true
		case a.up():
			a.dep = &paas.Deployment{State: paas.DeploymentOK, Action: "DEPLOY", At: a.dep.At}
			c.ready = true
			if a.ours {
				a.bootTime = now.Sub(a.bootAt)
			}
		}
	}
	return c
}

// observation is the app's observation; a.mu must be held, a.v set.
func (a *app) observation() paas.Observation {
	obs := paas.Observation{State: a.state(), Name: a.ref.String()}
	if a.dep != nil {
		d := *a.dep
		obs.Deployment = &d
	}
	return obs
}
