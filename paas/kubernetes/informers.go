package kubernetes

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// informer follows one kind in one namespace ("" for all).
type informer struct {
	kind, namespace string
	inf             cache.SharedIndexInformer
	// reg is the driver's handler: synced once the first listing was
	// delivered to it, not only stored (Observe needs the apps it makes).
	reg cache.ResourceEventHandlerRegistration

	mu  sync.Mutex
	err error // the last list or watch error, until a list succeeds
}

// where says which workloads it follows, for messages.
func (i *informer) where() string {
	if i.namespace == "" {
		return i.kind + "s in every namespace"
	}
	return i.kind + "s in namespace " + i.namespace
}

// synced reports whether the first listing was delivered to the driver.
func (i *informer) synced() bool { return i.reg != nil && i.reg.HasSynced() }

// lastErr is the informer's last error while it has not listed.
func (i *informer) lastErr() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.err
}

// newInformers makes an informer per kind and watched namespace, each
// calling d.onEvent in the order of its events.
func (d *Driver) newInformers(namespaces []string) {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		for _, kind := range []string{KindDeployment, KindStatefulSet} {
			i := &informer{kind: kind, namespace: ns}
			i.inf = cache.NewSharedIndexInformer(d.listWatch(kind, ns, i), example(kind), 0, cache.Indexers{})
			_ = i.inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
				i.mu.Lock()
				first := i.err == nil
				i.err = classify(err, "list and watch", i.where())
				i.mu.Unlock()
				if first {
					d.log.Warn("kubernetes: cannot follow workloads (retried with a back-off)", "what", i.where(), "err", i.err)
				}
			})
			i.reg, _ = i.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(o any) { d.onObject(kind, o) },
				UpdateFunc: func(_, o any) { d.onObject(kind, o) },
				DeleteFunc: func(o any) { d.onDeleted(kind, o) },
			})
			d.informers = append(d.informers, i)
		}
	}
}

func example(kind string) runtime.Object {
	if kind == KindDeployment {
		return &appsv1.Deployment{}
	}
	return &appsv1.StatefulSet{}
}

// listWatch lists and watches one kind in one namespace; a list that works
// clears the informer's error.
func (d *Driver) listWatch(kind, ns string, i *informer) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := d.kc.list(ctx, kind, ns, o)
			if err == nil {
				i.mu.Lock()
				i.err = nil
				i.mu.Unlock()
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return d.kc.watch(ctx, kind, ns, o)
		},
	}
}

// runInformers runs the informers until Close, and waits (bounded) for their
// first listing, so that Observe answers at once for the workloads that exist.
func (d *Driver) runInformers(wait time.Duration) {
	for _, i := range d.informers {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			i.inf.RunWithContext(d.base)
		}()
	}
	ctx, cancel := context.WithTimeout(d.base, wait)
	defer cancel()
	for _, i := range d.informers {
		if !cache.WaitForCacheSync(ctx.Done(), i.synced) {
			d.log.Warn("kubernetes: workloads not listed yet: their apps are unavailable until they are", "what", i.where(), "err", i.lastErr())
		}
	}
}

// informerOf returns the informer that follows the workload.
func (d *Driver) informerOf(r ref) *informer {
	for _, i := range d.informers {
		if i.kind == r.kind && (i.namespace == "" || i.namespace == r.namespace) {
			return i
		}
	}
	return nil
}

// notListed says why a workload cannot be observed yet: its informer has not
// listed; nil when it has.
func (d *Driver) notListed(r ref) error {
	i := d.informerOf(r)
	if i == nil {
		return fmt.Errorf("kubernetes: %s: namespace %s is not watched (paas.kubernetes.namespaces): %w", r, r.namespace, errNotWatched)
	}
	if i.synced() {
		return nil
	}
	if err := i.lastErr(); err != nil {
		return fmt.Errorf("kubernetes: %s: %w", r, err)
	}
	return fmt.Errorf("kubernetes: %s: %s not listed yet: %w", r, i.where(), errUnavailable)
}

// onObject handles an added or updated workload.
func (d *Driver) onObject(kind string, o any) {
	var r ref
	var v *view
	switch w := o.(type) {
	case *appsv1.Deployment:
		r, v = ref{KindDeployment, w.Namespace, w.Name}, deploymentView(w)
	case *appsv1.StatefulSet:
		r, v = ref{KindStatefulSet, w.Namespace, w.Name}, statefulSetView(w)
	default:
		return
	}
	d.record(r, v)
}

// onDeleted handles a deleted workload (or the tombstone of one deleted while
// the watch was down).
func (d *Driver) onDeleted(kind string, o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	m, ok := o.(metav1.Object)
	if !ok {
		return
	}
	d.record(ref{kind, m.GetNamespace(), m.GetName()}, nil)
}
