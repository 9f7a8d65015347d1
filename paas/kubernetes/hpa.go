package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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

// checkTimeout bounds reaper check's look at the cluster: a cluster that is
// not reachable from where the file is checked must not hold the check.
const checkTimeout = 5 * time.Second

// CheckHPAs is `reaper check`'s HPA check: it asks the cluster of opts (the
// same kubeconfig as serve) for the HorizontalPodAutoscalers that target an
// app's workload with minReplicas ≥ 1 (a workload of paas.kubernetes.apps, or
// one opted in by annotation in a watched namespace), within a few seconds.
// It returns warnings, one line each; a cluster it cannot reach, or that
// refuses the list, is a warning too, never an error: the check of the file
// does not depend on the cluster.
func CheckHPAs(ctx context.Context, opts Options) []string {
	rc, err := restConfig(opts)
	if err != nil {
		return []string{"the HPA check is skipped: " + err.Error()}
	}
	rc.Timeout = checkTimeout
	kc, err := newClient(rc)
	if err != nil {
		return []string{"the HPA check is skipped: kubernetes: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	cfg := opts.Config
	declared := map[ref]string{}
	nss := map[string]bool{}
	for _, ac := range cfg.Apps {
		ac = ac.resolved(cfg.Namespaces)
		declared[ref{ac.Kind, ac.Namespace, ac.Name}] = ac.ID
		nss[ac.Namespace] = true
	}
	if cfg.AnnotationsOn() {
		for _, ns := range cfg.Namespaces {
			nss[ns] = true
		}
		if len(cfg.Namespaces) == 0 {
			nss = map[string]bool{"": true} // every namespace
		}
	}
	var out []string
	for _, ns := range slices.Sorted(maps.Keys(nss)) {
		ws, err := checkNamespace(ctx, kc, ns, declared, cfg.AnnotationsOn())
		if err != nil {
			return append(out, "the HPA check is incomplete: "+err.Error())
		}
		for _, w := range ws {
			out = append(out, fmt.Sprintf("app %s: the HorizontalPodAutoscaler %s (minReplicas %d) targets its workload %s: once reaper wakes it, the HPA sets its replica count, not reaper; delete the HPA to let reaper own replicas (docs/kubernetes.md)", w.app, w.hpa, w.min, w.workload))
		}
	}
	return out
}

// checkNamespace lists the HPAs of one namespace ("": all) and returns those
// with minReplicas ≥ 1 whose target is an app: declared, or opted in by
// annotation when discovery is on.
func checkNamespace(ctx context.Context, kc *client, ns string, declared map[ref]string, discover bool) ([]hpaWarning, error) {
	where := "in namespace " + ns
	if ns == "" {
		where = "in every namespace"
	}
	list, err := kc.listHPAs(ctx, ns)
	if err != nil {
		return nil, checkErr(classify(err, "list", "horizontalpodautoscalers "+where))
	}
	var out []hpaWarning
	for _, h := range list.Items {
		min := int32(1)
		if h.Spec.MinReplicas != nil {
			min = *h.Spec.MinReplicas
		}
		t := h.Spec.ScaleTargetRef
		if min < 1 || (t.Kind != KindDeployment && t.Kind != KindStatefulSet) {
			continue
		}
		r := ref{t.Kind, h.Namespace, t.Name}
		id, ok := declared[r]
		if !ok && discover {
			if id, ok, err = annotatedApp(ctx, kc, r); err != nil {
				return out, checkErr(classify(err, "get", r.String()))
			}
		}
		if ok {
			out = append(out, hpaWarning{app: id, workload: r.String(), hpa: h.Namespace + "/" + h.Name, min: min})
		}
	}
	return out, nil
}

// annotatedApp reads the workload's annotations: its app id when it is opted
// in; false when it is not, or does not exist.
func annotatedApp(ctx context.Context, kc *client, r ref) (string, bool, error) {
	var o interface {
		runtime.Object
		metav1.Object
	} = &appsv1.Deployment{}
	if r.kind == KindStatefulSet {
		o = &appsv1.StatefulSet{}
	}
	err := kc.get(ctx, r, o)
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil || !enabled(o.GetAnnotations()) {
		return "", false, err
	}
	id, err := appID(o.GetAnnotations(), r.name)
	return id, err == nil, nil
}

// checkErr says what an error of the check means for its reader.
func checkErr(err error) error {
	if errors.Is(err, paas.ErrAuth) {
		return fmt.Errorf("%w (the HPA check needs list on horizontalpodautoscalers, an optional right)", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the cluster did not answer within %s: %w", checkTimeout, err)
	}
	return err
}
