package kubernetes

import (
	"context"
	"errors"
	"time"

	"github.com/reapergw/reaper/paas"
)

// checkHPAs warns of each HorizontalPodAutoscaler (autoscaling/v2) that
// targets one of the apps' workloads with minReplicas ≥ 1 (its default): off
// while the workload sleeps, it owns the replica count again once reaper
// wakes it (docs/kubernetes.md, "HorizontalPodAutoscaler").
// Listing HPAs is an optional right: refused (403), the check is skipped and
// says so once.
func (d *Driver) checkHPAs(ctx context.Context, apps []*app) {
	byNS := map[string][]*app{}
	for _, a := range apps {
		byNS[a.ref.namespace] = append(byNS[a.ref.namespace], a)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for ns, as := range byNS {
		for _, w := range d.hpaWarnings(ctx, ns, as) {
			d.warnOnce("hpa "+w.hpa, "kubernetes: a HorizontalPodAutoscaler with minReplicas ≥ 1 targets this workload: once reaper wakes it, the HPA sets its replica count (at least its minReplicas), not reaper; delete the HPA to let reaper own replicas (docs/kubernetes.md)",
				"app", w.app, "workload", w.workload, "hpa", w.hpa, "min_replicas", w.min)
		}
	}
}

// hpaWarning is an HPA that would undo a sleep.
type hpaWarning struct {
	app, workload, hpa string
	min                int32
}

// hpaWarnings lists the HPAs of the namespace that target the apps with
// minReplicas ≥ 1; nil when listing them is refused or fails (logged).
func (d *Driver) hpaWarnings(ctx context.Context, ns string, apps []*app) []hpaWarning {
	d.mu.Lock()
	skipped := d.hpaSkipped
	d.mu.Unlock()
	if skipped {
		return nil
	}
	list, err := d.kc.listHPAs(ctx, ns)
	if err != nil {
		err = classify(err, "list", "horizontalpodautoscalers in namespace "+ns)
		if errors.Is(err, paas.ErrAuth) {
			d.mu.Lock()
			d.hpaSkipped = true
			d.mu.Unlock()
			d.log.Info("kubernetes: the HPA check is skipped: listing HorizontalPodAutoscalers is refused (an optional right: add list on horizontalpodautoscalers to the Role to have it)", "namespace", ns)
			return nil
		}
		d.log.Warn("kubernetes: could not check for HorizontalPodAutoscalers", "namespace", ns, "err", err)
		return nil
	}
	var out []hpaWarning
	for _, h := range list.Items {
		min := int32(1)
		if h.Spec.MinReplicas != nil {
			min = *h.Spec.MinReplicas
		}
		t := h.Spec.ScaleTargetRef
		for _, a := range apps {
			if min >= 1 && t.Kind == a.ref.kind && t.Name == a.ref.name {
				out = append(out, hpaWarning{app: a.id, workload: a.ref.String(), hpa: ns + "/" + h.Name, min: min})
			}
		}
	}
	return out
}
